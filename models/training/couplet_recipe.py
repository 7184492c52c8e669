"""What both couplet recipes share: the couplet data, split, vocabulary, batches, alignment stop.

``couplet_rnn_recipe`` and ``couplet_transformer_recipe`` add their networks to it; the
steps every family takes are ``models.training.recipe``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models.tasks.couplet import DATA_PATH, SPLIT_SEED, VALID_SIZE, CoupletBatches, build_vocab, load_split
from models.training.recipe import Recipe, RunArgs, Split


@dataclass
class CoupletArgs(RunArgs):
    data: Path = DATA_PATH
    vocab_size: int = 6000  # ≈ 99.9 % of the characters in the data; the rarest become unk
    join_prob: float = 0.1  # share of examples that join 2–3 couplets with punctuation
    eval_pairs: int = 500  # validation pairs checked during training (the card uses all)
    target_alignment: float | None = None  # stop once the validation sample reaches it
    valid_size: int = VALID_SIZE  # held-out pairs (tests shrink them for tiny data sets)


class CoupletRecipe(Recipe):
    stop_on = ("alignment", "target_alignment")

    def split(self) -> Split:
        train, held_out = load_split(self.args.data, self.args.valid_size)
        return Split(train, held_out, held_out)

    def held_out(self, split: Split) -> str:
        return f"{self.args.valid_size:,} held out by a shuffle with seed {SPLIT_SEED}"

    def vocabs(self, train):
        vocab = build_vocab(train, self.args.vocab_size)
        return vocab, vocab  # one character table for both lines

    def batches(self, train, vocabs) -> CoupletBatches:
        return CoupletBatches(train, vocabs[0], self.args.batch_size, self.args.seed, self.args.join_prob)

    def facts(self, result, split, batches) -> dict:
        return {**super().facts(result, split, batches), "join_prob": self.args.join_prob}
