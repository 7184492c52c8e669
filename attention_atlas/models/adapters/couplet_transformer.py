"""couplet-transformer: our small encoder–decoder Transformer on couplets, as a registry adapter.

    adapter = registry.load("couplet-transformer")
    result = adapter.run("两个黄鹂鸣翠柳")                      # generate (greedy; beam=4 for beam search)
    result = adapter.run("两个黄鹂鸣翠柳", target="一行白鹭上青天")  # force-decode a lower line
    result.records["encoder_self"]  # [layers, heads, upper chars, upper chars]
    result.records["decoder_self"]  # [layers, heads, lower chars, decoder inputs], causal
    result.records["cross"]         # [layers, heads, lower chars, upper chars]

    result, qk = adapter.capture("两个黄鹂鸣翠柳")   # and each layer's queries and keys, by kind
    q, k = qk["cross"][layer]                          # [heads, lower chars, d], [heads, upper chars, d]

Rows of ``decoder_self`` and ``cross`` are the lower-line characters each position writes;
the keys of ``decoder_self`` are what the decoder reads: ``<bos>`` and the characters
written before, so the causal mask is the upper triangle. The module registers the model
id and the upload architecture (a couplet Transformer checkpoint from anyone, read by
``models.uploads``); weights are read when a model is built.
"""

from __future__ import annotations

import numpy as np

from attention_atlas.i18n import N_, later
from attention_atlas.models.adapters.couplet_rnn import CoupletAdapter
from attention_atlas.models.registry import RunResult, register
from attention_atlas.models.storage.bundle import TransformerBundle
from attention_atlas.models.tasks.couplet import EXAMPLE
from attention_atlas.models.uploads.architectures import Architecture, register_architecture
from attention_atlas.models.uploads.shapes import (
    TRANSFORMER_RANGES,
    describe_transformer,
    infer_transformer,
    transformer_layers_heads,
)
from attention_atlas.paths import WEIGHTS
from attention_atlas.viz_core.record import AttentionRecord

MODEL_ID = "couplet-transformer"


