"""Serving many users from one process: plain Python, no Streamlit and no torch at import.

- ``launcher``: the one way to start ``streamlit run`` on the app (``atlas serve``, ``make run``,
  ``deploy/``, the test harness and the benches), with the server options in one place;
- ``process``: what the server process tunes (malloc arenas, oneDNN's kernel cache) and how
  memory goes back to the system;
- ``resident``: at most ``ATLAS_MAX_MODELS`` models loaded, least recently used dropped;
- ``lanes``: first-come-first-served slots with visible positions (model runs, trainings);
- ``jobs``: one background job type (start, poll a snapshot, pause, stop, idle timeout);
- ``janitor``: after a quiet spell, caches dropped and memory handed back.
"""
