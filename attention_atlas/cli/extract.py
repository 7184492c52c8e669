"""``extract``: the attention weights of one input, of a file of inputs (JSON Lines), or one head's
full weights at any length up to the context; printed as a table, as JSON or saved as ``.npz``."""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

import numpy as np

from attention_atlas.cli.common import (
    ANY_MODEL,
    CliError,
    add_output,
    add_source,
    check_head,
    check_out,
    input_text,
    json_text,
    load_adapter,
    print_json,
    print_notices,
    save_npz,
)


def add_parser(sub) -> None:
    p = sub.add_parser("extract", help="attention weights of one input or a file of inputs")
    add_source(p, ANY_MODEL)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the input, e.g. an upper line 两个黄鹂鸣翠柳")
    what.add_argument("--input-file", help="one input a line: source or source<TAB>target")
    what.add_argument(
        "--text-file", help="one input: the whole UTF-8 file (long context, with --layer/--head)"
    )
    p.add_argument("--target", help="force-decode this output (teacher forcing)")
    p.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy)")
    p.add_argument("--layer", type=int, help="with --head and --out F.npz: that head's full weights only")
    p.add_argument("--head", type=int, help="with --layer: the head whose weights --out writes")
    add_output(p, "write the records to FILE.npz", json_help="print one JSON object per input")
    p.set_defaults(func=cmd_extract)


def cmd_extract(args: argparse.Namespace) -> int:
    args.text = input_text(args)
    if (args.layer is None) != (args.head is None):
        raise CliError("extract: --layer and --head go together (one head's weights)")
    if args.layer is not None:
        return _extract_head(args)
    _check_args(args)
    adapter = load_adapter(args)
    if args.input_file:
        return _extract_lines(adapter, _read_inputs(args.input_file), args.beam)
    result = adapter.run(args.text, target=args.target, beam=args.beam)
    print_notices(result.notices)
    if args.out:
        _write_npz(Path(args.out), adapter, result)
    elif args.json:
        print_json(result.to_json(adapter))
    else:
        _print_text(adapter, result)
    return 0


def _check_args(args: argparse.Namespace) -> None:
    """What extract's options say together, before the model loads."""
    if args.input_file and (args.text is not None or args.target is not None):
        raise CliError("extract: give --text (and --target) or --input-file, not both")
    if args.input_file and args.out:
        raise CliError("extract: --input-file prints JSON Lines; --out takes a single --text")
    if args.target is not None and args.text is None:
        raise CliError("extract: --target needs --text")
    if args.beam < 1:
        raise CliError(f"extract: --beam must be at least 1, got {args.beam}")
    check_out(args)


