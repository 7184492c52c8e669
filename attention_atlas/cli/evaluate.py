"""``eval``: a translation model's corpus BLEU on the test or the held-out split, with paired
bootstrap intervals, and with ``--against`` the interval of the difference."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attention_atlas.cli.common import CliError


def add_parser(sub) -> None:
    p = sub.add_parser("eval", help="a translation model's BLEU with bootstrap intervals (against another)")
    p.add_argument("--model", required=True, help="a bundled model id, a bundle folder or .safetensors file")
    p.add_argument("--against", help="a second model, the baseline: the difference is --model minus it")
    # models.tasks.translation.EVAL_SPLITS (not imported here: building the parser loads no torch)
    p.add_argument("--split", choices=("test", "held-out"), default="test", help="test (card's) or held-out")
    p.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy, the card's headline)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the sentences")
    p.add_argument("--seed", type=int, default=0, help="seed of the resamples")
    p.add_argument("--first", type=int, help="only the split's first N pairs (a quick check)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    """Corpus BLEU of a translation model (and of ``--against``, a baseline) on the test or the
    held-out split, each with a paired bootstrap interval, and the interval of the difference."""
    from attention_atlas.models.tasks.translation import compare, eval_split

    _check_args(args)
    names = [n for n in (args.against, args.model) if n is not None]
    translators = [_translator(n) for n in names]
    pairs = eval_split(args.split)[: args.first]
    result = compare(translators, pairs, args.beam, args.resamples, args.seed)
    rows = [*zip(names, result.systems, strict=True)]
    if result.difference is not None:
        rows.append((f"{args.model} − {args.against}", result.difference))
    if args.json:
        print(json.dumps(_eval_json(args, len(pairs), rows), ensure_ascii=False))
    else:
        _print_rows(args, len(pairs), result.level, rows, len(names))
    return 0


def _check_args(args: argparse.Namespace) -> None:
    if args.resamples < 100:
        raise CliError(f"eval: --resamples {args.resamples} is too few for a 95 % interval (100 or more)")
    if args.beam < 1:
        raise CliError(f"eval: --beam {args.beam} must be 1 (greedy) or more")
    if args.first is not None and args.first < 1:
        raise CliError(f"eval: --first {args.first} must be 1 or more")


def _print_rows(args: argparse.Namespace, n_pairs: int, level: float, rows, n_models: int) -> None:
    """A line that says how BLEU was measured, then a model (or the difference, signed) a line."""
    search = "greedy" if args.beam == 1 else f"beam {args.beam}"
    print(
        f"{args.split} split, {n_pairs:,} pairs, {search}; corpus BLEU (sacrebleu, tokenize=none on the "
        f"lower-cased tokens, one reference); {level:.0%} intervals from {args.resamples:,} "
        f"paired bootstrap resamples of the sentences, seed {args.seed}"
    )
    width = max(len(name) for name, _ in rows)
    for i, (name, iv) in enumerate(rows):
        sign = "+" if i == n_models else ""
        print(f"  {name:<{width}}  {iv.value:{sign}6.2f}  [{iv.low:{sign}.2f}, {iv.high:{sign}.2f}]")


def _translator(name: str):
    """A bundled translation model's id, a bundle folder or a ``.safetensors`` file, loaded on CPU."""
    from attention_atlas.models.storage.bundle import Seq2SeqBundle
    from attention_atlas.models.tasks.translation import Translator
    from attention_atlas.paths import WEIGHTS

    path = Path(name) if Path(name).exists() else WEIGHTS / name
    if not path.exists():
        raise CliError(f"eval: {name} is neither a bundled model id nor a bundle folder or file")
    bundle = Seq2SeqBundle.load(path)
    if bundle.task != "translation":
        raise CliError(f"eval: {name} is a {bundle.task} model; eval scores translation models")
    return Translator(bundle.model, bundle.src_vocab, bundle.tgt_vocab)


def _eval_json(args: argparse.Namespace, n_pairs: int, rows) -> dict:
    return {
        "split": args.split,
        "pairs": n_pairs,
        "beam": args.beam,
        "resamples": args.resamples,
        "seed": args.seed,
        "rows": [{"name": n, "bleu": iv.value, "low": iv.low, "high": iv.high} for n, iv in rows],
    }
