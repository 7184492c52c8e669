"""Issue 16's couplet lines of one to three clauses: the training builder and its curriculum, the
validation split built from held-out couplets only, and the report by length and clause count."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from attention_atlas.models.tasks.couplet import (
    COMMA,
    PIECES,
    PUNCTUATION,
    ClauseMix,
    CoupletBatches,
    build_vocab,
    load_split,
)
from attention_atlas.models.tasks.couplet_clauses import ClauseLine, bucket, clause_report, validation_lines
from attention_atlas.models.text.pairs import split_pairs
from attention_atlas.models.text.search import Decoded
from tests.support import tiny_rnn_couplet

HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 400)]
MIRROR = dict(zip(HAN[:200], HAN[200:], strict=True))  # lower char = MIRROR[upper char], always


def corpus(n: int = 300, seed: int = 3) -> list[tuple[str, str]]:
    """Couplets of 5 and 7 characters whose lower line mirrors the upper one character by character,
    so that any built line is parallel exactly when lower[j] == MIRROR[upper[j]] at every place."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        upper = "".join(rng.choice(HAN[:200]) for _ in range(rng.choice((5, 5, 7))))
        pairs.append((upper, "".join(MIRROR[c] for c in upper)))
    return pairs


def built_lines(batches: CoupletBatches, epoch: int) -> tuple[list[str], list[str]]:
    """The epoch's training lines as text: (upper lines, lower lines)."""
    examples = batches.examples(epoch)
    decode = batches.vocab.decode
    return ["".join(decode(s)) for s, _ in examples], ["".join(decode(t)) for _, t in examples]


def clauses_of(line: str) -> list[str]:
    out, cur = [], ""
    for ch in line:
        if ch in PUNCTUATION:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


@pytest.fixture(scope="module")
def batches():
    train = corpus(2000)
    return CoupletBatches(train, build_vocab(train), batch_size=16, seed=4, join_prob=0.5)


# -- the training lines ------------------------------------------------------------------------


def test_training_lines_keep_the_couplet_rule_and_stay_parallel(batches):
    uppers, lowers = built_lines(batches, 1)
    for up, low in zip(uppers, lowers, strict=True):
        assert 3 <= len(up) == len(low) <= 30
        assert 1 <= len(clauses_of(up)) <= 3
        assert [len(c) for c in clauses_of(up)] == [len(c) for c in clauses_of(low)]
        for a, b in zip(up, low, strict=True):
            assert a == b if a in PUNCTUATION else MIRROR[a] == b  # same mark, or the same couplet place


def test_training_lines_cover_one_to_three_clauses_and_varied_lengths(batches):
    uppers, _ = built_lines(batches, 1)
    n_clauses = Counter(len(clauses_of(u)) for u in uppers)
    clause_lengths = {len(c) for u in uppers for c in clauses_of(u)}
    assert set(n_clauses) == {1, 2, 3}
    assert 0.35 < (n_clauses[2] + n_clauses[3]) / len(uppers) < 0.65  # join_prob 0.5
    assert {3, 4, 5, 7} <= clause_lengths and clause_lengths & set(range(8, 13))
    assert max(len(u) for u in uppers) > 20
    marks = Counter(ch for u in uppers for ch in u if ch in PUNCTUATION)
    assert marks.most_common(1)[0][0] == COMMA and len(marks) > 1


