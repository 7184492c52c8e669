"""The shared training recipe: ``--seed`` fixes the weights of every family, and every card
lists the commands that trained it. Each family trains two steps of a tiny model on a tiny
data set in a temporary folder."""

from __future__ import annotations

import gzip
import json
import random

import pytest
import torch
from safetensors.torch import load_file

from attention_atlas.models.training import couplet_rnn_recipe, couplet_transformer_recipe, translation_recipe

CHARS = "天地风云山水花月春秋江河日夜红白青黄"
PAIRS = [
    ("go .", "va !"),
    ("i lost .", "j'ai perdu ."),
    ("he's calm .", "il est calme ."),
    ("i'm home .", "je suis chez moi ."),
    ("we lost .", "nous avons perdu ."),
    ("he's home .", "il est chez lui ."),
]
SHARED = {"steps": 2, "batch_size": 8, "eval_every": 2, "save_every": 2, "dtype": "float32", "threads": 1}


def couplet_file(folder):
    rng = random.Random(5)
    rows = []
    for _ in range(60):
        n = rng.choice((5, 7))
        upper, lower = ("".join(rng.choice(CHARS) for _ in range(n)) for _ in range(2))
        rows.append(f"{upper}\t{lower}")
    path = folder / "couplets.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def translation_file(folder):
    path = folder / "pairs.tsv.gz"
    rows = [f"{en}\t{fr}" for en, fr in PAIRS] * 4 + [f"Sentence {i}.\tPhrase {i}." for i in range(20)]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    return path


def couplet_rnn(folder):
    args = couplet_rnn_recipe.CoupletTrainArgs(
        data=couplet_file(folder), embed=8, hidden=8, vocab_size=40, eval_pairs=8, valid_size=8, **SHARED
    )
    return couplet_rnn_recipe, args, "python cli.py train couplet-rnn --attention additive --steps 2"


def couplet_transformer(folder):
    args = couplet_transformer_recipe.TransformerTrainArgs(
        data=couplet_file(folder),
        d_model=8,
        heads=2,
        encoder_layers=1,
        decoder_layers=2,
        ffn=16,
        vocab_size=40,
        warmup=2,
        beam=2,
        eval_pairs=8,
        valid_size=8,
        **SHARED,
    )
    return couplet_transformer_recipe, args, "python cli.py train couplet-transformer --steps 2"


def translation(folder):
    args = translation_recipe.TranslationTrainArgs(
        data=translation_file(folder),
        embed=8,
        hidden=8,
        min_freq=1,
        test_size=6,
        valid_size=4,
        beam=2,
        **SHARED,
    )
    return translation_recipe, args, "python cli.py train translate --rnn gru --attention additive --steps 2"


FAMILIES = [couplet_rnn, couplet_transformer, translation]


def train_once(tmp_path, family, name: str, seed: int):
    """Train in fresh folders ``tmp_path/name``; returns the bundled weights and the out folder."""
    module, args, command = family(tmp_path)
    args.seed, args.out, args.run_dir = seed, tmp_path / name / "out", tmp_path / name / "run"
    module.train(args, command=command)
    return load_file(args.out / "model.safetensors"), args.out, command


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_one_seed_gives_the_same_weights_and_another_seed_other_weights(tmp_path, family):
    torch.manual_seed(123)  # whatever the global generator holds before a run must not matter
    first, _, _ = train_once(tmp_path, family, "a", seed=7)
    torch.rand(100)
    again, _, _ = train_once(tmp_path, family, "b", seed=7)
    other, _, _ = train_once(tmp_path, family, "c", seed=8)
    assert first.keys() == again.keys() == other.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_every_card_lists_its_recorded_command(tmp_path, family):
    _, out, command = train_once(tmp_path, family, "a", seed=0)
    card = (out / "MODEL_CARD.md").read_text(encoding="utf-8")
    training = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["training"]
    assert training["commands"] == [command]
    assert f"```\n{command}\n```" in card
