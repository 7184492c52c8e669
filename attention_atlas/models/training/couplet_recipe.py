"""What both couplet recipes share: the couplet data, split, vocabulary, batches, alignment stop.

``couplet_rnn_recipe`` and ``couplet_transformer_recipe`` add their networks to it; the
steps every family takes are ``models.training.recipe``'s.

The schedule (issue 16): training lines of one to three clauses, 5 to 30 characters, built
from the training couplets by ``CoupletBatches`` (a share ``join_prob`` of 2–3 clauses joined
by "，"; clauses whole, cut, or two pieces side by side), with a ramp over the first
``ramp_epochs`` from mostly whole 5/7 lines to that mix. Quick checks watch the held-out
couplets and a sample of the multi-clause validation lines (``models.tasks.couplet_clauses``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from attention_atlas.models.tasks.couplet import (
    DATA_PATH,
    SPLIT_SEED,
    VALID_SIZE,
    CoupletBatches,
    build_vocab,
    load_split,
)
from attention_atlas.models.tasks.couplet_clauses import ClauseLine, validation_lines
from attention_atlas.models.training.options import option
from attention_atlas.models.training.recipe import Recipe, RunArgs, Split


@dataclass
class CoupletArgs(RunArgs):
    data: Path = option(DATA_PATH, "upper<TAB>lower pairs, .tsv or .tsv.gz")  # noqa: RUF009
    vocab_size: int = option(
        6000, "characters kept, specials included; ≈ 99.9 % of the data's, the rarest become unk"
    )
    join_prob: float = option(0.5, "share of training lines that join 2–3 clauses with punctuation")
    ramp_epochs: float = option(
        1.0, "the curriculum: epochs over which joins and cut clauses grow to their share"
    )
    eval_pairs: int = option(
        500, "validation pairs and multi-clause lines checked during training; the card uses all"
    )
    target_alignment: float | None = option(
        None, "stop once the validation alignment (the Transformer's best layer's) reaches this"
    )
    valid_size: int = option(VALID_SIZE, "held-out pairs; tests shrink them for tiny data sets")


class CoupletRecipe(Recipe):
    stop_on = ("alignment", "target_alignment")
    _lines: list[ClauseLine] | None = None

    def split(self) -> Split:
        train, held_out = load_split(self.args.data, self.args.valid_size)
        return Split(train, held_out, held_out)

    def held_out(self, split: Split) -> str:
        return f"{self.args.valid_size:,} held out by a shuffle with seed {SPLIT_SEED}"

    def vocabs(self, train):
        vocab = build_vocab(train, self.args.vocab_size)
        return vocab, vocab  # one character table for both lines

    def batches(self, train, vocabs) -> CoupletBatches:
        a = self.args
        return CoupletBatches(train, vocabs[0], a.batch_size, a.seed, a.join_prob, ramp_epochs=a.ramp_epochs)

    def clause_lines(self, held_out: list) -> list[ClauseLine]:
        """The validation split of 1–3-clause lines, built once from the held-out couplets."""
        if self._lines is None:
            self._lines = validation_lines(held_out)
        return self._lines

    def multi_sample(self, held_out: list) -> list[tuple[str, str]]:
        """``eval_pairs`` multi-clause validation lines, spread over 2 and 3 clauses."""
        multi = [(x.upper, x.lower) for x in self.clause_lines(held_out) if x.clauses > 1]
        return multi[:: max(1, len(multi) // self.args.eval_pairs)][: self.args.eval_pairs]

    def facts(self, result, split, batches) -> dict:
        curriculum = {
            **asdict(batches.mix),
            "ramp_epochs": batches.ramp_epochs,
            "stages_per_epoch": batches.STAGES,
        }
        return {
            "epochs": round(batches.passes(result.step), 2),  # passes over the training couplets
            "join_prob": self.args.join_prob,
            "curriculum": curriculum,
        }
