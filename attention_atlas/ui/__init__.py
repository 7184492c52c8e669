"""Streamlit glue: the pieces every page shares, cached model calls, the live model and head views."""
