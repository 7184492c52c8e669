"""Greedy and beam search for ``models.nets.rnn_seq2seq.Seq2Seq``, batched, with the attention of each step.

Both searches obey the same ``Constraints``: couplets ask for an exact output length (no
eos; the search stops there) and for punctuation forced at given steps; translation asks
for nothing and stops at eos. Beam search with ``beam=1`` picks the same tokens as greedy.

Each result keeps, per emitted token, the attention weights that produced it
(``[query, key]``, padding keys cut off) and optionally the model's top candidates at that
step (its own belief, before the constraints).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attention_atlas.models.nets.rnn_seq2seq import Encoded, Seq2Seq, reorder_state

Tensor = torch.Tensor
NEG_INF = float("-inf")


@dataclass
class Constraints:
    """What the search must obey; rows follow the batch."""

    lengths: Tensor | None = None  # [batch]: emit exactly this many tokens and never eos
    forced: Tensor | None = None  # [batch, steps]: the token to emit at a step, -1 where free
    banned: tuple[int, ...] = ()  # never emitted at a free step (pad, bos, unk, punctuation…)

    def repeat(self, k: int) -> Constraints:
        """Each row k times in a row, for k beams per input."""

        def rep(t):
            return None if t is None else t.repeat_interleave(k, dim=0)

        return Constraints(rep(self.lengths), rep(self.forced), self.banned)


@dataclass
class Decoded:
    """One input's search result."""

    tokens: list[int]  # emitted ids (eos included when emitted)
    weights: Tensor  # [query = emitted tokens, key = source tokens]
    score: float  # sum of log-probabilities under the constraints
    top_ids: Tensor | None = None  # [query, k] the model's top candidates at each step
    top_probs: Tensor | None = None  # [query, k] their probabilities
    extra: dict = field(default_factory=dict)


def _constrain(logp: Tensor, t: int, cons: Constraints, done: Tensor, eos_id: int, pad_id: int) -> Tensor:
    """Log-probs ``[rows, vocab]`` with forbidden tokens at -inf (in place)."""
    if cons.banned:
        logp[:, list(cons.banned)] = NEG_INF
    if cons.lengths is not None:
        logp[:, eos_id] = NEG_INF  # the length rule ends the line, never the model
    if cons.forced is not None and t < cons.forced.shape[1]:
        want = cons.forced[:, t]
        rows = (want >= 0).nonzero().squeeze(1)
        if len(rows):
            logp[rows] = NEG_INF
            logp[rows, want[rows]] = 0.0  # forced tokens cost nothing
    if done.any():  # finished rows only pad, at no cost, so their scores stay put
        rows = done.nonzero().squeeze(1)
        logp[rows] = NEG_INF
        logp[rows, pad_id] = 0.0
    return logp


def _steps(cons: Constraints, max_len: int) -> int:
    return int(cons.lengths.max()) if cons.lengths is not None else max_len


def _finish(tokens, weights, scores, n_out, src_lens, tops) -> list[Decoded]:
    out = []
    for i in range(tokens.shape[0]):
        n, s = int(n_out[i]), int(src_lens[i])
        top_ids = top_probs = None
        if tops is not None:
            top_ids, top_probs = tops[0][i, :n], tops[1][i, :n].exp()
        out.append(Decoded(tokens[i, :n].tolist(), weights[i, :n, :s], float(scores[i]), top_ids, top_probs))
    return out


@torch.no_grad()
def greedy(
    model: Seq2Seq,
    src: Tensor,
    src_lens: Tensor,
    *,
    bos_id: int,
    eos_id: int,
    pad_id: int = 0,
    max_len: int = 64,
    constraints: Constraints | None = None,
    top_k: int = 0,
    enc: Encoded | None = None,
) -> list[Decoded]:
    """The most likely token at every step, for a batch ``src`` ``[batch, key]``."""
    cons = constraints or Constraints()
    enc = enc or model.encode(src, src_lens)
    batch = src.shape[0]
    tok = torch.full((batch,), bos_id, dtype=torch.long, device=src.device)
    state, done = enc.state, torch.zeros(batch, dtype=torch.bool, device=src.device)
    n_out = torch.zeros(batch, dtype=torch.long, device=src.device)
    scores = torch.zeros(batch, device=src.device)
    toks, ws, top_i, top_p = [], [], [], []
    for t in range(_steps(cons, max_len)):
        if cons.lengths is not None:
            done = t >= cons.lengths
        logits, state, w = model.decoder.step(tok, state, enc)
        logp = torch.log_softmax(logits.float(), dim=-1)  # [batch, vocab]
        if top_k:
            p, i = logp.topk(top_k, dim=-1)
            top_p.append(p)
            top_i.append(i)
        logp = _constrain(logp, t, cons, done, eos_id, pad_id)
        tok = logp.argmax(-1)  # [batch]
        scores += torch.where(done, 0.0, logp.gather(1, tok[:, None]).squeeze(1))
        n_out += ~done
        toks.append(tok)
        ws.append(w)
        if cons.lengths is None:
            done = done | (tok == eos_id)
            if done.all():
                break
    tokens = torch.stack(toks, 1)  # [batch, query]
    weights = torch.stack(ws, 1)  # [batch, query, key]
    tops = (torch.stack(top_i, 1), torch.stack(top_p, 1)) if top_k else None
    return _finish(
        tokens.cpu(),
        weights.float().cpu(),
        scores.cpu(),
        n_out.cpu(),
        src_lens.cpu(),
        tuple(t.cpu() for t in tops) if tops else None,
    )


