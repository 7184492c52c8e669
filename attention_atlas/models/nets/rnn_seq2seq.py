"""RNN encoder–decoder with attention (the couplet tutorial for couplets; the Bahdanau tutorial reuses it with GRUs).

Encoder: embedding → bidirectional LSTM/GRU → ``tanh(Linear(2h → h))``, so every encoder
state (key and value) has the decoder's size. The decoder starts from the two directions'
final states summed, and at each step

1. queries the encoder states with its previous hidden state (top layer),
2. gets the weights and the context from a ``models.attention.scoring.ScoringAttention``
   (``scaled_dot``: parameter-free; ``additive``: Bahdanau's vᵀ tanh(W_q q + W_k k)),
3. feeds ``[embedding of the previous token; context]`` to its RNN and predicts the next
   token from the new hidden state.

Attention weights are a return value of every call, never an attribute: a cached model is
shared between sessions.

>>> cfg = Seq2SeqConfig(src_vocab_size=20, tgt_vocab_size=20, embed_size=8, hidden_size=8)
>>> model = Seq2Seq(cfg)
>>> src, lens = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
>>> logits, weights = model(src, lens, torch.tensor([[1, 9, 10], [1, 11, 12]]))
>>> logits.shape, weights.shape  # [batch, query, vocab], [batch, query, key]
(torch.Size([2, 3, 20]), torch.Size([2, 3, 3]))
>>> float(weights[1, :, 2].abs().max())  # the padding key gets exactly 0
0.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attention_atlas.models.attention.scoring import ScoringAttention

Tensor = torch.Tensor
State = Tensor | tuple[Tensor, Tensor]  # GRU: h; LSTM: (h, c); each [layers, batch, hidden]

RNNS = {"lstm": nn.LSTM, "gru": nn.GRU}
ATTENTIONS = ("scaled_dot", "additive")  # the couplet tutorial's two modules; any name in SCORERS works
CLI_ATTENTIONS = {"dot": "scaled_dot", "additive": "additive"}  # what training commands take -> scorer
ATTENTION_WORDS = {  # for model cards
    "scaled_dot": "parameter-free scaled dot product (qᵀk / √d)",
    "additive": "Bahdanau additive attention vᵀ tanh(W_q q + W_k k)",
}


def scorer_for(cli_name: str) -> str:
    """The scorer a training command's ``--attention`` names, or a ``ValueError`` listing the choices."""
    if cli_name not in CLI_ATTENTIONS:
        raise ValueError(f"--attention must be one of {sorted(CLI_ATTENTIONS)}, got {cli_name!r}")
    return CLI_ATTENTIONS[cli_name]


@dataclass(frozen=True)
class Seq2SeqConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    embed_size: int = 256
    hidden_size: int = 256  # keys, values, queries and contexts all have this size
    num_layers: int = 1
    rnn: str = "lstm"  # "lstm" (the couplet tutorial) or "gru" (the Bahdanau tutorial)
    attention: str = "additive"  # "scaled_dot" (parameter-free) or "additive" (Bahdanau)
    dropout: float = 0.0  # between stacked RNN layers and on embeddings
    share_embeddings: bool = False  # couplets: one character table for both lines
    # The couplet tutorial squashes the projected encoder states with tanh, so keys live in [-1, 1];
    # "linear" leaves them unbounded, so a parameter-free dot product can grow sharp.
    key_activation: str = "tanh"
    pad_id: int = 0

    def __post_init__(self):
        if self.rnn not in RNNS:
            raise ValueError(f"rnn must be one of {sorted(RNNS)}, got {self.rnn!r}")
        if self.key_activation not in ("tanh", "linear"):
            raise ValueError(f"key_activation must be 'tanh' or 'linear', got {self.key_activation!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("share_embeddings needs one vocabulary for source and target")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Seq2SeqConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown seq2seq config keys: {unknown}")
        return cls(**data)


@dataclass
class Encoded:
    memory: Tensor  # [batch, key, hidden]: keys and values of the attention
    src_lens: Tensor  # [batch]: keys at or past a length are padding
    state: State  # the decoder's initial state


class Encoder(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, embedding: nn.Embedding):
        super().__init__()
        self.embedding = embedding
        self.rnn = RNNS[cfg.rnn](
            cfg.embed_size,
            cfg.hidden_size,
            cfg.num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=cfg.dropout if cfg.num_layers > 1 else 0.0,
        )
        # Back to the decoder's size through tanh, as in the couplet tutorial: keys live in [-1, 1].
        self.project = nn.Linear(2 * cfg.hidden_size, cfg.hidden_size)
        self.squash = torch.tanh if cfg.key_activation == "tanh" else nn.Identity()
        self.drop = nn.Dropout(cfg.dropout)
        self.num_layers = cfg.num_layers

    def forward(self, src: Tensor, src_lens: Tensor) -> Encoded:
        emb = self.drop(self.embedding(src))  # [batch, key, embed]
        # Packing keeps the backward direction from reading padding first.
        packed = pack_padded_sequence(emb, src_lens.cpu(), batch_first=True, enforce_sorted=False)
        out, state = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        memory = self.squash(self.project(out))  # [batch, key, 2·hidden] -> [batch, key, hidden]
        return Encoded(memory, src_lens, _merge_directions(state, self.num_layers))


