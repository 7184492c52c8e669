"""A small encoder–decoder Transformer whose every attention is a return value.

Pre-LayerNorm layers (Xiong et al. 2020: stable without a long warm-up) built from
``models.attention.multihead.MultiHeadAttention``, which always takes the explicit softmax, so
encoder self, decoder self (causal) and cross attention come out per layer and head.
``torch.nn.Transformer*`` is not used: in eval mode it takes a fused path with no weights.

Positions are the fixed sinusoids of ``models.attention.positional``, added to embeddings scaled by
√d. One character table serves both lines and the output layer (``share_embeddings``).

It speaks the same protocol as ``models.nets.rnn_seq2seq.Seq2Seq``, so the shared greedy and beam
search in ``models.text.search`` drive it: ``encode(src, src_lens) -> Encoded`` and
``decoder.step(tokens, state, enc) -> (logits, state, weights)``. The decoding state is the
input of every decoder layer at the positions written so far, ``[layers, batch, written,
d]`` (batch on axis 1, as ``seq2seq.reorder_state`` expects), so a step runs one position.

>>> cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, num_heads=2, ffn_size=32)
>>> model = Transformer(cfg).eval()
>>> src, lens = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
>>> logits, att = model(src, lens, torch.tensor([[1, 9, 10], [1, 11, 12]]))
>>> logits.shape, att["cross"].shape  # [batch, query, vocab], [batch, layers, heads, query, key]
(torch.Size([2, 3, 20]), torch.Size([2, 3, 2, 3, 3]))
>>> float(att["cross"][1, :, :, :, 2].abs().max())  # the padding key gets exactly 0
0.0
>>> float(att["decoder_self"][0, :, :, 0, 1:].abs().max())  # causal: nothing above the diagonal
0.0
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn
from torch.nn import functional as F

from attention_atlas.models.attention.masks import causal_mask
from attention_atlas.models.attention.multihead import MultiHeadAttention
from attention_atlas.models.attention.positional import sinusoidal
from attention_atlas.models.nets.rnn_seq2seq import Encoded

Tensor = torch.Tensor
KINDS = ("encoder_self", "decoder_self", "cross")  # the keys of the attention dict forward returns


@dataclass(frozen=True)
class TransformerConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 256
    num_heads: int = 4  # every head fits on one screen
    encoder_layers: int = 3
    decoder_layers: int = 3
    ffn_size: int = 1024  # 4 × d_model, as in "Attention Is All You Need"
    dropout: float = 0.1  # on sublayer outputs, embeddings and attention weights (training only)
    max_len: int = 128  # sinusoids precomputed for this many positions; longer input extends them
    share_embeddings: bool = True  # couplets: one character table for both lines and the output
    pad_id: int = 0

    def __post_init__(self):
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by num_heads {self.num_heads}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("share_embeddings needs one vocabulary for source and target")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown transformer config keys: {unknown}")
        return cls(**data)


class Embedder(nn.Module):
    """Token ids → ``embedding · √d + P[position]`` (dropout while training)."""

    def __init__(self, embedding: nn.Embedding, cfg: TransformerConfig):
        super().__init__()
        self.embedding, self.scale = embedding, math.sqrt(cfg.d_model)
        # Not persistent: the sinusoids are a formula, not a weight; checkpoints stay lean.
        self.register_buffer("positions", sinusoidal(cfg.max_len, cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens: Tensor, start: int = 0) -> Tensor:
        n = tokens.shape[1]
        table = self.positions
        if start + n > table.shape[0]:
            table = sinusoidal(start + n, table.shape[1]).to(table.device)
        x = self.embedding(tokens) * self.scale + table[start : start + n]  # [batch, seq, d]
        return self.drop(x)


class FeedForward(nn.Sequential):
    def __init__(self, cfg: TransformerConfig):
        super().__init__(
            nn.Linear(cfg.d_model, cfg.ffn_size),
            nn.ReLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.ffn_size, cfg.d_model),
        )


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.d_model
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = MultiHeadAttention(d, cfg.num_heads, dropout=cfg.dropout)
        self.ffn = FeedForward(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, src_lens: Tensor) -> tuple[Tensor, Tensor]:
        """``x`` ``[batch, key, d]`` → same shape, and weights ``[batch, heads, key, key]``."""
        h = self.norm1(x)
        a, w = self.attn(h, h, h, valid_lens=src_lens)  # padding keys get exactly 0
        x = x + self.drop(a)
        return x + self.drop(self.ffn(self.norm2(x))), w


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.d_model
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = MultiHeadAttention(d, cfg.num_heads, dropout=cfg.dropout)
        self.cross_attn = MultiHeadAttention(d, cfg.num_heads, dropout=cfg.dropout)
        self.ffn = FeedForward(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(
        self, x: Tensor, memory: Tensor, src_lens: Tensor, past: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``x`` ``[batch, query, d]``: the layer's input at new positions.

        ``past`` ``[batch, written, d]``: its input at the positions before them (incremental
        decoding); a query sees those and the new positions up to its own.
        Returns the output and the weights ``[batch, heads, query, written + query]`` (self)
        and ``[batch, heads, query, key]`` (cross).
        """
        h = self.norm1(x)
        n_past = 0 if past is None else past.shape[1]
        keys = h if past is None else torch.cat([self.norm1(past), h], dim=1)
        mask = causal_mask(x.shape[1] + n_past).to(x.device)[n_past:]  # [query, written + query]
        a, w_self = self.self_attn(h, keys, keys, mask=mask)
        x = x + self.drop(a)
        a, w_cross = self.cross_attn(self.norm2(x), memory, memory, valid_lens=src_lens)
        x = x + self.drop(a)
        return x + self.drop(self.ffn(self.norm3(x))), w_self, w_cross


