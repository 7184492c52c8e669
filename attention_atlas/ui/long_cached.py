"""What the long-input page computes and keeps: the capture of a text's queries and keys, shared by
every session (``long_input``), every head's thumbnail and statistics filled in by a background
job (``Summaries``), and the cached views of one head (overview, queries and keys in 2-D). Every
weight comes from the capture, a block of rows at a time (``viz_core.blockwise``), never from a
tensor of every head's weights.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.paths import DATA
from attention_atlas.serve.jobs import FAILED, Job
from attention_atlas.ui import cached
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from attention_atlas.viz_core import sentences as sn

SAMPLE = DATA / "long_context" / "tatoeba_en.txt"  # see its SOURCE.md
DEFAULT_TOKENS = 2048  # the first text's length at most (the model's context if shorter)
THUMB = 32  # cells a side of a model-view thumbnail (viz_core.model_view.TILE)
SYNC_CELLS = 25_000_000  # layers × heads × tokens² summarised while the page waits (about a second)
IDLE = 30.0  # s: background work nobody has looked at for this long stops (and resumes when looked at)


class Summaries:
    """Every head's max-pooled thumbnail and ``head_table`` row for one capture, first layers first,
    on worker processes (``viz_core.every_head``: a layer a core at once). ``run()`` does it all now,
    here; ``ask()`` keeps a background ``serve.jobs.Job`` at it, which stops, its workers with it,
    when nobody has asked for ``idle`` seconds (a page left open asks every few seconds) and goes on
    at the next ``ask()``, from the layer it had reached. Readers take ``snapshot()``s; whole layers
    are written, in order, under the lock."""

    def __init__(self, cap: bw.QKCapture, thumb: int = THUMB, idle: float = IDLE):
        self.cap, self.thumb = cap, thumb
        side = min(cap.n_tokens, thumb)
        self._thumbs = np.zeros((cap.n_layers, cap.n_heads, side, side), dtype=np.float32)
        self._rows: list[dict] = []
        self._early: dict[int, tuple] = {}  # layers done before one above them, kept until it comes
        self.done = 0  # layers finished, from the first
        self.seconds = 0.0  # spent on them
        self._lock = threading.Lock()
        self.job = Job(self._next, name="atlas-long-summaries", idle=idle)

    @property
    def complete(self) -> bool:
        return self.done == self.cap.n_layers

    @property
    def error(self) -> str | None:
        return self.job.message if self.job.state == FAILED else None

    def _keep(self, layer: int, summary: tuple, seconds: float) -> None:
        with self._lock:
            self._early[layer] = summary
            while self.done in self._early:
                self._thumbs[self.done], rows = self._early.pop(self.done)
                self._rows += rows
                self.done += 1
            self.seconds += seconds

    def _summarise(self, n_workers: int | None = None, cancelled=None) -> None:
        todo = [layer for layer in range(self.done, self.cap.n_layers) if layer not in self._early]
        start = time.perf_counter()
        for layer, summary in eh.layer_summaries(
            self.cap, todo, self.thumb, n_workers=n_workers, cancelled=cancelled
        ):
            self._keep(layer, summary, time.perf_counter() - start)
            start = time.perf_counter()

    def _next(self) -> str | None:
        if not self.complete:  # stopped, or nobody asked for a while: the workers go, the rest another time
            self._summarise(cancelled=lambda: self.job.cancelled() or self.job.overdue())
        return "every layer summarised" if self.complete else None

    def run(self) -> Summaries:
        """Every remaining layer, now, in this thread."""
        self._summarise(n_workers=1)
        return self

    def ask(self) -> None:
        """Someone is looking: keep (or start) the background job at the remaining layers."""
        if not self.complete:
            self.job.start()

    def snapshot(self) -> tuple[np.ndarray, pd.DataFrame, int]:
        """(thumbnails so far ``[layers, heads, t, t]``, the statistics table so far, layers done)."""
        with self._lock:
            return self._thumbs.copy(), pd.DataFrame(self._rows), self.done


@dataclass
class LongInput:
    cap: bw.QKCapture
    summaries: Summaries
    seconds: float  # the capture's


def shared(model_id: str, text: str) -> LongInput:
    """``long_input``, asked for as model work: the janitor's quiet clock starts again before and
    after, so a capture that takes longer than its quiet spell is not dropped as unused."""
    cached.janitor().used()
    long = long_input(model_id, text)
    cached.janitor().used()
    return long


def looked_at(long: LongInput) -> None:
    """A page is showing ``long`` (every poll while its summaries are filled in): the janitor keeps
    it (a slow machine's summaries can outlast its quiet spell; dropped, the next rerun would
    capture the text again and start the summaries at layer 0), and the summaries go on."""
    cached.janitor().used()
    long.summaries.ask()


# A capture holds every layer's float32 queries and keys: 0.4-0.75 GB at 8,192 tokens. So it is a
# resource (shared by every session, never pickled or copied as st.cache_data would), and only the
# last two inputs are kept; the summaries live with their capture and go with it. The janitor drops
# them too once the server is quiet: pages reach it through ``shared`` and ``looked_at``, which
# count as model work.
@st.cache_resource(show_spinner=False, max_entries=2)
def long_input(model_id: str, text: str) -> LongInput:
    from attention_atlas.models.adapters.capture import capture

    cached.janitor().on_quiet(long_input.clear)
    model = cached.adapter(model_id)  # loaded first: the seconds shown are the capture's own
    start = time.perf_counter()
    cap = capture(model, text)
    seconds = time.perf_counter() - start
    summaries = Summaries(cap)
    if cap.n_layers * cap.n_heads * cap.n_tokens**2 <= SYNC_CELLS:
        summaries.run()  # small: about a second, no thread
    return LongInput(cap, summaries, seconds)


@st.cache_data(show_spinner=False, max_entries=16)
def token_count(model_id: str, text: str) -> int:
    """Tokens of ``text`` as the capture encodes it (special tokens included, nothing cut)."""
    return len(cached.adapter(model_id).tokenizer(text)["input_ids"])


@st.cache_data(show_spinner=False)
def limits(model_id: str) -> int:
    """The model's own context in tokens."""
    from attention_atlas.models.adapters.capture import context_limit

    return context_limit(cached.adapter(model_id))