class Decoder(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, embedding: nn.Embedding):
        super().__init__()
        h = cfg.hidden_size
        self.embedding = embedding
        self.attention = ScoringAttention(cfg.attention, h, h, hidden=h)
        self.rnn = RNNS[cfg.rnn](
            cfg.embed_size + h,
            h,
            cfg.num_layers,
            batch_first=True,
            dropout=cfg.dropout if cfg.num_layers > 1 else 0.0,
        )
        self.out = nn.Linear(h, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def step_embedded(self, emb: Tensor, state: State, enc: Encoded) -> tuple[Tensor, State, Tensor]:
        """One step from an embedded token ``[batch, embed]``.

        Returns the new top hidden state ``[batch, hidden]``, the state, and the attention
        weights ``[batch, key]`` that produced this step's context.
        """
        query = top_hidden(state).unsqueeze(1)  # [batch, 1 query, hidden]
        context, weights = self.attention(query, enc.memory, enc.memory, valid_lens=enc.src_lens)
        x = torch.cat([emb.unsqueeze(1), context], dim=-1)  # [batch, 1, embed + hidden]
        out, state = self.rnn(x, state)
        return out.squeeze(1), state, weights.squeeze(1)

    def step(self, tokens: Tensor, state: State, enc: Encoded) -> tuple[Tensor, State, Tensor]:
        """``step_embedded`` for token ids ``[batch]``; returns (logits [batch, vocab], state, weights)."""
        hidden, state, weights = self.step_embedded(self.drop(self.embedding(tokens)), state, enc)
        return self.out(hidden), state, weights


class Seq2Seq(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.config = cfg
        src_emb = nn.Embedding(cfg.src_vocab_size, cfg.embed_size, padding_idx=cfg.pad_id)
        tgt_emb = (
            src_emb
            if cfg.share_embeddings
            else nn.Embedding(cfg.tgt_vocab_size, cfg.embed_size, padding_idx=cfg.pad_id)
        )
        self.encoder = Encoder(cfg, src_emb)
        self.decoder = Decoder(cfg, tgt_emb)

    def encode(self, src: Tensor, src_lens: Tensor) -> Encoded:
        return self.encoder(src, src_lens)

    def forward(
        self, src: Tensor, src_lens: Tensor, tgt_in: Tensor, teacher_forcing: float = 1.0
    ) -> tuple[Tensor, Tensor]:
        """Teacher forcing: ``tgt_in`` ``[batch, query]`` starts with bos.

        Returns logits ``[batch, query, vocab]`` and weights ``[batch, query, key]``; row t
        is the attention used while predicting target token t. With ``teacher_forcing`` < 1
        (training only, as in the couplet tutorial), each step after the first reads the gold previous
        token with that probability and the model's own previous guess otherwise.
        """
        enc = self.encode(src, src_lens)
        emb = self.decoder.drop(self.decoder.embedding(tgt_in))  # [batch, query, embed]
        state, hiddens, weights = enc.state, [], []
        if teacher_forcing >= 1.0:
            for t in range(tgt_in.shape[1]):  # sequential: step t queries with the state of t - 1
                hidden, state, w = self.decoder.step_embedded(emb[:, t], state, enc)
                hiddens.append(hidden)
                weights.append(w)
            # One big output projection instead of one per step: the vocabulary dominates the cost.
            logits = self.decoder.out(torch.stack(hiddens, 1))  # [batch, query, vocab]
            return logits, torch.stack(weights, 1)  # [batch, query, key]
        gold = torch.rand(tgt_in.shape[1]) < teacher_forcing  # one coin per step, as in the couplet tutorial
        step_logits, guess = [], None
        for t in range(tgt_in.shape[1]):
            x = emb[:, t] if t == 0 or gold[t] else self.decoder.drop(self.decoder.embedding(guess))
            hidden, state, w = self.decoder.step_embedded(x, state, enc)
            step_logits.append(self.decoder.out(hidden))  # [batch, vocab]
            guess = step_logits[-1].argmax(-1).detach()
            weights.append(w)
        return torch.stack(step_logits, 1), torch.stack(weights, 1)

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def top_hidden(state: State) -> Tensor:
    """The top layer's hidden state ``[batch, hidden]`` (the query of the next step)."""
    h = state[0] if isinstance(state, tuple) else state
    return h[-1]


def reorder_state(state: State, index: Tensor) -> State:
    """Pick batch rows of a state (beam search follows its back-pointers with this)."""
    if isinstance(state, tuple):
        return tuple(s.index_select(1, index) for s in state)
    return state.index_select(1, index)


def _merge_directions(state: State, num_layers: int) -> State:
    # [layers·2, batch, hidden] -> [layers, 2, batch, hidden] -> sum over the two directions
    def merge(s: Tensor) -> Tensor:
        return s.view(num_layers, 2, *s.shape[1:]).sum(1)

    if isinstance(state, tuple):
        return tuple(merge(s) for s in state)
    return merge(state)
