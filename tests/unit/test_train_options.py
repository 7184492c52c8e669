"""``cli.py train <family>`` options come from the recipe's arguments dataclass: one option per
field, its type, default, help and choices; the model cards' commands still parse."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from attention_atlas.cli import build_parser
from attention_atlas.cli.common import CliError
from attention_atlas.cli.train import TRAIN_FAMILIES
from attention_atlas.models.training import options
from attention_atlas.paths import WEIGHTS


def family_class(family: str):
    import importlib

    _, module, name, _ = TRAIN_FAMILIES[family]
    return getattr(importlib.import_module(module), name)


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("family", sorted(TRAIN_FAMILIES))
def test_every_field_is_an_option_with_the_dataclass_default(family, capsys):
    cls = family_class(family)
    required = [f for f in dataclasses.fields(cls) if f.metadata.get("required")]
    base = ["train", family] + [a for f in required for a in (f"--{f.name}", str(f.default))]
    args = parse(*base)
    assert options.given(args, cls) == {f.name: f.default for f in required}  # nothing else typed
    assert cls(**options.given(args, cls)) == cls()  # the dataclass supplies the rest
    with pytest.raises(SystemExit):
        parse("train", family, "--help")
    help_text = " ".join(capsys.readouterr().out.split())
    for f in dataclasses.fields(cls):
        assert "--" + f.name.replace("_", "-") in help_text
        assert " ".join(f.metadata["help"].split()) in help_text


def test_types_choices_and_required_follow_the_fields():
    args = parse(
        "train",
        "translate",
        "--rnn",
        "lstm",
        "--attention",
        "dot",
        "--lr",
        "0.5",
        "--steps",
        "7",
        "--data",
        "x.tsv",
        "--fresh",
        "--target-bleu",
        "0.3",
    )
    assert (args.rnn, args.attention, args.lr, args.steps, args.fresh) == ("lstm", "dot", 0.5, 7, True)
    assert args.data == Path("x.tsv") and args.target_bleu == 0.3
    with pytest.raises(CliError, match="required: --attention"):
        parse("train", "couplet-rnn")
    with pytest.raises(CliError, match=r"--keys: invalid choice: 'x' \(choose from 'tanh', 'linear'\)"):
        parse("train", "couplet-rnn", "--attention", "dot", "--keys", "x")
    with pytest.raises(CliError, match="--dtype: invalid choice"):
        parse("train", "couplet-transformer", "--dtype", "int8")
    with pytest.raises(CliError, match="--steps: invalid int value: 'x'"):
        parse("train", "couplet-transformer", "--steps", "x")


def test_a_new_field_is_a_new_option():
    @dataclass
    class Args:
        width: int = options.option(8, "how wide")
        mode: Literal["a", "b"] = options.option("a", "which mode", required=True)
        note: str | None = options.option(None, "a note, 50 % of it")
        quiet: bool = options.option(False, "say less")

    import argparse

    p = argparse.ArgumentParser()
    options.add_options(p, Args)
    args = p.parse_args(["--mode", "b", "--width", "3"])
    assert options.given(args, Args) == {"mode": "b", "width": 3}
    text = p.format_help()
    assert "how wide (default 8)" in text and "50 % of it" in text and "{a,b}" in text
    assert p.parse_args(["--mode", "a", "--quiet"]).quiet is True


def test_a_field_without_help_is_refused():
    @dataclass
    class Args:
        width: int = 8

    import argparse

    with pytest.raises(TypeError, match="width: a recipe field needs its help"):
        options.add_options(argparse.ArgumentParser(), Args)


def test_the_model_cards_training_commands_still_parse():
    commands = [
        line.split("#")[0].strip()
        for card in sorted(WEIGHTS.glob("*/MODEL_CARD.md"))
        for line in card.read_text(encoding="utf-8").splitlines()
        if line.startswith("python cli.py train ")
    ]
    assert len(commands) >= 5
    for command in commands:
        argv = shlex.split(command)[2:]
        args = parse(*argv)
        cls = family_class(argv[1])
        cls(**options.given(args, cls))  # every option a field


def test_the_parser_imports_no_recipe_until_train_is_used():
    """Listing the families costs no torch import; a family's parser imports its recipe."""
    code = (
        "import sys; from attention_atlas.cli import build_parser; p = build_parser(); "
        "p.parse_args(['models']); assert 'torch' not in sys.modules, 'torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