@st.cache_data(show_spinner=False)
def default_text(model_id: str) -> str:
    """The bundled sample's longest run of whole paragraphs within ``DEFAULT_TOKENS`` and the
    model's context (all of it at 2,042 tokens with a context of 8,192; about 500 with 512)."""
    paragraphs = SAMPLE.read_text(encoding="utf-8").strip().split("\n\n")
    budget = min(DEFAULT_TOKENS, limits(model_id))
    lo, hi = 1, len(paragraphs)  # the most paragraphs that fit, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if token_count(model_id, "\n\n".join(paragraphs[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "\n\n".join(paragraphs[:lo])


# The views of one head, cached by the model and text; they read the capture the page holds
# (``_cap``, not hashed), never ``long_input`` again: once the janitor has dropped it, that would
# capture the text again inside a cached call, with nothing on the page to say so.
@st.cache_data(show_spinner=False, max_entries=16)
def overview(model_id: str, text: str, layer: int, head: int, cells: int, _cap: bw.QKCapture) -> bw.Reduced:
    return bw.reduce_head(_cap, layer, head, cells)


@st.cache_data(show_spinner=False, max_entries=16)
def projection(model_id: str, text: str, layer: int, head: int, normalise: bool, _cap: bw.QKCapture):
    return bw.project_qk(*_cap.head_qk(layer, head), normalise=normalise)


@st.cache_data(show_spinner=False, max_entries=16)
def spans(model_id: str, text: str, unit: str, _cap: bw.QKCapture) -> sn.Spans:
    return sn.spans(_cap.tokens, unit)


@st.cache_data(show_spinner=False, max_entries=16)
def by_span(model_id: str, text: str, layer: int, head: int | None, unit: str, _cap: bw.QKCapture):
    """One head's (``head`` None: the layer's average) attention between sentences or paragraphs."""
    parts = spans(model_id, text, unit, _cap)
    return sn.layer_by_span(_cap, layer, parts) if head is None else sn.by_span(_cap, layer, head, parts)