@torch.no_grad()
def beam_search(
    model: Seq2Seq,
    src: Tensor,
    src_lens: Tensor,
    *,
    beam: int,
    bos_id: int,
    eos_id: int,
    pad_id: int = 0,
    max_len: int = 64,
    constraints: Constraints | None = None,
    top_k: int = 0,
    length_penalty: float = 0.0,
) -> list[Decoded]:
    """Keep the ``beam`` best partial outputs per input; the best finished one wins.

    ``length_penalty`` α ranks finished hypotheses by score / length^α (0: plain sum).
    """
    if beam < 1:
        raise ValueError(f"beam width must be at least 1, got {beam}")
    cons = (constraints or Constraints()).repeat(beam)
    batch, k, dev = src.shape[0], beam, src.device
    enc = model.encode(src, src_lens)
    rows = torch.arange(batch, device=dev).repeat_interleave(k)  # [batch·beam]
    enc = Encoded(
        enc.memory.index_select(0, rows), enc.src_lens.index_select(0, rows), reorder_state(enc.state, rows)
    )
    state = enc.state
    tok = torch.full((batch * k,), bos_id, dtype=torch.long, device=dev)
    score = torch.full((batch, k), NEG_INF, device=dev)
    score[:, 0] = 0.0  # one live hypothesis per input at the start, so beams never duplicate
    done = torch.zeros(batch * k, dtype=torch.bool, device=dev)
    n_out = torch.zeros(batch * k, dtype=torch.long, device=dev)
    hist = torch.zeros(batch * k, 0, dtype=torch.long, device=dev)  # [batch·beam, query]
    hist_w = enc.memory.new_zeros(batch * k, 0, src.shape[1])  # [batch·beam, query, key]
    hist_i = hist_p = None
    base = (torch.arange(batch, device=dev) * k)[:, None]  # [batch, 1]
    for t in range(_steps(cons, max_len)):
        if cons.lengths is not None:
            done = t >= cons.lengths
        logits, state, w = model.decoder.step(tok, state, enc)
        logp = torch.log_softmax(logits.float(), dim=-1)  # [batch·beam, vocab]
        vocab = logp.shape[-1]
        if top_k:
            p, i = logp.topk(top_k, dim=-1)
        logp = _constrain(logp, t, cons, done, eos_id, pad_id)
        cand = (score.reshape(-1, 1) + logp).view(batch, k * vocab)
        score, flat = cand.topk(k, dim=-1)  # [batch, beam]
        back = (base + flat // vocab).view(-1)  # the parent of each new hypothesis
        tok = (flat % vocab).view(-1)
        state = reorder_state(state, back)
        hist = torch.cat([hist.index_select(0, back), tok[:, None]], 1)
        hist_w = torch.cat([hist_w.index_select(0, back), w.index_select(0, back)[:, None]], 1)
        if top_k:
            new_i, new_p = i.index_select(0, back)[:, None], p.index_select(0, back)[:, None]
            hist_i = new_i if hist_i is None else torch.cat([hist_i.index_select(0, back), new_i], 1)
            hist_p = new_p if hist_p is None else torch.cat([hist_p.index_select(0, back), new_p], 1)
        done = done.index_select(0, back)
        n_out = n_out.index_select(0, back) + (~done)
        if cons.lengths is None:
            done = done | (tok == eos_id)
            if done.all():
                break
    final = score.reshape(-1)
    if length_penalty:
        final = final / n_out.clamp(min=1).float() ** length_penalty
    pick = base.squeeze(1) + final.view(batch, k).argmax(-1)  # [batch]
    tops = (hist_i.index_select(0, pick).cpu(), hist_p.index_select(0, pick).cpu()) if top_k else None
    return _finish(
        hist.index_select(0, pick).cpu(),
        hist_w.index_select(0, pick).float().cpu(),
        score.reshape(-1).index_select(0, pick).cpu(),
        n_out.index_select(0, pick).cpu(),
        src_lens.cpu(),
        tops,
    )


def decode(model: Seq2Seq, src: Tensor, src_lens: Tensor, *, beam: int = 1, **kw) -> list[Decoded]:
    """Greedy for ``beam=1``, beam search otherwise."""
    if beam == 1:
        kw.pop("length_penalty", None)
        return greedy(model, src, src_lens, **kw)
    return beam_search(model, src, src_lens, beam=beam, **kw)
