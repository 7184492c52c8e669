"""Drive the real app: a streamlit server on loopback and Debian's chromium (tests and benchmarks)."""
