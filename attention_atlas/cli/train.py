"""``train <family>``: a family's recipe run with the options of its arguments dataclass
(``models.training.options``), or ``train couplet-rnn --preset classroom``, the classroom page's
run (``models.training.classroom``)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from attention_atlas.cli.common import CliError, Parser


def _preset_options(p) -> None:
    """``train couplet-rnn``'s classroom run (``_train_preset``), beside the recipe's options."""
    p.add_argument("--preset", help="'classroom': the Watch attention learn page's small, fast run")
    p.add_argument("--max-seconds", type=float, help="with --preset: seconds of training (≤ 3600)")


# name: (help, the recipe module, its arguments' dataclass, options beside the dataclass's)
TRAIN_FAMILIES = {
    "couplet-rnn": (
        "the couplet tutorial's couplet seq2seq (BiLSTM + attention)",
        "attention_atlas.models.training.couplet_rnn_recipe",
        "CoupletTrainArgs",
        _preset_options,
    ),
    "couplet-transformer": (
        "our encoder–decoder Transformer on couplets",
        "attention_atlas.models.training.couplet_transformer_recipe",
        "TransformerTrainArgs",
        None,
    ),
    "translate": (
        "the Bahdanau tutorial's English → French GRU/LSTM with attention",
        "attention_atlas.models.training.translation_recipe",
        "TranslationTrainArgs",
        None,
    ),
}

PRESET_OPTIONS = {"attention", "seed", "threads", "device", "data", "out"}  # the rest the preset fixes


class _FamilyParser(Parser):
    """A ``train <family>`` parser whose options are the fields of the family's arguments
    dataclass (``models.training.options``: type, default, help, choices), added the first time
    it parses or prints help: importing a recipe imports torch, which only ``train`` needs."""

    def __init__(self, *args, recipe: tuple | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._recipe = recipe

    def _fill(self) -> None:
        if self._recipe is None:
            return
        import importlib

        from attention_atlas.models.training.options import add_options

        module, args_class, extra = self._recipe
        self._recipe = None
        add_options(self, getattr(importlib.import_module(module), args_class))
        if extra is not None:
            extra(self)
        self.set_defaults(func=cmd_train, train_module=module, args_class=args_class)

    def parse_known_args(self, args=None, namespace=None):
        self._fill()
        return super().parse_known_args(args, namespace)

    def format_usage(self):
        self._fill()
        return super().format_usage()

    def format_help(self):
        self._fill()
        return super().format_help()


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="train a model and bundle its weights")
    fam = p.add_subparsers(dest="family", required=True, parser_class=_FamilyParser)
    for name, (about, *recipe) in TRAIN_FAMILIES.items():
        fam.add_parser(name, help=about, recipe=tuple(recipe))


def cmd_train(args: argparse.Namespace) -> int:
    """Any ``train`` family: its parser names the module (``train``) and the arguments' dataclass."""
    import importlib

    from attention_atlas.models.training.options import given

    if getattr(args, "preset", None) is not None or getattr(args, "max_seconds", None) is not None:
        return _train_preset(args)
    module = importlib.import_module(args.train_module)
    args_class = getattr(module, args.args_class)
    command = "atlas " + " ".join(shlex.quote(a) for a in args.argv)
    metrics = module.train(args_class(**given(args, args_class)), command=command)
    print(json.dumps(metrics, ensure_ascii=False))
    return 0


def _train_preset(args: argparse.Namespace) -> int:
    """``train couplet-rnn --preset classroom --max-seconds S --out DIR``: the classroom page's run
    (``models.training.classroom``), and its export in DIR for ``extract --checkpoint DIR``."""
    if args.preset is None or args.max_seconds is None or args.out is None:
        raise CliError(
            "train: --preset, --max-seconds and --out go together, e.g. --preset classroom "
            "--max-seconds 120 --out DIR"
        )
    from attention_atlas.models.training import classroom
    from attention_atlas.models.training.couplet_rnn_recipe import CoupletTrainArgs
    from attention_atlas.models.training.options import given

    fixed = sorted(k for k in given(args, CoupletTrainArgs) if k not in PRESET_OPTIONS)
    fixed = [f"--{k.replace('_', '-')}" for k in fixed]
    if fixed:
        raise CliError(f"train: --preset {args.preset} fixes {', '.join(fixed)}; leave them out")
    report = classroom.train_preset(
        args.preset,
        args.attention,
        args.max_seconds,
        args.out,
        seed=args.seed,
        threads=args.threads,
        device=args.device,
        data=args.data or classroom.DATA_PATH,
        log=lambda m: print(m, file=sys.stderr),
    )
    print(json.dumps(report, ensure_ascii=False))
    return 0