class CoupletTransformerAdapter(CoupletAdapter):
    """Runs one couplet Transformer bundle. Holds no per-request state: safe to share.

    Input handling (cleaning, unknown characters, batching, notices) and ``export`` are every
    couplet adapter's (``CoupletAdapter``); loading, the runner and the records are its own.
    """

    def load_bundle(self):
        from attention_atlas.models.storage.bundle import TransformerBundle

        return TransformerBundle.load(self.path, self.device)

    def make_runner(self):
        from attention_atlas.models.tasks.couplet_heads import CoupletTransformer

        self.best_layer = int(self.bundle.info.get("best_layer", -1))
        return CoupletTransformer(self.bundle.model, self.vocab, self.device, layer=self.best_layer)

    def result(self, upper, lower, d, strategy: str, notices: list[str]) -> RunResult:
        from attention_atlas.models.text.metrics import diagonal_hits
        from attention_atlas.models.text.vocab import BOS

        written = lower.chars if lower else self.vocab.decode(d.tokens)
        read = [BOS, *written[:-1]]  # what the decoder reads at each position
        cross = d.extra["cross"].numpy().astype(np.float32)  # [layers, heads, query, key]
        alignment = []
        for layer in cross:
            hits, rows = diagonal_hits(layer.mean(0))
            alignment.append(hits / rows if rows else None)
        meta = self.base_meta(upper, lower, d, strategy, self.vocab)
        meta["best_layer"] = self.best_layer % len(cross)  # the layer to show first (0-based)
        meta["alignment"] = alignment[self.best_layer]  # of that layer, heads averaged
        meta["alignment_layers"] = alignment
        common = {"model_id": self.model_id, "scoring": "scaled_dot"}
        records = {
            "encoder_self": AttentionRecord(
                d.extra["encoder_self"].numpy(),
                upper.chars,
                upper.chars,
                "encoder_self",
                meta={k: meta[k] for k in ("strategy", "device", "checkpoint_sha256", "truncated")},
                **common,
            ),
            "decoder_self": AttentionRecord(
                d.extra["decoder_self"].numpy(),
                written,
                read,
                "decoder_self",
                meta={k: meta[k] for k in ("strategy", "device", "checkpoint_sha256", "truncated")},
                **common,
            ),
            "cross": AttentionRecord(cross, written, upper.chars, "cross", meta=meta, **common),
        }
        return RunResult(records, None if lower else "".join(written), notices)

    def capture(self, text: str, target: str | None = None) -> tuple[RunResult, dict[str, list]]:
        """``run(text, target)`` and, by record kind, each layer's ``(queries [heads, query, d],
        keys [heads, key, d])`` from the teacher-forced pass that gives the records' weights:
        ``softmax(q kᵀ / √d)`` is each head's record, with the causal mask for ``decoder_self``.

        The search before that pass (greedy or beam) calls the same attention modules step by
        step; the last call of each module is the forced pass, so that is the one kept."""
        from attention_atlas.models.capture_points import KEYS, QUERIES, recording

        with recording(QUERIES, KEYS) as rec:  # each module's last report: the forced pass
            result = self.run(text, target=target)
        where = self.attention_modules()
        out: dict[str, list] = {kind: [None] * len(mods) for kind, mods in where.items()}
        for kind, mods in where.items():
            for layer, module in enumerate(mods):
                q, k = rec[QUERIES][module], rec[KEYS][module]
                out[kind][layer] = (q.float().cpu().numpy(), k.float().cpu().numpy())
        return result, out

    def attention_modules(self) -> dict[str, list]:
        """Each record kind's attention modules, layer by layer (capture, head ablation)."""
        model = self.bundle.model
        return {
            "encoder_self": [layer.attn for layer in model.encoder_layers],
            "decoder_self": [layer.self_attn for layer in model.decoder.layers],
            "cross": [layer.cross_attn for layer in model.decoder.layers],
        }

    def queries_keys(self, text: str, layer: int, head: int):
        """One encoder self-attention head's queries and keys ``[upper chars, d]`` and the chars: the
        encoder alone, on the upper line as ``run`` reads it (no lower line is searched for)."""
        import torch

        from attention_atlas.models.capture_points import KEYS, QUERIES, recording

        model = self.bundle.model
        layers, heads = len(model.encoder_layers), model.config.num_heads
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(
                later(
                    "{model} has layers 0–{last_layer} and heads 0–{last_head}",
                    model=self.model_id,
                    last_layer=layers - 1,
                    last_head=heads - 1,
                )
            )
        upper = self.prepare(text, self.source_name)
        src, lens = self.runner._src([upper.tokens])
        module = model.encoder_layers[layer].attn
        with torch.no_grad(), recording(QUERIES, KEYS) as rec:
            model.encode(src, lens)
        q, k = rec[QUERIES][module], rec[KEYS][module]
        return q[head].float().cpu(), k[head].float().cpu(), list(upper.chars)

    def replacements(self) -> dict[str, str]:
        """What may stand in for a masked character: the vocabulary has no mask, so ``<unk>``
        (a ``<pad>`` key would be masked out of attention altogether, not read as a token)."""
        from attention_atlas.models.text.vocab import UNK

        return {"unk": UNK}

    def run_masked(
        self, text: str, position: int, replacement: str | None = "unk", target: str | None = None, **_
    ) -> RunResult:
        """``run(text, target)`` with the upper line's character at ``position`` read as ``<unk>``.

        Give the unmasked run's output as ``target`` so that the decoder reads the same lower line
        and every record keeps its rows."""
        from attention_atlas.models.adapters.base import TOP_K
        from attention_atlas.models.tasks.couplet import Line

        upper = self.prepare(text, self.source_name)
        if not 0 <= position < len(upper.chars):
            raise ValueError(
                later(
                    "position {position} is outside this upper line's characters 0–{last}",
                    position=position,
                    last=len(upper.chars) - 1,
                )
            )
        choices = self.replacements()
        if (replacement or "unk") not in choices:
            raise ValueError(
                later(
                    "{model} masks with <unk> only, not {replacement}",
                    model=self.model_id,
                    replacement=replacement,
                )
            )
        chars = list(upper.chars)
        chars[position] = choices[replacement or "unk"]
        upper = Line(chars, upper.notices, upper.truncated)
        lower = None if target is None else self.prepare(target, self.target_name)
        if lower is None:
            decoded = self.runner.generate([upper.tokens], top_k=TOP_K)[0]
        else:
            decoded = self.runner.force([upper.tokens], [lower.tokens], top_k=TOP_K)[0]
        notices = [*upper.notices, *(lower.notices if lower else []), *self.notices(upper, lower)]
        return self.result(upper, lower, decoded, "forced" if lower else "greedy", notices)


from_checkpoint = CoupletTransformerAdapter.from_checkpoint

register_architecture(
    Architecture(
        name="couplet-transformer",
        title=N_("couplet Transformer"),
        bundle=TransformerBundle,
        task="couplet",
        tokenizer="char",
        adapter=CoupletTransformerAdapter,
        infer=infer_transformer,
        ranges=TRANSFORMER_RANGES,
        aliases=(("src_embed.embedding.weight", "decoder.embed.embedding.weight"),),
        describe=describe_transformer,
        layers_heads=transformer_layers_heads,
        compare=lambda cfg: (MODEL_ID,),
        example=EXAMPLE[0],
        how_to="atlas export --model couplet-transformer --out my.safetensors  "
        "(or: atlas train couplet-transformer --out weights/mine)",
    )
)


register(
    MODEL_ID,
    "encoder-decoder",
    "Our 3 + 3-layer, 4-head Transformer on couplets: encoder self, decoder self (causal) and cross",
    layers=3,
    heads=4,
    kinds=("encoder_self", "decoder_self", "cross"),
    example="两个黄鹂鸣翠柳",
    queries_keys=True,  # CoupletTransformerAdapter.queries_keys: the encoder's self-attention
    masking=True,  # run_masked: a character of the upper line replaced
    samples=("couplets",),
    card=WEIGHTS / MODEL_ID / "metrics.json",
)(CoupletTransformerAdapter.bundled(MODEL_ID, "atlas train couplet-transformer"))