def test_curriculum_ramps_up_within_the_first_epoch_then_holds(batches):
    def joined_share(stage):
        return sum(COMMA in "".join(batches.vocab.decode(s)) for s, _ in stage) / len(stage)

    first = [joined_share(stage) for stage in batches.stages(0)]
    later = [joined_share(stage) for stage in batches.stages(2)]
    assert first[0] < first[1] < first[3] and first[0] < 0.25
    assert [batches.share_at(0, s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert all(batches.share_at(2, s) == 1.0 for s in range(4)) and min(later) > 0.3
    flat = CoupletBatches(corpus(), batches.vocab, 16, seed=4, join_prob=0.5, ramp_epochs=0)
    assert flat.share_at(0, 0) == 1.0


def test_batches_are_deterministic_per_seed_and_epoch_and_replayable(batches):
    again = CoupletBatches(corpus(2000), batches.vocab, batch_size=16, seed=4, join_prob=0.5)
    for epoch in (0, 3):
        a, b = batches(epoch), again(epoch)
        assert len(a) == len(b)
        assert all(
            torch.equal(x.src, y.src) and torch.equal(x.tgt_out, y.tgt_out) for x, y in zip(a, b, strict=True)
        )
    other = CoupletBatches(corpus(2000), batches.vocab, batch_size=16, seed=5, join_prob=0.5)
    assert batches.examples(1) != batches.examples(2) and batches.examples(1) != other.examples(1)


def test_passes_count_epochs_of_the_training_couplets(batches):
    first, second = len(batches(0)), len(batches(1))
    assert first != second  # the ramp's short lines make epoch 0 longer in batches
    assert batches.passes(first) == 1.0 and batches.passes(first // 2) == (first // 2) / first
    assert batches.passes(first + second // 2) == 1 + (second // 2) / second


def test_mix_scales_only_the_shares_the_curriculum_ramps():
    mix = ClauseMix(multi=0.6, three=0.4, span=0.3, long=0.2, other_marks=0.1)
    half = mix.scaled(0.5)
    assert (half.multi, half.span, half.long) == (0.3, 0.15, 0.1)
    assert (half.three, half.other_marks, half.max_chars) == (0.4, 0.1, 30)


# -- the validation split ----------------------------------------------------------------------


def explained(line: ClauseLine, pool) -> bool:
    """Whether the line, marks taken out, is its source couplets' pieces in order (both sides alike)."""
    up = "".join(c for c in line.upper if c not in PUNCTUATION)
    low = "".join(c for c in line.lower if c not in PUNCTUATION)

    def rest(u: str, lo: str, sources: tuple[int, ...]) -> bool:
        if not sources:
            return not u and not lo
        su, sl = pool[sources[0]]
        cuts = PIECES.get(len(su), ((0, len(su)),))
        return any(
            u.startswith(su[a:b]) and lo.startswith(sl[a:b]) and rest(u[b - a :], lo[b - a :], sources[1:])
            for a, b in cuts
        )

    return rest(up, low, line.sources)


def test_validation_split_structure_and_lengths():
    _, held_out = split_pairs(corpus(500, seed=8), 120, seed=0)
    lines = validation_lines(held_out)
    assert lines == validation_lines(held_out)  # deterministic
    assert lines != validation_lines(held_out, seed=17)
    assert [(x.upper, x.lower) for x in lines[: len(held_out)]] == held_out  # every held-out couplet, as is
    by_kind = Counter((x.clauses, len(x.upper) >= 8) for x in lines)
    assert by_kind == {(1, False): 120, (1, True): 120, (2, True): 120, (3, True): 120}
    for x in lines:
        assert len(x.upper) == len(x.lower) and (x.clauses == 1 or 8 <= len(x.upper) <= 30)
        assert len(clauses_of(x.upper)) == x.clauses
        assert [len(c) for c in clauses_of(x.upper)] == [len(c) for c in clauses_of(x.lower)]
        assert all(c == COMMA for c in x.upper if c in PUNCTUATION)
        assert explained(x, held_out)
    multi_clause_lengths = {len(c) for x in lines if x.clauses > 1 for c in clauses_of(x.upper)}
    assert {3, 4, 5, 7} <= multi_clause_lengths and multi_clause_lengths & set(range(8, 13))


def test_no_validation_couplet_leaks_into_training():
    pairs = corpus(500, seed=8)
    train, held_out = split_pairs(pairs, 120, seed=0)
    used = {held_out[i] for x in validation_lines(held_out) for i in x.sources}
    assert used and not used & set(train)
    # training lines are made of training couplets only: no held-out upper line appears in them
    b = CoupletBatches(train, build_vocab(train), 16, seed=1, join_prob=0.7)
    trained = {c for e in range(3) for u in built_lines(b, e)[0] for c in clauses_of(u)}
    assert not trained & {u for u, _ in used} and trained & {u for u, _ in train}


def test_the_real_split_uses_held_out_couplets_only():
    train, held_out = load_split()
    lines = validation_lines(held_out)
    assert len(lines) == len(held_out) + 300 + 2 * 800
    train_uppers = {u for u, _ in train}
    assert all(held_out[i][0] not in train_uppers for x in lines for i in x.sources)
    assert all(explained(x, held_out) for x in lines[len(held_out) :: 37])


# -- the report --------------------------------------------------------------------------------


class Stub:
    """A runner whose attention is diagonal on single-clause lines and one place off after the
    first comma; it writes the upper line with its first mark replaced (when it has one)."""

    def force(self, uppers, lowers):
        out = []
        for up in uppers:
            n, cut = len(up), ("".join(up).find(COMMA) + 1) or len(up)
            w = torch.zeros(n, n)
            for i in range(n):
                w[i, i if i < cut else (i + 1) % n] = 1.0
            out.append(Decoded(list(range(n)), w, 0.0))
        return out

    def generate(self, uppers, beam=1):
        return [Decoded(list("".join(u).replace(COMMA, "X", 1)), torch.eye(len(u)), 0.0) for u in uppers]

    def text(self, d):
        return "".join(d.tokens)


def test_report_by_length_and_clause_count_counts_characters():
    lines = [
        ClauseLine("两个黄鹂鸣", "一行白鹭上", 1, (0,)),
        ClauseLine("两个黄鹂鸣翠柳", "一行白鹭上青天", 1, (1,)),
        ClauseLine("两个黄鹂，鸣翠柳", "一行白鹭，上青天", 2, (0, 1)),  # 5 of 8 places right
        ClauseLine("两个黄，鸣翠，柳树天", "一行白，上青，天地人", 3, (0, 1, 2)),  # 4 of 10
    ]
    r = clause_report(Stub(), lines)
    assert r["n_lines"] == 4 and r["alignment_single_5_7"] == 1.0
    assert r["alignment_multi"] == round(9 / 18, 4)
    assert r["by_length"] == {
        "5": {"lines": 1, "alignment": 1.0},
        "7": {"lines": 1, "alignment": 1.0},
        "8–12": {"lines": 2, "alignment": 0.5},
    }
    assert r["by_clauses"]["2"] == {"lines": 1, "alignment": 0.625}
    assert r["by_clauses"]["3"] == {"lines": 1, "alignment": 0.4}
    assert r["length_correct"] == 1.0 and r["punctuation_correct"] == 0.5  # the mark was replaced
    assert [bucket(n) for n in (5, 7, 8, 12, 13, 30)] == ["5", "7", "8–12", "8–12", "13–18", "25–30"]


def test_report_on_a_real_model_keeps_the_rule():
    lines = validation_lines([("两个黄鹂鸣翠柳", "一行白鹭上青天"), ("白日依山尽", "黄河入海流")])
    r = clause_report(tiny_rnn_couplet(), lines)
    assert r["length_correct"] == 1.0 and r["punctuation_correct"] == 1.0  # the search's rule
    assert sum(v["lines"] for v in r["by_clauses"].values()) == len(lines) == 8
    assert all(0 <= v["alignment"] <= 1 for v in r["by_length"].values())
