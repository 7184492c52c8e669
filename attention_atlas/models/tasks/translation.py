"""English → French translation (the Bahdanau tutorial): words, a GRU/LSTM encoder–decoder, BLEU.

Text is normalised as the Bahdanau tutorial's data loading does: lower case, no-break spaces made
plain, punctuation split off as its own token; apostrophes and hyphens stay inside words
(``he's``, ``j'ai``, ``peut-être``)::

    >>> tokenize("He's calm.")
    ["he's", 'calm', '.']
    >>> tokenize("Ça alors\u202f!")
    ['ça', 'alors', '!']

Sources end with ``<eos>`` (a key the attention can rest on) and so do targets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attention_atlas.i18n import N_, _, later, later_n
from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq
from attention_atlas.models.text.metrics import PairedBootstrap, paired_bootstrap, reference_streams
from attention_atlas.models.text.pairs import CORPORA, PairBatches, read_pairs, split_pairs
from attention_atlas.models.text.runner import Seq2SeqRunner
from attention_atlas.models.text.search import Constraints, Decoded
from attention_atlas.models.text.vocab import Vocab

DATA_PATH = CORPORA / "translation" / "eng_fra.tsv.gz"
TEST_SIZE = 2000  # held out by a seeded shuffle, never trained on; the model cards' numbers
VALID_SIZE = 500  # held out of the rest, watched during training
SPLIT_SEED = 0
CHECK_SIZE = 300  # the first test pairs: a quick check that a bundle reproduces its card
MAX_WORDS = 50  # longer input is truncated with a notice (the data's longest sentence has 13)
SEED_EXAMPLES = ("go .", "i lost .", "he's calm .", "i'm home .")  # the Bahdanau tutorial's four sentences

_TOKEN = re.compile(r"[\w'-]+|[^\w\s]")
_SPACES = str.maketrans({"\u202f": " ", "\xa0": " ", "\u2019": "'", "\u2018": "'"})


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks."""
    return _TOKEN.findall(text.translate(_SPACES).lower())


def detokenize(tokens: Sequence[str]) -> str:
    """Words joined for reading: no space before , or . (French keeps it before ! ? : ;)."""
    return re.sub(r" ([.,])", r"\1", " ".join(tokens))


@dataclass
class Sentence:
    """A typed sentence as the model reads it, plus what changed on the way."""

    tokens: list[str]
    notices: list[str] = field(default_factory=list)
    truncated: bool = False


ENGLISH, FRENCH = later("English sentence"), later("French sentence")  # as notices and errors call them


def prepare_sentence(text: str | None, what: str = ENGLISH) -> Sentence:
    """Tokenize typed text; empty input raises ``ValueError``, long input is cut at ``MAX_WORDS``."""
    tokens = tokenize("" if text is None else str(text))
    if not tokens:
        raise ValueError(
            later(
                'the {what} is empty: type a short sentence, e.g. "{example}"', what=what, example="I'm home."
            )
        )
    notices = []
    truncated = len(tokens) > MAX_WORDS
    if truncated:
        notices.append(
            later(
                "The {what} has {n:,} words; only the first {limit:,} are used.",
                what=what,
                n=len(tokens),
                limit=MAX_WORDS,
            )
        )
        tokens = tokens[:MAX_WORDS]
    return Sentence(tokens, notices, truncated)


def unknown_notice(words: Sequence[str], vocab: Vocab, what: str = ENGLISH) -> str | None:
    missing = vocab.unknown(words)
    if not missing:
        return None
    shown = ", ".join(w if len(w) <= 24 else w[:23] + "…" for w in missing[:10])  # a long word: its start
    shown += ", …" if len(missing) > 10 else ""
    return later_n(
        "{n:,} word of the {what} is not in the model's vocabulary ({words}); the model reads it as <unk>.",
        "{n:,} words of the {what} are not in the model's vocabulary ({words}); the model reads them as <unk>.",
        len(missing),
        n=len(missing),
        what=what,
        words=shown,
    )