def _read_inputs(path: str) -> list[tuple[str, str | None]]:
    """One input a line, lines ending at ``\n``, ``\r\n`` or ``\r`` and nowhere else: a U+2028 or
    a form feed inside a line stays in its input, so the output has one line per line of the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CliError(f"--input-file {path}: not UTF-8 text ({err.reason})") from err
    items = []
    for line in text.removesuffix("\n").split("\n") if text else []:  # read_text made \r\n and \r \n
        source, tab, target = line.partition("\t")
        items.append((source, target if tab else None))
    return items


def _extract_head(args: argparse.Namespace) -> int:
    """One head's full ``[query, key]`` weights to ``--out F.npz``, at any length up to the context:
    from captured queries and keys where the model allows, else from its record."""
    if not args.out or Path(args.out).suffix != ".npz":
        raise CliError("extract: --layer/--head write one head's weights: give --out FILE.npz")
    if args.input_file or args.target is not None:
        raise CliError(
            "extract: --layer/--head take one --text or --text-file (no --target, no --input-file)"
        )
    adapter = load_adapter(args)
    weights, queries, keys, notices = _head_weights(args, adapter)
    print_notices(notices)
    arrays = {"weights": weights, "query_tokens": queries, "key_tokens": keys}
    arrays |= {"model": adapter.model_id, "layer": args.layer, "head": args.head}
    size = f"{weights.shape[0]:,} × {weights.shape[1]:,}"
    save_npz(Path(args.out), arrays, f"layer {args.layer}, head {args.head}: {size}")
    return 0


def _head_weights(args: argparse.Namespace, adapter) -> tuple:
    """(weights, query tokens, key tokens, notices) of ``--layer``/``--head``."""
    from attention_atlas.models.adapters import capture as cp

    if cp.supports(adapter) is None:
        cap = cp.capture(adapter, args.text)
        check_head(args, cap.n_layers, cap.n_heads)
        from attention_atlas.viz_core.blockwise import head_weights

        return head_weights(cap, args.layer, args.head), cap.tokens, cap.tokens, cap.notices
    result = adapter.run(args.text, beam=args.beam)
    record = result.records.get("cross") or next(iter(result.records.values()))
    check_head(args, record.n_layers, record.n_heads)
    weights = record.head(args.layer, args.head)
    return weights, record.query_tokens, record.key_tokens, result.notices


def _extract_lines(adapter, items: list[tuple[str, str | None]], beam: int, chunk: int = 512) -> int:
    """JSON Lines in input order; a bad line gets ``{"error": ...}`` and the rest go on."""
    for start in range(0, len(items), chunk):
        results = _run_lines(adapter, items[start : start + chunk], beam)
        lines = []
        for r in results:
            obj = {"error": str(r)} if isinstance(r, Exception) else r.to_json(adapter)
            lines.append(json_text(obj))
        sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0


def _run_lines(adapter, part: list[tuple[str, str | None]], beam: int) -> list:
    """A result, or the ValueError that refused it, per input: in batches where the model can."""
    if hasattr(adapter, "run_batch"):
        return adapter.run_batch(part, beam=beam)
    results = []
    for text, target in part:
        try:
            results.append(adapter.run(text, target=target, beam=beam))
        except ValueError as err:
            results.append(err)
    return results


def _write_npz(path: Path, adapter, result) -> None:
    arrays = {"model": adapter.model_id, "output": result.output or ""}
    for kind, rec in result.records.items():
        arrays[f"{kind}_weights"] = rec.weights  # [layers, heads, query, key]
        arrays[f"{kind}_query_tokens"] = rec.query_tokens
        arrays[f"{kind}_key_tokens"] = rec.key_tokens
        if rec.sink is not None:  # [layers, heads, query]: what each row left to a learned sink logit
            arrays[f"{kind}_sink"] = rec.sink
    save_npz(path, arrays, ", ".join(result.records))


# -- the text table --------------------------------------------------------------------------


def _print_text(adapter, result) -> None:
    print(f"model   {adapter.model_id} on {adapter.device}")
    if result.output is not None:
        print(f"output  {result.output}")
    for kind, rec in result.records.items():
        w = rec.head()  # [query, key]
        note = rec.meta.get("alignment")
        extra = f", alignment {note:.2f}" if isinstance(note, float) else ""
        print(f"\n{kind} attention ({rec.scoring or 'n/a'}{extra}); rows = output, columns = input")
        for line in _table(rec.query_tokens, rec.key_tokens, w):
            print(line)


def _table(rows: list[str], cols: list[str], weights: np.ndarray) -> list[str]:
    """The weights as a text table whose columns line up in a terminal: each label padded to its
    display width (a CJK character takes two cells), every column as wide as its widest entry."""
    left = max(map(_cells, rows), default=0)
    widths = [max(5, _cells(c)) for c in cols]  # a weight prints as 0.00: 4 cells, 5 with its space
    head = " " * left + "  " + " ".join(_right(c, n) for c, n in zip(cols, widths, strict=True))
    body = [
        _right(r, left) + "  " + " ".join(f"{v:{n}.2f}" for v, n in zip(row, widths, strict=True))
        for r, row in zip(rows, weights, strict=True)
    ]
    return [head.rstrip(), *body]


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide and fullwidth characters two, combining marks none."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def _right(text: str, cells: int) -> str:
    return " " * max(cells - _cells(text), 0) + text
