"""Attention Atlas on the command line.

    python cli.py models [--json]

Errors go to stderr as one line, with a non-zero exit; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own messages, one line, exit 2
        raise CliError(f"{self.prog}: {message}")


def cmd_models(args: argparse.Namespace) -> int:
    from models.registry import available

    rows = [{"id": m.id, "family": m.family, "description": m.description} for m in available()]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print("no models registered yet")
    else:
        width = max(len(r["id"]) for r in rows)
        for r in rows:
            print(f"{r['id']:<{width}}  {r['family']:<12}  {r['description']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cli.py", description="See attention from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("models", help="list the bundled models")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except CliError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, IndexError, OSError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
