"""A trained seq2seq RNN with its vocabularies: batched generation and force-decoding, attention kept.

Shared by every seq2seq task. A task says how its sequences end and what the search must
obey; the runner does the batching, the search and the teacher-forced pass::

    runner = Seq2SeqRunner(model, src_vocab, tgt_vocab, end_with_eos=True)   # translation
    found = runner.generate([["i", "lost", "."]], beam=4)     # Decoded: tokens, weights [query, key]
    forced = runner.force([["i", "lost", "."]], [["j'ai", "perdu", "."]])

With ``end_with_eos`` the source gets an ``<eos>`` key (the model can rest its attention
there) and targets end with ``<eos>``; couplets use neither, their length is fixed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq
from attention_atlas.models.text.pairs import make_batch, pad
from attention_atlas.models.text.search import Constraints, Decoded, decode
from attention_atlas.models.text.vocab import Vocab


class Seq2SeqRunner:
    def __init__(
        self,
        model: Seq2Seq,
        src_vocab: Vocab,
        tgt_vocab: Vocab | None = None,
        device: torch.device | str = "cpu",
        batch_size: int = 256,
        end_with_eos: bool = False,
        max_len: int = 64,
    ):
        self.model, self.src_vocab = model, src_vocab
        self.tgt_vocab = tgt_vocab or src_vocab
        self.device, self.batch_size = torch.device(device), batch_size
        self.end_with_eos, self.max_len = end_with_eos, max_len

    def src_ids(self, lines: Sequence[Sequence[str]]) -> list[list[int]]:
        tail = [self.src_vocab.eos_id] if self.end_with_eos else []
        return [self.src_vocab.encode(x) + tail for x in lines]

    def _src(self, lines: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        src, lens = pad(self.src_ids(lines), self.src_vocab.pad_id)
        return src.to(self.device), lens.to(self.device)

    def _chunks(self, n: int):
        for start in range(0, n, self.batch_size):
            yield slice(start, start + self.batch_size)

    def max_len_for(self, lines: Sequence[Sequence[str]]) -> int:
        """The most tokens a search may emit for these inputs."""
        return self.max_len

    def constraints(self, lines: Sequence[Sequence[str]]) -> Constraints | None:
        """What the search must obey for these inputs (none: stop at eos or ``max_len``)."""
        return None

    @torch.no_grad()
    def generate(self, lines: Sequence[Sequence[str]], beam: int = 1, top_k: int = 0) -> list[Decoded]:
        """Outputs for ``lines`` (lists of tokens), each with the attention of every emitted token."""
        out: list[Decoded] = []
        v = self.tgt_vocab
        for part in self._chunks(len(lines)):
            chunk = lines[part]
            src, lens = self._src(chunk)
            out += decode(
                self.model,
                src,
                lens,
                beam=beam,
                bos_id=v.bos_id,
                eos_id=v.eos_id,
                pad_id=v.pad_id,
                max_len=self.max_len_for(chunk),
                constraints=self.constraints(chunk),
                top_k=top_k,
            )
        return out

    @torch.no_grad()
    def force(
        self, lines: Sequence[Sequence[str]], targets: Sequence[Sequence[str]], top_k: int = 0
    ) -> list[Decoded]:
        """Teacher-force ``targets``: the attention while the model reads each target token."""
        out: list[Decoded] = []
        v = self.tgt_vocab
        for part in self._chunks(len(lines)):
            batch = make_batch(
                self.src_ids(lines[part]),
                [v.encode(t) for t in targets[part]],
                bos_id=v.bos_id,
                eos_id=v.eos_id if self.end_with_eos else None,
                pad_id=v.pad_id,
            ).to(self.device)
            logits, weights = self.model(batch.src, batch.src_lens, batch.tgt_in)  # [b, q, vocab], [b, q, k]
            logp = torch.log_softmax(logits.float(), -1)
            gold = logp.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # [b, q]
            tops = logp.topk(top_k, dim=-1) if top_k else None
            for i in range(batch.src.shape[0]):
                n, s = int(batch.tgt_lens[i]), int(batch.src_lens[i])
                out.append(
                    Decoded(
                        batch.tgt_out[i, :n].tolist(),
                        weights[i, :n, :s].float().cpu(),
                        float(gold[i, :n].sum()),
                        tops.indices[i, :n].cpu() if tops else None,
                        tops.values[i, :n].exp().cpu() if tops else None,
                    )
                )
        return out

    def tokens(self, d: Decoded) -> list[str]:
        """The emitted tokens as text, up to (not including) eos."""
        return self.tgt_vocab.decode(d.tokens)
