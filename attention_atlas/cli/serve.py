"""``serve``: the dashboard (Streamlit) in the foreground, through ``serve.launcher``."""

from __future__ import annotations

import argparse

from attention_atlas.cli.common import CliError


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="start the dashboard (Streamlit) in the foreground")
    p.add_argument("--port", type=int, default=8501, help="the port to listen on (8501)")
    p.add_argument("--address", help="the address to listen on (default: every interface)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from attention_atlas.serve.launcher import run_forever

    if not 0 < args.port < 65536:
        raise CliError(f"serve: --port {args.port} is not a port (1–65535)")
    return run_forever(args.port, args.address)
