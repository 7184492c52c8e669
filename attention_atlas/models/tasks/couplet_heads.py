"""The couplet task (``models.tasks.couplet``) for the encoder–decoder Transformer.

The data, vocabulary, batches, couplet rule and greedy/beam search are the RNN models'
own; this module adds what a Transformer has more of: every layer and head of three
attention kinds, and an alignment score per layer.

    cm = CoupletTransformer(model, vocab)
    d = cm.generate([list("两个黄鹂鸣翠柳")], beam=4)[0]
    d.extra["cross"]         # [layers, heads, lower chars, upper chars]
    d.extra["decoder_self"]  # [layers, heads, lower chars, lower chars], causal
    d.extra["encoder_self"]  # [layers, heads, upper chars, upper chars]
    d.weights                # [lower chars, upper chars]: one layer, heads averaged

Generation runs the shared search, then one teacher-forced pass over the chosen
characters gives the full attention: the decoder is causal, so that pass computes what
the search computed, all positions at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attention_atlas.models.nets.transformer import KINDS, Transformer
from attention_atlas.models.tasks.couplet import CoupletModel, evaluate
from attention_atlas.models.text.metrics import alignment_accuracy
from attention_atlas.models.text.pairs import make_batch
from attention_atlas.models.text.search import Decoded
from attention_atlas.models.text.vocab import Vocab


class CoupletTransformer(CoupletModel):
    """``CoupletModel`` whose results carry every layer and head in ``Decoded.extra``.

    ``layer`` picks the cross-attention layer (heads averaged) that fills
    ``Decoded.weights``, the one matrix the shared metrics and search results hold;
    default the last.
    """

    def __init__(
        self,
        model: Transformer,
        vocab: Vocab,
        device: torch.device | str = "cpu",
        batch_size: int = 256,
        layer: int = -1,
    ):
        super().__init__(model, vocab, device, batch_size)
        self.layer = layer

    @torch.no_grad()
    def generate(self, lines: Sequence[Sequence[str]], beam: int = 1, top_k: int = 0) -> list[Decoded]:
        found = super().generate(lines, beam=beam, top_k=top_k)
        src_ids = [self.vocab.encode(x) for x in lines]
        full = self._forced(src_ids, [d.tokens for d in found])
        for d, f in zip(found, full, strict=True):
            d.weights, d.extra = f.weights, f.extra
        return found

    @torch.no_grad()
    def force(
        self, lines: Sequence[Sequence[str]], targets: Sequence[Sequence[str]], top_k: int = 0
    ) -> list[Decoded]:
        v = self.vocab
        return self._forced([v.encode(x) for x in lines], [v.encode(t) for t in targets], top_k)

    def _forced(self, src_ids: list[list[int]], tgt_ids: list[list[int]], top_k: int = 0) -> list[Decoded]:
        out: list[Decoded] = []
        v = self.vocab
        for part in self._chunks(len(src_ids)):
            batch = make_batch(src_ids[part], tgt_ids[part], bos_id=v.bos_id, pad_id=v.pad_id).to(self.device)
            logits, att = self.model(batch.src, batch.src_lens, batch.tgt_in)
            att = {k: att[k].float().cpu() for k in KINDS}  # each [batch, layers, heads, query, key]
            logp = torch.log_softmax(logits.float(), -1)
            gold = logp.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # [batch, query]
            tops = logp.topk(top_k, dim=-1) if top_k else None
            for i in range(batch.src.shape[0]):
                n, s = int(batch.tgt_lens[i]), int(batch.src_lens[i])
                extra = {
                    "encoder_self": att["encoder_self"][i, :, :, :s, :s],
                    "decoder_self": att["decoder_self"][i, :, :, :n, :n],
                    "cross": att["cross"][i, :, :, :n, :s],
                }
                out.append(
                    Decoded(
                        batch.tgt_out[i, :n].tolist(),
                        extra["cross"][self.layer].mean(0),  # [query, key]
                        float(gold[i, :n].sum()),
                        tops.indices[i, :n].cpu() if tops else None,
                        tops.values[i, :n].exp().cpu() if tops else None,
                        extra,
                    )
                )
        return out


def layer_alignment(decoded: Sequence[Decoded]) -> list[float]:
    """Per layer: the share of lower-line characters whose cross attention (heads
    averaged) peaks on their own position of the upper line (the couplet issue's score)."""
    if not decoded:
        return []
    n_layers = decoded[0].extra["cross"].shape[0]
    return [
        round(alignment_accuracy(d.extra["cross"][layer].mean(0).numpy() for d in decoded), 4)
        for layer in range(n_layers)
    ]


def forced_layer_metrics(cm: CoupletTransformer, pairs: Sequence[tuple[str, str]]) -> dict:
    """Teacher-forcing the references: alignment of every layer, the best one, and the loss."""
    forced = cm.force([list(u) for u, _ in pairs], [list(low) for _, low in pairs])
    layers = layer_alignment(forced)
    n_chars = sum(len(d.tokens) for d in forced)
    return {
        "alignment_best": max(layers),
        "best_layer": int(np.argmax(layers)),
        "alignment_layers": layers,
        "valid_loss": round(-sum(d.score for d in forced) / n_chars, 4),
    }


def evaluate_transformer(cm: CoupletTransformer, pairs: Sequence[tuple[str, str]], beam: int = 4) -> dict:
    """The RNN cards' numbers (``models.tasks.couplet.evaluate``, greedy) for ``cm.layer``, plus
    the alignment of every layer and the generation numbers of a beam search."""
    from attention_atlas.models.tasks.couplet import PUNCTUATION
    from attention_atlas.models.text.metrics import char_bleu, copy_rate

    metrics = evaluate(cm, pairs)
    metrics.update(forced_layer_metrics(cm, pairs))
    metrics["layer_shown"] = cm.layer % len(metrics["alignment_layers"])
    uppers, refs = [u for u, _ in pairs], [low for _, low in pairs]
    outputs = [cm.text(d) for d in cm.generate([list(u) for u in uppers], beam=beam)]
    metrics[f"beam{beam}_length_correct"] = round(
        float(np.mean([len(o) == len(u) for o, u in zip(outputs, uppers, strict=True)])), 4
    )
    metrics[f"beam{beam}_bleu_char"] = round(char_bleu(outputs, refs), 2)
    metrics[f"beam{beam}_copy_rate"] = round(copy_rate(uppers, outputs, ignore=PUNCTUATION), 4)
    return metrics
