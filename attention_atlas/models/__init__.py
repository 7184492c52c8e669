"""Attention math, model definitions, adapters and their registry (torch; never streamlit)."""
