"""``models`` (the registered models, as a table or JSON) and ``export`` (a model's
self-describing checkpoint, which ``--checkpoint`` reads back)."""

from __future__ import annotations

import argparse
import json

from attention_atlas.cli.common import CliError


def add_models_parser(sub) -> None:
    p = sub.add_parser("models", help="list the bundled models")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    from attention_atlas.models.registry import available

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


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="write a model's self-describing checkpoint")
    p.add_argument("--model", required=True, help="a registry id")
    p.add_argument("--out", required=True, help="the checkpoint file to write")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from attention_atlas.models.registry import load

    adapter = load(args.model)
    if not hasattr(adapter, "export"):
        raise CliError(f"export: {args.model} has no checkpoint to export")
    path = adapter.export(args.out)
    print(f"wrote {path}")
    return 0
