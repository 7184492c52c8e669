"""Train a couplet RNN (``atlas train couplet-rnn --attention additive|dot``) and bundle it.

The steps every family takes are ``models.training.recipe``'s, the couplet data
``models.training.couplet_recipe``'s; this file adds the couplet tutorial's network: a BiLSTM encoder,
an LSTM decoder and one attention scorer, watched by its alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from attention_atlas.models.nets.rnn_seq2seq import Seq2SeqConfig, scorer_for
from attention_atlas.models.tasks.couplet import EXAMPLE, CoupletModel, evaluate, forced_metrics
from attention_atlas.models.tasks.couplet_clauses import clause_report
from attention_atlas.models.training.cards import couplet_rnn_card
from attention_atlas.models.training.couplet_recipe import CoupletArgs, CoupletRecipe
from attention_atlas.models.training.loop import make_loss
from attention_atlas.models.training.options import option
from attention_atlas.models.training.recipe import Evaluation, run_training


def model_id_for(attention: str) -> str:
    return f"couplet-rnn-{attention}"


@dataclass
class CoupletTrainArgs(CoupletArgs):
    attention: Literal["additive", "dot"] = option(
        "additive", "additive (Bahdanau) or dot (scaled dot product, parameter-free)", required=True
    )
    embed: int = option(256, "embedding size")
    hidden: int = option(256, "hidden size")
    keys: Literal["tanh", "linear"] = option(
        "tanh", "the encoder states' activation: tanh (the couplet tutorial) or linear"
    )
    dropout: float = option(0.0, "dropout on embeddings (and between stacked layers) while training")
    teacher_forcing: float = option(
        1.0, "share of steps fed the gold previous char; the couplet tutorial uses 0.5"
    )


class CoupletRNN(CoupletRecipe):
    def __init__(self, args: CoupletTrainArgs):
        self.scorer = scorer_for(args.attention)  # a bad --attention fails before anything is written
        super().__init__(args)

    @property
    def model_id(self) -> str:
        return model_id_for(self.args.attention)

    def config(self, vocabs) -> Seq2SeqConfig:
        a = self.args
        return Seq2SeqConfig(
            src_vocab_size=len(vocabs[0]),
            tgt_vocab_size=len(vocabs[1]),
            embed_size=a.embed,
            hidden_size=a.hidden,
            rnn="lstm",
            attention=self.scorer,
            share_embeddings=True,
            key_activation=a.keys,
            dropout=a.dropout,
        )

    def loss(self):
        return make_loss(self.args.teacher_forcing)

    def watch(self, model, vocabs, device, valid) -> dict:
        cm = CoupletModel(model, vocabs[0], device)
        multi = forced_metrics(cm, self.multi_sample(valid))
        return {**forced_metrics(cm, valid[: self.args.eval_pairs]), "alignment_multi": multi["alignment"]}

    def facts(self, result, split, batches) -> dict:
        return {**super().facts(result, split, batches), "teacher_forcing": self.args.teacher_forcing}

    def evaluate(self, bundle, split, device) -> Evaluation:
        cm = CoupletModel(bundle.model, bundle.src_vocab, device)
        metrics = {**evaluate(cm, split.test), "clauses": clause_report(cm, self.clause_lines(split.valid))}
        return Evaluation(metrics, shown={"example": example_line(cm)})

    def card(self, bundle, info, ev) -> str:
        cfg, vocab = bundle.model.config, bundle.src_vocab
        return couplet_rnn_card(cfg, len(vocab), info, ev.metrics, ev.shown["example"])


def example_line(cm: CoupletModel) -> str:
    """The card's example: the greedy lower line of 两个黄鹂鸣翠柳."""
    return cm.text(cm.generate([list(EXAMPLE[0])])[0])


def train(args: CoupletTrainArgs, command: str = "") -> dict:
    return run_training(CoupletRNN(args), command)
