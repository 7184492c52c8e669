"""``figure``: a view's Plotly figure, the head view or the model view as the page draws it, saved
as JSON (what the page sends), self-contained HTML or PNG; past the model's token limit, the
long-input page's figures from captured queries and keys."""

from __future__ import annotations

import argparse
from pathlib import Path

from attention_atlas.cli.common import ANY_MODEL, CliError, add_source, check_head, input_text, load_adapter


def add_parser(sub) -> None:
    p = sub.add_parser("figure", help="write a view's Plotly figure (JSON as the page sends it, HTML or PNG)")
    add_source(p, ANY_MODEL)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the input")
    what.add_argument("--text-file", help="the input: a UTF-8 file, up to the model's context")
    p.add_argument("--target", help="force-decode this output (seq2seq models)")
    p.add_argument(
        "--kind", help="self, encoder_self, decoder_self or cross (default: cross, else the first)"
    )
    p.add_argument("--view", required=True, choices=["head", "model"], help="one head, or all layers × heads")
    p.add_argument("--layer", type=int, default=0, help="layer of the head view (0)")
    p.add_argument("--head", default="0", help="head of the head view, or 'average' (0)")
    p.add_argument("--out", required=True, help="FILE.json, FILE.html or FILE.png")
    p.set_defaults(func=cmd_figure)


def cmd_figure(args: argparse.Namespace) -> int:
    from attention_atlas.viz_core.model_view import model_view

    out = Path(args.out)
    if out.suffix not in (".json", ".html", ".png"):
        raise CliError(f"--out must end in .json, .html or .png, not {out.suffix or 'nothing'!r}")
    args.text = input_text(args)
    adapter = load_adapter(args)
    long_fig = _long_figure(args, adapter)
    if long_fig is not None:
        return _save_figure(long_fig, out)
    result = adapter.run(args.text, target=args.target)
    kind = args.kind or ("cross" if "cross" in result.records else next(iter(result.records)))
    if kind not in result.records:
        raise CliError(f"--kind {kind!r}: this model gives {', '.join(result.records)}")
    record = result.records[kind]
    fig = model_view(record) if args.view == "model" else _head_view(args, record)
    return _save_figure(fig, out)


def _head_view(args: argparse.Namespace, record):
    """The head view of ``--layer`` and ``--head`` (a number or 'average'), both checked first."""
    from attention_atlas.viz_core.figures import head_view

    if not 0 <= args.layer < record.n_layers:
        raise CliError(f"--layer {args.layer} is out of range: the model has layers 0..{record.n_layers - 1}")
    if args.head != "average" and not (args.head.isdigit() and int(args.head) < record.n_heads):
        raise CliError(f"--head {args.head!r}: give 0..{record.n_heads - 1} or 'average'")
    return head_view(record, args.layer, args.head)


def _long_figure(args: argparse.Namespace, adapter):
    """For text over ``run()``'s token limit: the long-context figure from captured queries and
    keys (the head's max-pooled overview, or the long-input page's model view of every head's
    thumbnail); None for shorter text."""
    from attention_atlas.models.adapters import capture as cp

    limit = getattr(adapter, "max_tokens", None)
    if limit is None or cp.supports(adapter) is not None or args.target:
        return None
    if limit >= cp.context_limit(adapter) or len(adapter.tokenizer(args.text)["input_ids"]) <= limit:
        return None  # run() reads it all, or cuts it with a notice as before (minilm: 512 either way)
    from attention_atlas.viz_core import blockwise as bw
    from attention_atlas.viz_core import every_head as eh
    from attention_atlas.viz_core import long_figures as lf

    cap = cp.capture(adapter, args.text)
    if args.view == "model":  # the long-input page's model view, every layer done, on every core
        return lf.long_model_view(eh.all_heads(cap)[0])
    if not args.head.isdigit():
        raise CliError(f"--head {args.head!r}: give a head number (0..{cap.n_heads - 1}) at long context")
    args.head = int(args.head)
    check_head(args, cap.n_layers, cap.n_heads)
    red = bw.reduce_head(cap, args.layer, args.head)
    return lf.head_overview(red, cap.tokens, args.layer, args.head)  # the Long inputs page's figure


def _save_figure(fig, out: Path) -> int:
    import plotly.io as pio

    if out.suffix == ".json":
        out.write_text(pio.to_json(fig, validate=False), encoding="utf-8")  # what st.plotly_chart sends
    elif out.suffix == ".html":
        fig.write_html(out, include_plotlyjs=True)  # self-contained: opens offline
    else:
        fig.write_image(out, scale=2)  # kaleido drives the local chromium
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")  # on stdout, as every other command's "wrote"
    return 0