class Translator(Seq2SeqRunner):
    """A translation model with its English and French vocabularies."""

    def __init__(
        self,
        model: Seq2Seq,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        device: torch.device | str = "cpu",
        batch_size: int = 256,
    ):
        super().__init__(
            model, src_vocab, tgt_vocab, device, batch_size, end_with_eos=True, max_len=2 * MAX_WORDS
        )

    def constraints(self, lines: Sequence[Sequence[str]]) -> Constraints:
        return Constraints(banned=(self.tgt_vocab.pad_id, self.tgt_vocab.bos_id))

    def max_len_for(self, lines: Sequence[Sequence[str]]) -> int:
        """French runs a little longer than English; a model that never says eos stops here."""
        return min(self.max_len, 2 * max(len(x) for x in lines) + 10)

    def text(self, d: Decoded) -> str:
        """Space-joined output words (``<unk>`` kept), as BLEU reads them."""
        return " ".join(self.tgt_vocab.decode(d.tokens, strip_specials=False)).split(" <eos>")[0]


# -- data for training ---------------------------------------------------------------------


@dataclass
class Split:
    train: list[tuple[list[str], list[str]]]
    valid: list[tuple[list[str], list[str]]]
    test: list[tuple[list[str], list[str]]]


def load_split(
    path: str | Path = DATA_PATH, test_size: int = TEST_SIZE, valid_size: int = VALID_SIZE
) -> Split:
    """Tokenized pairs: test first (its sources never trained on), then validation, then the rest."""
    _, train, valid, test = _joined_split(path, test_size, valid_size)
    return Split(_words(train), _words(valid), _words(test))


def load_held_out(path: str | Path = DATA_PATH) -> list[tuple[list[str], list[str]]]:
    """The held-out split: every corpus pair in none of training, validation and test, once each.

    ``split_pairs`` leaves these out of training because their English sentence is a test or
    validation sentence; their French is another translation of it, which no run has trained
    on, watched or been judged by. Only ``atlas eval --split held-out`` reads them: no
    training or model-selection code may (tests/unit/test_bleu_bootstrap.py checks both).
    """
    pairs, *used = _joined_split(path, TEST_SIZE, VALID_SIZE)
    taken = {p for split in used for p in split}
    return _words(list(dict.fromkeys(p for p in pairs if p not in taken)))


def _joined_split(path: str | Path, test_size: int, valid_size: int):
    """``(all pairs, train, valid, test)``, each pair as two space-joined token strings."""
    pairs = [(tokenize(en), tokenize(fr)) for en, fr in read_pairs(path)]
    pairs = [(" ".join(en), " ".join(fr)) for en, fr in pairs if en and fr]
    rest, test = split_pairs(pairs, test_size, SPLIT_SEED)
    train, valid = split_pairs(rest, valid_size, SPLIT_SEED + 1)
    return pairs, train, valid, test


def _words(pairs: Sequence[tuple[str, str]]) -> list[tuple[list[str], list[str]]]:
    return [(en.split(" "), fr.split(" ")) for en, fr in pairs]


def build_vocabs(train: Sequence[tuple[list[str], list[str]]], min_freq: int = 2) -> tuple[Vocab, Vocab]:
    """English and French words seen at least ``min_freq`` times in training; the rest are unk."""
    return (
        Vocab.build((en for en, _ in train), min_freq=min_freq),
        Vocab.build((fr for _, fr in train), min_freq=min_freq),
    )


def batches(train, src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int = 128, seed: int = 0) -> PairBatches:
    ids = [([*src_vocab.encode(en), src_vocab.eos_id], tgt_vocab.encode(fr)) for en, fr in train]
    return PairBatches(
        ids,
        bos_id=tgt_vocab.bos_id,
        eos_id=tgt_vocab.eos_id,
        pad_id=tgt_vocab.pad_id,
        batch_size=batch_size,
        seed=seed,
    )


# -- evaluation ----------------------------------------------------------------------------


def bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict:
    """Corpus BLEU (sacrebleu) on our own tokens: space-joined, lower case, ``tokenize="none"``.

    ``references[i]`` lists every reference of hypothesis ``i`` (``reference_streams``).
    """
    import sacrebleu

    streams = reference_streams(references)
    result = sacrebleu.corpus_bleu(list(hypotheses), streams, tokenize="none", force=True)
    return {
        "bleu": round(float(result.score), 2),
        "precisions": [round(float(p), 1) for p in result.precisions],
    }


def forced_loss(tr: Translator, pairs) -> float:
    forced = tr.force([en for en, _ in pairs], [fr for _, fr in pairs])
    return round(-sum(d.score for d in forced) / sum(len(d.tokens) for d in forced), 4)


def quick_metrics(tr: Translator, pairs) -> dict:
    """What training watches: loss per target word and greedy BLEU on ``pairs``."""
    out = [tr.text(d) for d in tr.generate([en for en, _ in pairs])]
    return {
        "valid_loss": forced_loss(tr, pairs),
        "bleu": bleu(out, [[" ".join(fr)] for _, fr in pairs])["bleu"],
    }


def evaluate(tr: Translator, pairs, beam: int = 4) -> dict:
    """Everything the model card reports, on held-out ``pairs``.

    ``bleu`` scores each pair against its own reference; ``bleu_all_refs`` scores each
    distinct English sentence once against all its French translations in ``pairs``.
    """
    sources = [en for en, _ in pairs]
    refs = [" ".join(fr) for _, fr in pairs]
    greedy = [tr.text(d) for d in tr.generate(sources)]
    beamed = [tr.text(d) for d in tr.generate(sources, beam=beam)]
    grouped: dict[str, list[str]] = {}
    for (en, _target), ref in zip(pairs, refs, strict=True):
        grouped.setdefault(" ".join(en), []).append(ref)
    first = {}
    for en, out in zip(sources, greedy, strict=True):
        first.setdefault(" ".join(en), out)
    single = bleu(greedy, [[r] for r in refs])
    (spread,) = paired_bootstrap([greedy], [[r] for r in refs]).systems
    return {
        "n_pairs": len(pairs),
        "bleu": single["bleu"],
        "bleu_ci95": [round(spread.low, 2), round(spread.high, 2)],  # 1,000 resamples of the pairs, seed 0
        "bleu_precisions": single["precisions"],
        f"bleu_beam{beam}": bleu(beamed, [[r] for r in refs])["bleu"],
        "bleu_all_refs": bleu(list(first.values()), list(grouped.values()))["bleu"],
        "n_sources": len(grouped),
        "exact_match": round(sum(o == r for o, r in zip(greedy, refs, strict=True)) / len(refs), 4),
        "loss": forced_loss(tr, pairs),  # per target word, teacher-forced
        f"bleu_first_{CHECK_SIZE}": bleu(greedy[:CHECK_SIZE], [[r] for r in refs[:CHECK_SIZE]])["bleu"],
    }


EVAL_SPLITS = ("test", "held-out")


def eval_split(split: str, path: str | Path = DATA_PATH) -> list[tuple[list[str], list[str]]]:
    """The pairs ``atlas eval`` scores: the card's test split or the held-out split."""
    if split == "test":
        return load_split(path).test
    if split == "held-out":
        return load_held_out(path)
    raise ValueError(f"no split {split!r}: choose {' or '.join(EVAL_SPLITS)}")


def compare(
    translators: Sequence[Translator], pairs, beam: int = 1, resamples: int = 1000, seed: int = 0
) -> PairedBootstrap:
    """One or two models' corpus BLEU on ``pairs`` (each against its own reference, as the card's
    headline number), with paired bootstrap intervals and the interval of their difference."""
    sources = [en for en, _ in pairs]
    outs = [[tr.text(d) for d in tr.generate(sources, beam=beam)] for tr in translators]
    return paired_bootstrap(outs, [[" ".join(fr)] for _, fr in pairs], resamples=resamples, seed=seed)


# -- the additive-or-dot benchmark in words (bench/bench_translation.py, the Translation page) ------

