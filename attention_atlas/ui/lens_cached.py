"""What the logit-lens page computes and keeps: one input's residual stream, shared by every session,
and its top-K grid filled in the last ``FIRST`` positions first (while the page waits), the rest by a
background ``serve.jobs.Job`` a chunk of positions at a time, from the end back (``LensRun``).

The stream holds every block's output (SmolLM2 at 512 tokens: 31 × 512 × 576 floats, 36 MB), so it is
a resource, two inputs kept, dropped with the janitor's quiet spell. A followed token and what each
block promoted and suppressed are read for one position at a time, cheap once the stream is there.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np
import streamlit as st

from attention_atlas.serve.jobs import FAILED, Job
from attention_atlas.ui import cached

TOP = 10  # tokens kept per cell (the hover lists them)
FIRST = 64  # positions computed while the page waits: the last ones, every block
IDLE = 30.0  # s: a fill nobody has looked at for this long stops (and goes on when looked at)
_RUNS: weakref.WeakSet = weakref.WeakSet()  # every fill of this process, stopped at its exit


@atexit.register
def _stop_fills() -> None:
    """A fill still running when the process exits is stopped between two chunks first: torch's
    threads torn down under a running matrix product abort the process ("terminate called …")."""
    for run in list(_RUNS):
        run.job.stop(wait=10)


class LensRun:
    """The top-``TOP`` grid of one stream, ``[blocks, positions, TOP]``, filled a chunk at a time.
    ``first()`` fills the last ``FIRST`` positions now; ``ask()`` keeps a background job at the rest;
    readers take ``window``s under the lock (the job writes whole chunks)."""

    def __init__(self, stream, labels, idle: float = IDLE):
        from attention_atlas.models.analysis.lens import chunk_size

        self.stream, self.labels = stream, labels  # labels(ids) -> their texts, in the model's tokenizer
        n, blocks = stream.positions, stream.layers
        self.ids = np.zeros((blocks, n, TOP), dtype=np.int64)
        self.probs = np.zeros((blocks, n, TOP), dtype=np.float32)
        self.filled = np.zeros(n, dtype=bool)
        self.seconds = 0.0
        step = chunk_size(stream, changes=False)
        start = max(0, n - FIRST)
        self._todo = [range(max(0, b - step), b) for b in range(start, 0, -step)]  # from the end back
        self._first = range(start, n)
        self._lock = threading.Lock()
        self.job = Job(self._next, name="atlas-lens-fill", idle=idle)
        _RUNS.add(self)

    @property
    def n(self) -> int:
        return len(self.filled)

    @property
    def complete(self) -> bool:
        return bool(self.filled.all())

    @property
    def error(self) -> str | None:
        return self.job.message if self.job.state == FAILED else None

    def _fill(self, positions: range) -> None:
        from attention_atlas.models.analysis.lens import top_tokens

        start = time.perf_counter()
        grid = top_tokens(self.stream, TOP, positions=positions)
        with self._lock:
            self.ids[:, positions.start : positions.stop] = grid.top_ids
            self.probs[:, positions.start : positions.stop] = grid.top_probs
            self.filled[positions.start : positions.stop] = True
            self.seconds += time.perf_counter() - start

    def first(self) -> LensRun:
        self._fill(self._first)
        return self

    def _next(self) -> str | None:
        if self._todo:
            self._fill(self._todo.pop(0))
        return None if self._todo else "every position read"

    def ask(self) -> None:
        """Someone is looking: keep (or start) the background job at the remaining positions."""
        if not self.complete:
            self.job.start()

    def done(self) -> int:
        with self._lock:
            return int(self.filled.sum())

    def window(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(labels, probabilities ``[blocks, b − a, TOP]``, positions) of positions ``a``–``b − 1``, or
        None while some of them are still being read."""
        with self._lock:
            if not self.filled[a:b].all():
                return None
            ids, probs = self.ids[:, a:b].copy(), self.probs[:, a:b].copy()
        return self.labels(ids), probs, np.arange(a, b)


@dataclass
class LensInput:
    run: LensRun
    tokens: list[str]  # the input's token labels
    notices: list[str]  # e.g. a text cut to the model's limit
    seconds: float  # the forward and the first screen


def vocab_labels(adapter):
    """``labels(ids)``: an array of token ids → the texts they stand for, as an array of the same shape
    (a byte-level piece that holds part of a character reads as its bytes, ``<0xE4>``)."""
    from attention_atlas.viz_core.tokens import byte_level_labels

    tok = adapter.tokenizer
    byte_level = getattr(adapter, "byte_level", False)
    memo: dict[int, str] = {}

    def one(i: int) -> str:
        if i not in memo:
            memo[i] = byte_level_labels(tok.convert_ids_to_tokens([i]))[0] if byte_level else tok.decode([i])
        return memo[i]

    def labels(ids: np.ndarray) -> np.ndarray:
        out = np.empty(ids.shape, dtype=object)
        for index, i in np.ndenumerate(ids):
            out[index] = one(int(i))
        return out

    return labels


# The stream of one input, shared by every session (never pickled or copied, as st.cache_data would);
# the last two inputs kept, dropped once the server is quiet (the janitor). ``key`` names the model.
@st.cache_resource(show_spinner=False, max_entries=2)
def lens_input(key: str, text: str, _source: cached.Source) -> LensInput:
    """The forward and the first screen (raises ``LensError`` or ``InputError``: one line each)."""
    from attention_atlas.models.analysis.lens import stream_of

    cached.janitor().on_quiet(lens_input.clear)
    adapter = _source.adapter
    start = time.perf_counter()
    with cached.lane_for(key, text).turn():
        stream, src = stream_of(adapter, text)
        run = LensRun(stream, vocab_labels(adapter)).first()
    return LensInput(run, list(src.tokens), list(src.notices), time.perf_counter() - start)


def shared(source: cached.Source, text: str) -> LensInput:
    """``lens_input``, asked for as model work (the janitor's quiet clock starts again)."""
    cached.janitor().used()
    source.ready()
    found = lens_input(source.key, text, source)
    cached.janitor().used()
    return found


@st.cache_data(show_spinner=False, max_entries=64)
def at_position(key: str, text: str, position: int, token: int | None, _run: LensRun) -> dict:
    """At one position: the followed ``token`` (None: the model's own prediction there), its
    probability and rank after every block, and the ``TOP`` tokens each block promoted and
    suppressed (labels and logit changes)."""
    from attention_atlas.models.analysis.lens import top_tokens

    where = range(position, position + 1)
    if token is None:
        token = int(top_tokens(_run.stream, 1, positions=where).top_ids[-1, 0, 0])
    grid = top_tokens(_run.stream, TOP, positions=where, token=token, changes=True)
    return {
        "token": token,
        "label": str(_run.labels(np.array([token]))[0]),
        "probs": grid.token_probs[:, 0],
        "ranks": grid.token_ranks[:, 0],
        "promoted": _run.labels(grid.promoted_ids[:, 0]),
        "promoted_by": grid.promoted_by[:, 0],
        "suppressed": _run.labels(grid.suppressed_ids[:, 0]),
        "suppressed_by": grid.suppressed_by[:, 0],
    }


@st.cache_data(show_spinner=False, max_entries=64)
def token_ids(key: str, word: str, _source: cached.Source) -> list[int]:
    """The ids ``word`` tokenizes to (no special tokens), as the model ``key`` reads it mid-text."""
    return list(_source.adapter.tokenizer(word, add_special_tokens=False)["input_ids"])
