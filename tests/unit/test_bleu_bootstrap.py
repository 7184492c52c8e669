"""Corpus BLEU with paired bootstrap intervals, and the translation held-out split that no training
or model selection reads (issue 27, item 11)."""

from __future__ import annotations

import re

import pytest

from attention_atlas.models.tasks.translation import bleu
from attention_atlas.models.text.metrics import paired_bootstrap
from attention_atlas.paths import PACKAGE

REFS = [
    "je suis chez moi .",
    "il est calme .",
    "j'ai perdu .",
    "va !",
    "nous sommes en retard ce soir .",
    "elle lit un livre dans le jardin .",
]
# a weaker system: some words wrong or missing
WEAK = [
    "je suis à la maison .",
    "il est calme .",
    "j'ai gagné .",
    "va !",
    "nous sommes tard .",
    "elle lit le livre dans un jardin .",
]
ONE_REF = [[r] for r in REFS]


def test_a_system_identical_to_the_references_scores_100_with_no_spread():
    (iv,) = paired_bootstrap([REFS], ONE_REF, resamples=200).systems
    assert iv.value == pytest.approx(100) and iv.low == pytest.approx(100) and iv.high == pytest.approx(100)


def test_identical_systems_differ_by_exactly_zero_in_every_resample():
    result = paired_bootstrap([WEAK, list(WEAK)], ONE_REF, resamples=300)
    d = result.difference
    assert d.low <= 0 <= d.high and d.high - d.low == 0 and d.value == 0


def test_the_whole_corpus_value_is_the_cards_bleu_and_lies_inside_its_interval():
    result = paired_bootstrap([WEAK, REFS], ONE_REF, resamples=500, seed=3)
    weak, perfect = result.systems
    assert weak.value == pytest.approx(bleu(WEAK, ONE_REF)["bleu"], abs=0.006)  # bleu() rounds to 2 places
    assert weak.low <= weak.value <= weak.high and weak.high - weak.low > 5  # six sentences: a wide interval
    d = result.difference
    assert d.value == pytest.approx(perfect.value - weak.value)
    assert 0 < d.low <= d.value <= d.high  # the perfect system wins in every resample


def test_resamples_are_seeded_and_paired():
    a = paired_bootstrap([WEAK, REFS], ONE_REF, resamples=400, seed=7)
    assert paired_bootstrap([WEAK, REFS], ONE_REF, resamples=400, seed=7) == a
    swapped = paired_bootstrap([REFS, WEAK], ONE_REF, resamples=400, seed=7).difference
    assert swapped.low == pytest.approx(-a.difference.high)
    assert swapped.high == pytest.approx(-a.difference.low)


def test_several_references_per_sentence_count_as_sacrebleu_counts_them():
    refs = [[r, "autre chose ."] if i % 2 else [r] for i, r in enumerate(REFS)]
    (iv,) = paired_bootstrap([WEAK], refs, resamples=100).systems
    assert iv.value == pytest.approx(bleu(WEAK, refs)["bleu"], abs=0.006)


@pytest.mark.parametrize(
    ("systems", "refs", "message"),
    [
        ([WEAK, WEAK, WEAK], ONE_REF, "one or two systems"),
        ([WEAK[:3]], ONE_REF, "one hypothesis per reference"),
        ([[]], [], "at least one"),
    ],
)
def test_bad_input_is_one_clear_error(systems, refs, message):
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(systems, refs)


# -- the held-out split --------------------------------------------------------------------


@pytest.mark.slow  # tokenizes the 73,697 pairs of the bundled corpus
def test_the_held_out_split_is_disjoint_from_training_validation_and_test():
    from attention_atlas.models.tasks.translation import load_held_out, load_split

    split = load_split()
    held = load_held_out()

    def joined(pairs):
        return {(" ".join(en), " ".join(fr)) for en, fr in pairs}

    train, valid, test, kept = map(joined, (split.train, split.valid, split.test, held))
    assert len(kept) == len(held) > 1000  # no pair twice
    assert not kept & train and not kept & valid and not kept & test
    assert not {en for en, _ in kept} & {en for en, _ in train}  # not even its English sentence


def test_no_training_or_model_selection_code_reads_the_held_out_split():
    """Only the eval command reaches it: the held-out loader is named in its own module and in
    ``eval_split``, which only the eval command (``cli/evaluate.py``) calls; nothing under
    models/training, the pages, the ui or the benches names either."""
    named = {}
    for path in [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "bench").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for name in ("load_held_out", "eval_split"):
            if re.search(rf"\b{name}\b", text):
                named.setdefault(name, set()).add(path.relative_to(PACKAGE.parent).as_posix())
    assert named["load_held_out"] == {"attention_atlas/models/tasks/translation.py"}
    assert named["eval_split"] == {
        "attention_atlas/models/tasks/translation.py",
        "attention_atlas/cli/evaluate.py",
    }
