"""The analyses of a causal LM (``models/analysis/``): ``lens`` (the logit lens), ``generate`` (a
continuation with each new token's attention), ``contributions`` (the contribution graph) and
``patch`` (activation patching), each printed, as one JSON object or saved as ``.npz``. Any model's
``attribute`` is in ``cli.attribution``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from attention_atlas.cli.common import (
    CAUSAL_LM,
    CliError,
    add_output,
    add_source,
    check_out,
    from_argv,
    load_adapter,
    print_json,
    prompt,
    save_npz,
    write_arrays,
)

CONTRIBUTIONS = ("attn", "attn_residual", "ffn", "ffn_residual")


# -- lens --------------------------------------------------------------------------------------------


def add_lens_parser(sub) -> None:
    p = sub.add_parser("lens", help="the logit lens: each block's output read through the model's final norm and head")
    add_source(p, CAUSAL_LM)
    p.add_argument("--text", required=True, help="the input")
    p.add_argument("--top", type=int, default=10, help="tokens kept per layer and position (10, at most 100)")
    p.add_argument("--token", type=int, help="a token id to follow: its probability and rank everywhere")
    add_output(p, "write FILE.npz: top_ids, top_probs [layers, positions, K], tokens")
    p.set_defaults(func=cmd_lens)


def cmd_lens(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.lens import lens

    text = prompt(args)
    adapter = load_adapter(args)
    grid, tokens = lens(adapter, text, top=args.top, token=args.token)
    arrays = {"model": adapter.model_id, "tokens": tokens, "top_ids": grid.top_ids, "top_probs": grid.top_probs}
    if args.token is not None:
        arrays |= {"token": args.token, "token_probs": grid.token_probs, "token_ranks": grid.token_ranks}
    if not write_arrays(args, arrays, f"top_ids, top_probs {list(grid.top_ids.shape)}"):
        _print_lens(adapter, grid, tokens)
    return 0


def _print_lens(adapter, grid, tokens: list[str]) -> None:
    """The top token after every block at the last position, with its probability."""
    print(f"model   {adapter.model_id}; after each block, the top tokens at the last position {tokens[-1]!r}")
    for layer, (ids, probs) in enumerate(zip(grid.top_ids[:, -1], grid.top_probs[:, -1], strict=True)):
        best = ", ".join(f"{adapter.tokenizer.decode([int(i)])!r} {p:.3f}" for i, p in zip(ids[:3], probs[:3], strict=True))
        print(f"{layer:>5}  {best}")


# -- generate ----------------------------------------------------------------------------------------


def add_generate_parser(sub) -> None:
    p = sub.add_parser("generate", help="continue a text with a causal LM, keeping each new token's attention")
    add_source(p, CAUSAL_LM)
    p.add_argument("--text", required=True, help="the prompt")
    p.add_argument("--max-new-tokens", type=int, required=True, help="stop after this many (or at EOS)")
    p.add_argument("--temperature", type=float, help="sample at this temperature (> 0; default greedy)")
    p.add_argument("--top-p", type=float, help="sample from the tokens whose probability reaches P (0 < P ≤ 1)")
    p.add_argument("--seed", type=int, help="the sampling seed (0): one seed, one continuation")
    add_output(p, "write FILE.npz: ids, tokens, prompt_len, attention [layers, heads, new, all tokens]")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.generate import check_max_new_tokens, generate

    text = prompt(args)
    check_max_new_tokens(args.max_new_tokens)
    sampling = _sampling(args)
    adapter = load_adapter(args)
    done = generate(adapter, text, max_new_tokens=args.max_new_tokens, sampling=sampling)
    arrays = {
        "model": adapter.model_id,
        "ids": done.ids,
        "tokens": done.tokens,
        "prompt_len": done.prompt_len,
        "attention": done.attention,
        "text": done.text,
    }
    summary = f"{len(done.ids) - done.prompt_len} new tokens; attention {list(done.attention.shape)}"
    if not write_arrays(args, arrays, summary):
        _print_generated(adapter, done)
    return 0


def _sampling(args: argparse.Namespace):
    """``Sampling`` of the options given, checked before the model loads; None (greedy) if none is."""
    from attention_atlas.models.analysis.generate import Sampling

    given = {"temperature": args.temperature, "top_p": args.top_p, "seed": args.seed}
    options = {k: v for k, v in given.items() if v is not None}
    sampling = Sampling(**options) if options else None  # any of the three samples; none is greedy
    if sampling is not None:
        sampling.check()  # before loading the model
    return sampling


def _print_generated(adapter, done) -> None:
    """The continuation, then each new token with the three earlier tokens after the first that its
    query attended to most (averaged over layers and heads), and the first token's share: the first
    token is an attention sink, the most attended in nearly every head, so naming it says nothing."""
    print(f"model   {adapter.model_id}; {done.text!r}")
    mean = done.attention.mean(axis=(0, 1))  # [new, all]
    for k, row in enumerate(mean):
        pos = done.prompt_len + k
        print(f"{pos:>5}  {done.tokens[pos]!r:<16} {_looked_at(row[:pos], done.tokens)}")


def _looked_at(row, tokens, top: int = 3) -> str:
    """``looked most at 4 · ' cat' (0.21), …; the first token 0.55``: ``row`` the weights over the
    tokens before the new one (its query's own position last)."""
    rest = 1 + np.argsort(-row[1:], kind="stable")[:top]
    if not len(rest):  # a one-token prompt's first new token
        return f"looked only at 0 · {tokens[0]!r} ({row[0]:.2f})"
    named = ", ".join(f"{int(j)} · {tokens[j]!r} ({row[j]:.2f})" for j in rest)
    return f"looked most at {named}; the first token {row[0]:.2f}"


# -- contributions -----------------------------------------------------------------------------------


def add_contributions_parser(sub) -> None:
    p = sub.add_parser(
        "contributions",
        help="the contribution graph: how much each head, token and block adds to each residual",
    )
    add_source(p, CAUSAL_LM)
    p.add_argument("--text", required=True, help="the input")
    out_help = (
        "write FILE.npz: attn [layers, heads, positions, positions], attn_residual, ffn, ffn_residual"
        " [layers, positions], tokens"
    )
    add_output(p, out_help, required=True)
    p.set_defaults(func=cmd_contributions)


def cmd_contributions(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.contributions import contributions

    text = prompt(args)
    adapter = load_adapter(args)
    result = contributions(adapter, text)
    arrays = {"model": adapter.model_id, "tokens": result.tokens} | {
        k: getattr(result, k) for k in CONTRIBUTIONS
    }
    write_arrays(args, arrays, f"attn {list(result.attn.shape)}, attn_residual, ffn, ffn_residual, tokens")
    return 0


# -- patch -------------------------------------------------------------------------------------------

PATCH_ARRAYS = ("resid", "attn_out", "mlp_out", "heads", "pattern")


def add_patch_parser(sub) -> None:
    p = sub.add_parser(
        "patch",
        help="activation patching: how much of the answer each component restores (or destroys)",
    )
    add_source(p, CAUSAL_LM)
    p.add_argument("--clean", required=True, help="the prompt the model answers correctly")
    p.add_argument("--corrupt", required=True, help="the same prompt with a word changed (as many tokens)")
    p.add_argument("--answer", required=True, help="the clean prompt's answer: one token, such as ' Paris'")
    p.add_argument("--wrong", required=True, help="the corrupted prompt's answer: one token")
    p.add_argument(
        "--direction",
        choices=("denoise", "noise"),
        default="denoise",
        help="denoise: clean activations into the corrupted run (default); noise: corrupted into the clean run",
    )
    p.add_argument(
        "--out",
        help="write FILE.npz: tokens_clean, tokens_corrupt, metric_clean, metric_corrupt, resid, attn_out,"
        " mlp_out [layers, positions], heads, pattern [layers, heads]",
    )
    p.add_argument("--json", action="store_true", help="print the same as one JSON object")
    p.set_defaults(func=cmd_patch)


def cmd_patch(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.patching import patching

    if not args.out and not args.json:
        raise CliError("patch: give --out FILE.npz, --json, or both")
    check_out(args)
    clean, corrupt = from_argv(args.clean), from_argv(args.corrupt)
    for what, text in (("clean", clean), ("corrupted", corrupt)):
        if not text.strip():
            raise CliError(f"the {what} prompt is empty: type a sentence")
    answer, wrong = from_argv(args.answer), from_argv(args.wrong)
    adapter = load_adapter(args)
    result = patching(adapter, clean, corrupt, answer, wrong, args.direction)
    arrays = {
        "model": adapter.model_id,
        "direction": result.direction,
        "tokens_clean": result.tokens_clean,
        "tokens_corrupt": result.tokens_corrupt,
        "answer": result.answer,
        "wrong": result.wrong,
        "metric_clean": result.metric_clean,
        "metric_corrupt": result.metric_corrupt,
    } | {k: getattr(result, k) for k in PATCH_ARRAYS}
    if args.out:
        save_npz(Path(args.out), arrays, f"resid {list(result.resid.shape)}, heads {list(result.heads.shape)}")
    if args.json:
        print_json(arrays)
    return 0