class Decoder(nn.Module):
    def __init__(self, cfg: TransformerConfig, embedding: nn.Embedding):
        super().__init__()
        self.embed = Embedder(embedding, cfg)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.out_bias = nn.Parameter(torch.zeros(cfg.tgt_vocab_size))  # the weight is the embedding

    def logits(self, x: Tensor) -> Tensor:
        return F.linear(self.norm(x), self.embed.embedding.weight, self.out_bias)

    def forward(self, tgt_in: Tensor, enc: Encoded) -> tuple[Tensor, Tensor, Tensor]:
        """Teacher forcing: logits ``[batch, query, vocab]``, self and cross weights
        ``[batch, layers, heads, query, query|key]``."""
        x = self.embed(tgt_in)
        selfs, crosses = [], []
        for layer in self.layers:
            x, w_self, w_cross = layer(x, enc.memory, enc.src_lens)
            selfs.append(w_self)
            crosses.append(w_cross)
        return self.logits(x), torch.stack(selfs, 1), torch.stack(crosses, 1)

    def step(self, tokens: Tensor, state: Tensor, enc: Encoded) -> tuple[Tensor, Tensor, Tensor]:
        """One position for token ids ``[batch]``; ``state`` ``[layers, batch, written, d]``.

        Returns logits ``[batch, vocab]``, the state with this position appended, and the
        last layer's cross attention averaged over heads ``[batch, key]`` (the one summary
        the shared search keeps per step; ``forward`` gives every layer and head).
        """
        x = self.embed(tokens[:, None], start=state.shape[2])  # [batch, 1, d]
        inputs, w_cross = [], None
        for i, layer in enumerate(self.layers):
            inputs.append(x)
            x, _, w_cross = layer(x, enc.memory, enc.src_lens, past=state[i])
        new_state = torch.cat([state, torch.stack(inputs, 0)], dim=2)  # [layers, batch, written + 1, d]
        return self.logits(x[:, 0]), new_state, w_cross[:, :, 0].mean(1)


class Transformer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.config = cfg
        src_emb = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        tgt_emb = (
            src_emb
            if cfg.share_embeddings
            else nn.Embedding(cfg.tgt_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        )
        for emb in {id(src_emb): src_emb, id(tgt_emb): tgt_emb}.values():
            # N(0, 1/d) times √d gives unit-variance inputs and unit-scale tied output logits.
            nn.init.normal_(emb.weight, std=cfg.d_model**-0.5)
            with torch.no_grad():
                emb.weight[cfg.pad_id].zero_()
        self.src_embed = Embedder(src_emb, cfg)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.encoder_norm = nn.LayerNorm(cfg.d_model)
        self.decoder = Decoder(cfg, tgt_emb)

    def encode_with_weights(self, src: Tensor, src_lens: Tensor) -> tuple[Encoded, Tensor]:
        """The encoder states and the self-attention weights ``[batch, layers, heads, key, key]``."""
        x = self.src_embed(src)
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, src_lens)
            weights.append(w)
        memory = self.encoder_norm(x)  # [batch, key, d]
        state = memory.new_zeros(len(self.decoder.layers), src.shape[0], 0, memory.shape[-1])
        return Encoded(memory, src_lens, state), torch.stack(weights, 1)

    def encode(self, src: Tensor, src_lens: Tensor) -> Encoded:
        return self.encode_with_weights(src, src_lens)[0]

    def forward(self, src: Tensor, src_lens: Tensor, tgt_in: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Teacher forcing: ``tgt_in`` ``[batch, query]`` starts with bos.

        Returns logits ``[batch, query, vocab]`` and every attention, by kind:
        ``encoder_self`` ``[batch, layers, heads, key, key]``, ``decoder_self``
        ``[batch, layers, heads, query, query]`` (causal) and ``cross``
        ``[batch, layers, heads, query, key]``. Row t is what the model read while
        predicting target token t.
        """
        enc, enc_w = self.encode_with_weights(src, src_lens)
        logits, dec_w, cross_w = self.decoder(tgt_in, enc)
        return logits, {"encoder_self": enc_w, "decoder_self": dec_w, "cross": cross_w}

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
