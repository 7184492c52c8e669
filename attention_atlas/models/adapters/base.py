"""What every seq2seq adapter shares: batched runs, bad input kept per item, notices, export.

A task's adapter says how to read typed text (``prepare``), what to warn about
(``notices``) and how a search result becomes records (``result``); this class does the
rest. Adapters hold no per-request state, so one cached adapter serves every session.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from attention_atlas.i18n import later
from attention_atlas.models.registry import RunResult
from attention_atlas.paths import WEIGHTS

TOP_K = 5  # candidates kept per step for the step-through view


class Seq2SeqAdapter:
    task = ""  # the bundle's task this adapter runs: "couplet", "translation"
    source_name, target_name = later("input"), later("output")  # as notices and errors call them

    def __init__(self, model_id: str, path: str | Path, device=None):
        from attention_atlas.models.device import pick_device

        self.model_id, self.path = model_id, Path(path)
        self.device = device if device is not None else pick_device()
        self.bundle = self.load_bundle()
        if self.bundle.task != self.task:
            raise ValueError(f"{self.path.name} is a {self.bundle.task!r} model, not a {self.task} model")
        self.runner = self.make_runner()

    @classmethod
    def from_checkpoint(cls, path: str | Path, device=None):
        """An adapter for an exported or uploaded checkpoint, named by its content hash."""
        from attention_atlas.models.storage.checkpoint import file_sha256

        return cls(f"upload:{file_sha256(path)[:12]}", path, device)

    @classmethod
    def bundled(cls, model_id: str, train: str):
        """A registry factory for ``weights/<model_id>``; ``train`` says how to make it if missing."""

        def build(device=None):
            folder = WEIGHTS / model_id
            if not (folder / "model.safetensors").is_file():
                raise FileNotFoundError(f"{model_id}: no weights at {folder}; train them with {train}")
            return cls(model_id, folder, device)

        return build

    # -- what a task supplies ------------------------------------------------------------
    def load_bundle(self):
        from attention_atlas.models.storage.bundle import Seq2SeqBundle

        return Seq2SeqBundle.load(self.path, self.device)

    def make_runner(self):
        raise NotImplementedError

    def prepare(self, text: str | None, what: str):
        """Typed text → an object with ``tokens``, ``notices`` and ``truncated``; ``ValueError`` if unusable."""
        raise NotImplementedError

    def notices(self, source, target) -> list[str]:
        return []

    def result(self, source, target, decoded, strategy: str, notices: list[str]) -> RunResult:
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------------
    def run(
        self, text: str, target: str | None = None, beam: int = 1, top_k: int = TOP_K, **_: Any
    ) -> RunResult:
        """Generate an output for ``text`` (or force-decode ``target``) with its attention."""
        result = self.run_batch([(text, target)], beam=beam, top_k=top_k)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def run_batch(
        self, items: list[tuple[str, str | None]], beam: int = 1, top_k: int = 0
    ) -> list[RunResult | ValueError]:
        """Many inputs at once, batched; a bad input gives its ``ValueError`` in its place."""
        if beam < 1:
            raise ValueError(f"beam width must be at least 1, got {beam}")
        prepared: list[Any] = []
        for text, target in items:
            try:
                source = self.prepare(text, self.source_name)
                prepared.append(
                    (source, self.prepare(target, self.target_name) if target is not None else None)
                )
            except ValueError as err:
                prepared.append(err)
        ok = [i for i, p in enumerate(prepared) if not isinstance(p, Exception)]
        gen = [i for i in ok if prepared[i][1] is None]
        forced = [i for i in ok if prepared[i][1] is not None]
        decoded: dict[int, Any] = {}
        if gen:
            found = self.runner.generate([prepared[i][0].tokens for i in gen], beam=beam, top_k=top_k)
            decoded.update(zip(gen, found, strict=True))
        if forced:
            sources = [prepared[i][0].tokens for i in forced]
            targets = [prepared[i][1].tokens for i in forced]
            decoded.update(zip(forced, self.runner.force(sources, targets, top_k=top_k), strict=True))
        out: list[RunResult | ValueError] = []
        for i, p in enumerate(prepared):
            if isinstance(p, Exception):
                out.append(p)
                continue
            source, target = p
            notices = [*source.notices, *(target.notices if target else []), *self.notices(source, target)]
            strategy = "forced" if target else ("greedy" if beam == 1 else f"beam-{beam}")
            out.append(self.result(source, target, decoded[i], strategy, notices))
        return out

    def base_meta(self, source, target, decoded, strategy: str, vocab) -> dict:
        """What every record of a run carries: how it was made, and the model's own candidates."""
        meta = {
            "strategy": strategy,
            "device": str(self.device),
            "checkpoint_sha256": self.bundle.sha256,
            "log_prob": decoded.score,
            "unk_positions": [j for j, t in enumerate(source.tokens) if t not in self.bundle.src_vocab],
            "truncated": source.truncated or bool(target and target.truncated),
        }
        if decoded.top_ids is not None:  # the step-through view: the model's own top candidates
            meta["top_candidates"] = [
                [[vocab.tokens[int(t)], round(float(p), 4)] for t, p in zip(ids, probs, strict=True)]
                for ids, probs in zip(decoded.top_ids, decoded.top_probs, strict=True)
            ]
        return meta

    def export(self, out: str | Path) -> Path:
        """The self-describing checkpoint, byte for byte as bundled."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.bundle_file, out)
        return out

    @property
    def bundle_file(self) -> Path:
        return self.path / "model.safetensors" if self.path.is_dir() else self.path


def scorer_first(additive_id: str, dot_id: str):
    """For an upload's comparison: the bundled model with the upload's scorer first, then the other."""
    return lambda cfg: (additive_id, dot_id) if cfg.attention == "additive" else (dot_id, additive_id)
