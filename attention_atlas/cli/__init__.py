"""Attention Atlas on the command line.

    atlas serve [--port N] [--address A]     (the dashboard; `atlas …` from a checkout is the same)
    atlas models [--json]
    atlas extract (--model ID | --checkpoint FILE) (--text TEXT [--target TEXT] | --input-file FILE)
                  [--json | --out FILE.npz] [--beam N]
    atlas extract (--model ID | --checkpoint FILE) (--text TEXT | --text-file FILE)
                  --layer L --head H --out FILE.npz      (one head, any length up to the context)
    atlas figure  (--model ID | --checkpoint FILE) (--text TEXT | --text-file FILE) --view head|model
                  [--kind K --layer L --head H] --out FILE.(json|html|png)
    atlas export  --model ID --out FILE
    atlas train   couplet-rnn --attention additive|dot [--steps N ...]
    atlas train   couplet-transformer [--steps N ...]
    atlas train   translate --rnn gru|lstm --attention additive|dot [--steps N ...]
    atlas eval    --model ID|FOLDER [--against ID|FOLDER] [--split test|held-out] [--resamples N]
    atlas corpus  --model ID (--input-file FILE | --sample english[:N]) [--out STATS.parquet]
                  [--column C] [--ray ADDRESS|auto]
    atlas lens    (--model ID | --checkpoint FILE) --text TEXT [--top K] [--token ID]
                  [--json | --out FILE.npz]     (the logit lens of a causal LM)
    atlas generate (--model ID | --checkpoint FILE) --text TEXT --max-new-tokens N
                  [--temperature X --top-p P --seed S] [--json | --out FILE.npz]
                  (a causal LM continues TEXT; each new token's attention over all before it)
    atlas contributions (--model ID | --checkpoint FILE) --text TEXT (--json | --out FILE.npz)
                  (the contribution graph of a causal LM: attn, attn_residual, ffn, ffn_residual)
    atlas patch   (--model ID | --checkpoint FILE) --clean T --corrupt T2 --answer A --wrong B
                  [--direction denoise|noise] --out FILE.npz [--json]
                  (activation patching of a causal LM: resid, attn_out, mlp_out, heads, pattern)
    atlas attribute (--model ID | --checkpoint FILE) --text TEXT [--target-text S] [--target-position K]
                  [--methods saliency,input_x_gradient,integrated_gradients,occlusion,attention,rollout,
                  value_norms,contributions]
                  [--steps N] [--out FILE.npz] [--json]
                  (one output's attribution by each method, and each method's faithfulness)

docs/ARCHITECTURE.md holds the contract the checks rely on.

Errors go to stderr as one line, with a non-zero exit; never a traceback.

This module only builds the top-level parser and dispatches: each command family's parser and
code are in a module of their own (``registry``, ``extract``, ``figure``, ``train``, ``evaluate``,
``corpus``, ``analysis``, ``attribution``, ``serve``), what they share in ``common``. Heavy libraries (torch,
transformers, plotly) are imported inside the commands, so ``atlas --help`` stays fast.
"""

from __future__ import annotations

import argparse
import functools
import sys

from attention_atlas.cli import (
    analysis,
    attribution,
    corpus,
    evaluate,
    extract,
    figure,
    registry,
    serve,
    train,
)
from attention_atlas.cli.common import CliError, Parser, fail

# each adds its subcommand's parser, in the order --help lists them
SUBCOMMANDS = (
    registry.add_models_parser,
    extract.add_parser,
    registry.add_export_parser,
    figure.add_parser,
    train.add_parser,
    evaluate.add_parser,
    corpus.add_parser,
    analysis.add_lens_parser,
    analysis.add_generate_parser,
    analysis.add_contributions_parser,
    analysis.add_patch_parser,
    attribution.add_parser,
    serve.add_parser,
)


@functools.cache  # built once a process (35 ms a build): a caller of main() in-process may call it often
def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="atlas", description="See attention from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        args.argv = argv
        return args.func(args)
    except CliError as err:
        fail(err)
        return 2
    except (ValueError, KeyError, IndexError, OSError) as err:
        fail(err.args[0] if isinstance(err, KeyError) and err.args else err)
        return 1
    except KeyboardInterrupt:
        fail("interrupted")
        return 130
    except Exception as err:  # a bug, still one line: the contract is no tracebacks
        fail(f"{type(err).__name__}: {err}")
        return 1

