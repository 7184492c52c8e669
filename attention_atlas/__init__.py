"""Attention Atlas: see attention at work, in a dashboard (``atlas serve``), on the command line
(``atlas extract|figure|export|train|corpus``) or from Python.

Importing the package costs nothing: each room imports its own heavy libraries
(``models`` torch, ``viz_core`` plotly, ``ui`` and the pages streamlit).
"""

__version__ = "0.2.0"
