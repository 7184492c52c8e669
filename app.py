"""``streamlit run app.py`` from the checkout's root: the whole app, as ``atlas serve`` serves it.

The app itself is the package's ``attention_atlas/app.py`` (what a wheel ships and ``atlas serve``
runs). Its import tunes the process once, before torch loads (malloc arenas, oneDNN's kernel cache,
OpenMP's sleeping threads: ``serve/process.py``); ``.streamlit/config.toml`` beside this file holds
the server's options, the same as ``serve/launcher.py``'s ``OPTIONS`` (a unit test keeps them equal).
"""

from attention_atlas.app import main

main()
