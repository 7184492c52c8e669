"""Train the couplet Transformer (``atlas train couplet-transformer``) and bundle it.

The steps every family takes are ``models.training.recipe``'s; data, split, vocabulary and
batches are the couplet RNNs' (``models.training.couplet_recipe``). What is the Transformer's
own: its config, a learning-rate warm-up, and an evaluation that watches the cross-attention
alignment of every layer, so a run can stop once its best layer is diagonal enough.
"""

from __future__ import annotations

from dataclasses import dataclass

from attention_atlas.models.nets.transformer import TransformerConfig
from attention_atlas.models.storage.bundle import TransformerBundle
from attention_atlas.models.tasks.couplet import EXAMPLE
from attention_atlas.models.tasks.couplet_clauses import clause_report
from attention_atlas.models.tasks.couplet_heads import (
    CoupletTransformer,
    evaluate_transformer,
    forced_layer_metrics,
)
from attention_atlas.models.training.cards import couplet_transformer_card
from attention_atlas.models.training.couplet_recipe import CoupletArgs, CoupletRecipe
from attention_atlas.models.training.options import option
from attention_atlas.models.training.recipe import Evaluation, run_training
from attention_atlas.models.training.run_folder import train_config

MODEL_ID = "couplet-transformer"


@dataclass
class TransformerTrainArgs(CoupletArgs):
    steps: int = option(4000, "batches to train for")
    threads: int = option(2, "torch CPU threads")
    warmup: int = option(300, "steps of linear learning-rate warm-up; pre-LN tolerates a short one")
    d_model: int = option(256, "model width")
    heads: int = option(4, "attention heads")
    encoder_layers: int = option(3, "encoder layers")
    decoder_layers: int = option(3, "decoder layers")
    ffn: int = option(1024, "feed-forward size")
    dropout: float = option(0.1, "dropout while training")
    beam: int = option(4, "beam width the model card also reports")


class CoupletTransformerRecipe(CoupletRecipe):
    model_id = MODEL_ID
    bundle_class = TransformerBundle
    stop_on = ("alignment_best", "target_alignment")  # the best layer's

    def held_out(self, split) -> str:
        return super().held_out(split) + ", the couplet RNNs' split"

    def config(self, vocabs) -> TransformerConfig:
        a = self.args
        return TransformerConfig(
            src_vocab_size=len(vocabs[0]),
            tgt_vocab_size=len(vocabs[1]),
            d_model=a.d_model,
            num_heads=a.heads,
            encoder_layers=a.encoder_layers,
            decoder_layers=a.decoder_layers,
            ffn_size=a.ffn,
            dropout=a.dropout,
            share_embeddings=True,
        )

    def train_config(self):
        return train_config(self.args, warmup_steps=self.args.warmup)

    def watch(self, model, vocabs, device, valid) -> dict:
        cm = CoupletTransformer(model, vocabs[0], device)
        multi = forced_layer_metrics(cm, self.multi_sample(valid))["alignment_layers"]
        return {**forced_layer_metrics(cm, valid[: self.args.eval_pairs]), "alignment_multi_layers": multi}

    def facts(self, result, split, batches) -> dict:
        return {**super().facts(result, split, batches), "warmup": self.args.warmup}

    def evaluate(self, bundle, split, device) -> Evaluation:
        cm = CoupletTransformer(bundle.model, bundle.src_vocab, device)
        # The layer the adapter shows first: chosen on validation, stored in the bundle.
        cm.layer = bundle.info["best_layer"] = forced_layer_metrics(cm, split.valid)["best_layer"]
        bundle.save_dir(self.out, dtype=self.args.dtype)
        beam = self.args.beam
        metrics = evaluate_transformer(cm, split.test, beam=beam)
        metrics["clauses"] = clause_report(cm, self.clause_lines(split.valid))  # of the layer shown
        examples = {
            "greedy": cm.text(cm.generate([list(EXAMPLE[0])])[0]),
            f"beam{beam}": cm.text(cm.generate([list(EXAMPLE[0])], beam=beam)[0]),
        }
        return Evaluation(metrics, examples)

    def card(self, bundle, info, ev) -> str:
        cfg, vocab = bundle.model.config, bundle.src_vocab
        return couplet_transformer_card(cfg, len(vocab), info, ev.metrics, ev.examples)


def train(args: TransformerTrainArgs, command: str = "") -> dict:
    return run_training(CoupletTransformerRecipe(args), command)
