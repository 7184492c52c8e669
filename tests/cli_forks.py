"""A fork server for the command-line tests: ``python cli.py ARGS`` without paying for torch's import
in every process (about 3 s of CPU each, 5 to 8 s on a loaded machine; the CLI tier starts dozens).

Run as ``python tests/cli_forks.py`` in the repository root. It imports what every command imports
(torch, transformers, the CLI), then reads one request per line on stdin, JSON
``{"args": [...], "out": PATH, "err": PATH, "env": {...}}``, and for each forks a child that is a
real process of its own: the test's environment as it is now (as a subprocess inherits it; what is
read at import time was read by the server), stdin from /dev/null, stdout and stderr the files ``out`` and ``err`` (file descriptors
1 and 2, so whatever any library writes lands there), ``sys.argv`` as a command line sets it, and
``cli.py`` run as ``__main__``; it exits as Python exits (``sys.exit``'s code, atexit handlers, a
traceback and 1 for an uncaught exception). The server answers ``{"pid": N}``, then waits for the
child and answers ``{"code": C}``. Nothing in the server runs a model: the child starts from a clean
state, with no thread started (fork copies only the forking thread).
"""

from __future__ import annotations

import json
import os
import runpy
import sys


def preload() -> None:
    import torch  # noqa: F401
    import transformers  # noqa: F401
    from transformers.models.bert import modeling_bert  # noqa: F401
    from transformers.models.gpt2 import modeling_gpt2  # noqa: F401
    from transformers.models.llama import modeling_llama  # noqa: F401

    import attention_atlas.cli
    import attention_atlas.models.analysis.contributions
    import attention_atlas.models.analysis.generate
    import attention_atlas.models.analysis.lens
    import attention_atlas.models.registry
    import attention_atlas.models.uploads
    import attention_atlas.viz_core.figures  # noqa: F401


def child(args: list[str], out: str, err: str, env: dict[str, str]) -> None:
    """The forked process: becomes ``python cli.py ARGS`` with its output in ``out`` and ``err``."""
    os.environ.clear()
    os.environ.update(env)
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY), (2, err, os.O_WRONLY)):
        new = os.open(path, flags)
        os.dup2(new, fd)
        os.close(new)
    sys.argv = ["cli.py", *args]
    runpy.run_path("cli.py", run_name="__main__")
    raise SystemExit(0)  # cli.py returned without sys.exit


def serve() -> None:
    answer = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        answer.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(request["args"], request["out"], request["err"], request["env"])
        print(json.dumps({"pid": pid}), file=answer, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), file=answer, flush=True)


if __name__ == "__main__":
    preload()
    serve()
