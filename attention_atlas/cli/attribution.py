"""``atlas attribute``: one output of any model with an output, its input tokens scored by attention,
rollout, gradients and occlusion (``models/analysis/attribution.py``), with each method's faithfulness;
printed, as one JSON object or saved as ``.npz``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from attention_atlas.cli.common import (
    ANY_MODEL,
    CliError,
    add_source,
    from_argv,
    load_adapter,
    print_json,
    print_notices,
    prompt,
    save_npz,
)

# attribution's methods and default steps, as models.analysis.attribution names them (no torch for --help)
METHODS = (
    "attention",
    "rollout",
    "value_norms",
    "contributions",
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
    "occlusion",
)
STEPS = 32


def add_parser(sub) -> None:
    p = sub.add_parser(
        "attribute",
        help="attention beside gradient and occlusion attributions for one output, with their faithfulness",
    )
    add_source(p, ANY_MODEL)
    p.add_argument("--text", required=True, help="the input (a causal LM: the context)")
    p.add_argument(
        "--target-text",
        help="the output: a seq2seq model's forced output; a causal LM's next token (its first token)",
    )
    p.add_argument(
        "--target-position",
        type=int,
        help="a seq2seq model's output position (default: the last written); a causal LM: the text's own"
        " token K after the tokens before it",
    )
    p.add_argument(
        "--methods", help=f"comma-separated, of {','.join(METHODS)} (default: every one the model can do)"
    )
    p.add_argument(
        "--steps", type=int, default=STEPS, help=f"integrated gradients' steps ({STEPS}, at most 1024)"
    )
    p.add_argument(
        "--out",
        help="write FILE.npz: tokens, target, one array per method [input tokens], ig_completeness_gap,"
        " comprehensiveness and sufficiency [methods, 3] (k = 10, 20, 50 %%), deletion, aopc, methods",
    )
    p.add_argument("--json", action="store_true", help="print the same arrays as one JSON object")
    p.set_defaults(func=cmd_attribute)


def cmd_attribute(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.attribution import attribute, check_methods, check_steps, subject_of

    text = prompt(args)
    methods = check_methods(
        [m.strip() for m in args.methods.split(",")] if args.methods is not None else None
    )
    check_steps(args.steps)
    if args.target_position is not None and args.target_position < 0:
        raise CliError(f"--target-position {args.target_position}: give a position from 0")
    target = from_argv(args.target_text)
    adapter = load_adapter(args)
    subject = subject_of(adapter, text, target, args.target_position)
    print_notices(subject.notices)
    result = attribute(subject, methods, steps=args.steps)
    arrays = result.arrays()
    if args.out:
        save_npz(
            Path(args.out), arrays, f"{len(result.methods)} methods over {len(result.tokens)} input tokens"
        )
    if args.json:
        print_json(arrays)
    if not (args.out or args.json):
        _print_attribution(result)
    return 0


def _print_attribution(result) -> None:
    """Each method's three top tokens and its faithfulness."""
    print(
        f"model   {result.model_id}; output {result.target!r}, log p = {result.f_input:.3f}"
        f" ({result.f_baseline:.3f} from the baseline: {result.baseline_token})"
    )
    print(f"{'method':<22} {'top tokens':<44} comprehensiveness  sufficiency (k = 10/20/50 %)")
    for row, method in enumerate(result.methods):
        scores = result.scores[method]
        top = ", ".join(f"{int(j)} · {result.tokens[j]!r}" for j in np.argsort(-scores, kind="stable")[:3])
        comp = " ".join(f"{x:6.3f}" for x in result.comprehensiveness[row])
        suff = " ".join(f"{x:6.3f}" for x in result.sufficiency[row])
        print(f"{method:<22} {top:<44} {comp}  {suff}")
    if not np.isnan(result.ig_completeness_gap):
        print(
            f"integrated gradients' completeness gap {result.ig_completeness_gap:.2e} ({result.ig_relative_gap:.2%})"
        )
