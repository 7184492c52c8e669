"""couplet-rnn-dot / couplet-rnn-additive: seed 000's couplet seq2seq, as registry adapters.

    adapter = registry.load("couplet-rnn-additive")
    result = adapter.run("两个黄鹂鸣翠柳")                      # generate (greedy; beam=4 for beam search)
    result = adapter.run("两个黄鹂鸣翠柳", target="一行白鹭上青天")  # force-decode a lower line
    result.records["cross"]  # [1 layer, 1 head, lower-line chars, upper-line chars]

torch is imported when a model is built, not when this module registers the ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from models.registry import RunResult, register
from viz_core.record import AttentionRecord

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
TOP_K = 5  # candidates kept per step for the step-through view


class CoupletRNNAdapter:
    """Runs one couplet bundle. Holds no per-request state: safe to share between sessions."""

    def __init__(self, model_id: str, path: str | Path, device=None):
        from models.bundle import Seq2SeqBundle
        from models.couplet import CoupletModel
        from models.device import pick_device

        self.model_id, self.path = model_id, Path(path)
        self.device = device if device is not None else pick_device()
        self.bundle = Seq2SeqBundle.load(self.path, self.device)
        if self.bundle.task != "couplet":
            raise ValueError(f"{self.path.name} is a {self.bundle.task!r} model, not a couplet model")
        self.scoring = self.bundle.model.config.attention
        self.cm = CoupletModel(self.bundle.model, self.bundle.src_vocab, self.device)

    @property
    def vocab(self):
        return self.bundle.src_vocab

    def run(
        self, text: str, target: str | None = None, beam: int = 1, top_k: int = TOP_K, **_: Any
    ) -> RunResult:
        """Generate a lower line for ``text`` (or force-decode ``target``) with its attention."""
        result = self.run_batch([(text, target)], beam=beam, top_k=top_k)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def run_batch(
        self, items: list[tuple[str, str | None]], beam: int = 1, top_k: int = 0
    ) -> list[RunResult | ValueError]:
        """Many inputs at once, batched; a bad input gives its ``ValueError`` in its place."""
        from models.couplet import prepare_line, unknown_notice

        if beam < 1:
            raise ValueError(f"beam width must be at least 1, got {beam}")
        prepared: list[Any] = []
        for text, target in items:
            try:
                upper = prepare_line(text)
                lower = prepare_line(target, "lower line") if target is not None else None
                prepared.append((upper, lower))
            except ValueError as err:
                prepared.append(err)
        gen = [i for i, p in enumerate(prepared) if not isinstance(p, Exception) and p[1] is None]
        forced = [i for i, p in enumerate(prepared) if not isinstance(p, Exception) and p[1] is not None]
        decoded: dict[int, Any] = {}
        if gen:
            lines = [prepared[i][0].chars for i in gen]
            decoded.update(zip(gen, self.cm.generate(lines, beam=beam, top_k=top_k), strict=True))
        if forced:
            lines = [prepared[i][0].chars for i in forced]
            targets = [prepared[i][1].chars for i in forced]
            decoded.update(zip(forced, self.cm.force(lines, targets, top_k=top_k), strict=True))
        out: list[RunResult | ValueError] = []
        for i, p in enumerate(prepared):
            if isinstance(p, Exception):
                out.append(p)
                continue
            upper, lower = p
            notices = [*upper.notices, *(lower.notices if lower else [])]
            for line, what in ((upper, "upper line"), (lower, "lower line")):
                note = line and unknown_notice(line.chars, self.vocab, what)
                if note:
                    notices.append(note)
            if lower and len(lower.chars) != len(upper.chars):
                notices.append(
                    f"The lower line has {len(lower.chars)} characters and the upper "
                    f"line {len(upper.chars)}; a couplet's lines are equally long."
                )
            strategy = "forced" if lower else ("greedy" if beam == 1 else f"beam-{beam}")
            out.append(self._result(upper, lower, decoded[i], strategy, notices))
        return out

    def _result(self, upper, lower, d, strategy: str, notices: list[str]) -> RunResult:
        from models.metrics import diagonal_hits

        query = lower.chars if lower else self.vocab.decode(d.tokens)
        weights = d.weights.numpy().astype(np.float32)  # [query, key]
        hits, rows = diagonal_hits(weights)
        meta = {
            "strategy": strategy,
            "device": str(self.device),
            "checkpoint_sha256": self.bundle.sha256,
            "alignment": hits / rows if rows else None,  # share of rows peaking on their own position
            "log_prob": d.score,
            "unk_positions": [j for j, ch in enumerate(upper.chars) if ch not in self.vocab],
            "truncated": upper.truncated or bool(lower and lower.truncated),
        }
        if d.top_ids is not None:  # the step-through view: the model's own top candidates
            meta["top_candidates"] = [
                [[self.vocab.tokens[int(t)], round(float(p), 4)] for t, p in zip(ids, probs, strict=True)]
                for ids, probs in zip(d.top_ids, d.top_probs, strict=True)
            ]
        record = AttentionRecord(
            weights[None, None], query, upper.chars, "cross", self.model_id, scoring=self.scoring, meta=meta
        )  # [1 layer, 1 head, query, key]
        output = None if lower else "".join(query)
        return RunResult({"cross": record}, output, notices)

    def export(self, out: str | Path) -> Path:
        """The self-describing checkpoint, byte for byte as bundled."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.bundle_file, out)
        return out

    @property
    def bundle_file(self) -> Path:
        return self.path / "model.safetensors" if self.path.is_dir() else self.path


def from_checkpoint(path: str | Path, device=None) -> CoupletRNNAdapter:
    """An adapter for an exported or uploaded couplet checkpoint, named by its content hash."""
    from models.checkpoint import file_sha256

    return CoupletRNNAdapter(f"upload:{file_sha256(path)[:12]}", path, device)


def _factory(model_id: str):
    def build(device=None) -> CoupletRNNAdapter:
        folder = WEIGHTS / model_id
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(
                f"{model_id}: no weights at {folder}; train them with "
                f"python cli.py train couplet-rnn --attention "
                f"{model_id.rsplit('-', 1)[1]}"
            )
        return CoupletRNNAdapter(model_id, folder, device)

    return build


register(
    "couplet-rnn-dot",
    "couplet",
    "Seed 000: BiLSTM encoder, LSTM decoder, parameter-free scaled dot-product attention",
)(_factory("couplet-rnn-dot"))
register(
    "couplet-rnn-additive", "couplet", "Seed 000: BiLSTM encoder, LSTM decoder, Bahdanau additive attention"
)(_factory("couplet-rnn-additive"))
