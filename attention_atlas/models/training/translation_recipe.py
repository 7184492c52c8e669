"""Train a translation model (``atlas train translate --rnn gru --attention additive``) and bundle it.

The Bahdanau tutorial: a GRU (or LSTM) encoder–decoder whose decoder queries the encoder states with
additive (or scaled dot-product) attention, English → French. The shared steps are
``models.training.recipe``'s; the network is ``models.nets.rnn_seq2seq``'s, the search
``models.text.search``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from attention_atlas.models.nets.rnn_seq2seq import Seq2SeqConfig, scorer_for
from attention_atlas.models.tasks.translation import (
    DATA_PATH,
    SEED_EXAMPLES,
    SPLIT_SEED,
    TEST_SIZE,
    VALID_SIZE,
    Translator,
    batches,
    build_vocabs,
    evaluate,
    load_split,
    quick_metrics,
)
from attention_atlas.models.text.vocab import EOS
from attention_atlas.models.training.cards import attention_table, translation_card
from attention_atlas.models.training.options import option
from attention_atlas.models.training.recipe import Evaluation, Recipe, RunArgs, run_training


def model_id_for(rnn: str, attention: str) -> str:
    return f"translate-{rnn}-{attention}"


@dataclass
class TranslationTrainArgs(RunArgs):
    rnn: Literal["gru", "lstm"] = option(
        "gru", "the recurrent cell: gru (the Bahdanau tutorial) or lstm (its variant)", required=True
    )
    attention: Literal["additive", "dot"] = option(
        "additive", "additive (Bahdanau) or dot (scaled dot product)", required=True
    )
    data: Path = option(DATA_PATH, "english<TAB>french pairs, .tsv or .tsv.gz")  # noqa: RUF009
    lr: float = option(2e-3, "Adam learning rate")
    embed: int = option(256, "embedding size")
    hidden: int = option(256, "hidden size")
    dropout: float = option(0.2, "dropout on embeddings while training")
    min_freq: int = option(2, "words seen fewer times in training become unk")
    eval_every: int = option(200, "steps between validation checks")
    target_bleu: float | None = option(None, "stop once validation BLEU reaches this")
    beam: int = option(4, "beam width the model card also reports")
    test_size: int = option(
        TEST_SIZE, "held-out test pairs, the card's; tests shrink them for tiny data sets"
    )
    valid_size: int = option(VALID_SIZE, "held-out validation pairs, watched during training")


class TranslationRecipe(Recipe):
    unit = "words"
    task = "translation"
    tokenizer = "word"
    stop_on = ("bleu", "target_bleu")

    def __init__(self, args: TranslationTrainArgs):
        self.scorer = scorer_for(args.attention)  # a bad --attention fails before anything is written
        super().__init__(args)

    @property
    def model_id(self) -> str:
        return model_id_for(self.args.rnn, self.args.attention)

    def split(self):
        return load_split(self.args.data, self.args.test_size, self.args.valid_size)

    def held_out(self, split) -> str:
        a = self.args
        return (
            f"{a.test_size:,} test and {a.valid_size:,} validation pairs held out by seeded shuffles, "
            f"seeds {SPLIT_SEED} and {SPLIT_SEED + 1}"
        )

    def vocabs(self, train):
        return build_vocabs(train, self.args.min_freq)

    def config(self, vocabs) -> Seq2SeqConfig:
        a = self.args
        return Seq2SeqConfig(
            src_vocab_size=len(vocabs[0]),
            tgt_vocab_size=len(vocabs[1]),
            embed_size=a.embed,
            hidden_size=a.hidden,
            rnn=a.rnn,
            attention=self.scorer,
            dropout=a.dropout,
        )

    def batches(self, train, vocabs):
        return batches(train, *vocabs, self.args.batch_size, self.args.seed)

    def watch(self, model, vocabs, device, valid) -> dict:
        return quick_metrics(Translator(model, *vocabs, device), valid)

    def facts(self, result, split, batches) -> dict:
        per_epoch = len(batches(0))
        return {
            "epochs": round(result.step / per_epoch, 2),
            "seconds_per_epoch": round(result.seconds * per_epoch / max(1, result.step), 1),
            "dropout": self.args.dropout,
            "min_freq": self.args.min_freq,
        }

    def evaluate(self, bundle, split, device) -> Evaluation:
        tr = Translator(bundle.model, bundle.src_vocab, bundle.tgt_vocab, device)
        metrics = evaluate(tr, split.test, beam=self.args.beam)
        examples, heatmaps = seed_sentences(tr)
        return Evaluation(metrics, examples, shown={"heatmaps": heatmaps})

    def card(self, bundle, info, ev) -> str:
        return translation_card(bundle.model.config, info, ev.metrics, ev.examples, ev.shown["heatmaps"])


def seed_sentences(tr: Translator) -> tuple[dict[str, str], list[str]]:
    """The Bahdanau tutorial's four sentences: their greedy translations, and their attention as Markdown tables."""
    found = tr.generate([s.split() for s in SEED_EXAMPLES])
    examples = {en: tr.text(d) for en, d in zip(SEED_EXAMPLES, found, strict=True)}
    heatmaps = [
        attention_table([*en.split(), EOS], [tr.tgt_vocab.tokens[i] for i in d.tokens], d.weights.numpy())
        for en, d in zip(SEED_EXAMPLES, found, strict=True)
    ]
    return examples, heatmaps


def train(args: TranslationTrainArgs, command: str = "") -> dict:
    return run_training(TranslationRecipe(args), command)