# The benchmark's variants as people read them (a legend, the table's first column); the stored
# results and their CSV files keep these English names.
COST_VARIANTS = (N_("GRU + additive"), N_("GRU + scaled dot"), N_("LSTM + scaled dot"))


def cost_setup(setup: dict) -> str:
    """How the benchmark was run (``setup``: its numbers, the device, the machine and the date), in the
    language in force, as ``cost_summary`` says its results."""
    return _(
        "{steps} steps of {pairs} pairs ({epochs:.2f} epochs of {batches} batches) per variant, the same batches "
        "in the same order, Adam 2e-3, embed/hidden 256, dropout 0.2; steps timed in turns (medians after 10 "
        "warm-up steps); training memory: peak resident memory (CUDA: peak allocated) of a fresh process per "
        "variant over 30 steps, above the process with its data loaded (weights, Adam state, activations). "
        "{device}, `{machine}`; {date}.",
        epochs=setup["steps"] / setup["batches"],
        **setup,
    )


def cost_summary(table: list[dict]) -> str:
    """Plain words for the benchmark's table (every number taken from it), in the language in force:
    the page says them in each visitor's language, the benchmark writes them in English."""
    row = {r["variant"]: r for r in table}
    add, dot, lstm = row["GRU + additive"], row["GRU + scaled dot"], row["LSTM + scaled dot"]
    ratio = dot["× GRU + additive"]
    share = abs(ratio - 1)
    if share < 0.05:
        speed = _(
            "Holding the network fixed (GRU), the scaled dot product takes about the same time per step "
            "(within 5%) as additive attention (×{ratio:.2f}),",
            ratio=ratio,
        )
    elif ratio < 1:
        speed = _(
            "Holding the network fixed (GRU), the scaled dot product takes {share:.0%} less time per step "
            "than additive attention (×{ratio:.2f}),",
            share=share,
            ratio=ratio,
        )
    else:
        speed = _(
            "Holding the network fixed (GRU), the scaled dot product takes {share:.0%} more time per step "
            "than additive attention (×{ratio:.2f}),",
            share=share,
            ratio=ratio,
        )
    memory = dot["training memory MB"] - add["training memory MB"]
    fields = dict(attention=add["attention parameters"], total=add["parameters"], mb=abs(memory))
    if memory < 0:
        cost = _(
            "has no attention parameters instead of {attention:,} (of {total:,} in all), and needs "
            "{mb:.0f} MB less training memory.",
            **fields,
        )
    else:
        cost = _(
            "has no attention parameters instead of {attention:,} (of {total:,} in all), and needs "
            "{mb:.0f} MB more training memory.",
            **fields,
        )
    gap = dot["test BLEU"] - add["test BLEU"]
    scores = dict(gap=abs(gap), dot=dot["test BLEU"], add=add["test BLEU"])
    if abs(gap) < 0.5:
        quality = _(
            "After the same budget it has the same test BLEU on the test split ({dot:.1f} vs {add:.1f}).",
            **scores,
        )
    elif gap > 0:
        quality = _(
            "After the same budget it has {gap:.1f} BLEU more on the test split ({dot:.1f} vs {add:.1f}).",
            **scores,
        )
    else:
        quality = _(
            "After the same budget it has {gap:.1f} BLEU less on the test split ({dot:.1f} vs {add:.1f}).",
            **scores,
        )
    rest = _(
        "The LSTM with the dot product (the Bahdanau tutorial's variant) takes ×{ratio:.2f} the GRU + additive "
        "time per step and reaches {bleu:.1f}. Everything else in a step is shared by the variants: the "
        "recurrent cells run one word at a time, and the output layer scores all {vocabulary:,} French "
        "words at every step.",
        ratio=lstm["× GRU + additive"],
        bleu=lstm["test BLEU"],
        vocabulary=add["vocabulary"],
    )
    return _(
        "**What the numbers show.** {speed} {cost} {quality} {rest}",
        speed=speed,
        cost=cost,
        quality=quality,
        rest=rest,
    )
