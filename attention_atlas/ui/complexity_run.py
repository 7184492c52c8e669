"""The comparison page's measurements: one at a time per server, with a progress bar, kept per
(sizes, d, k, cell, device) so a second look (or a second visitor) is instant."""

from __future__ import annotations

import threading
from collections import OrderedDict

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.attention.complexity import (
    ATTENTION,
    CONVOLUTION,
    RECURRENT,
    Measured,
    Setup,
    measure,
)
from attention_atlas.models.device import DeviceError, describe, pick_device
from attention_atlas.serve.lanes import Lane

KEPT = 32  # measurements kept per server (each is a few kilobytes)
# Two measurements at once would time each other: one at a time, the others wait in line.
LANE = Lane("measure", 1, N_("measurements, so that two never slow each other down"))


class _Kept:
    """The last ``KEPT`` measurements by their setup and device, shared by every session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple, Measured] = OrderedDict()

    def get(self, key: tuple) -> Measured | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def put(self, key: tuple, value: Measured) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > KEPT:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _kept() -> _Kept:
    return _Kept()


def devices() -> dict[str, str]:
    """The devices to measure on, name → label: the CPU, and the app's device when it is another."""
    names = {"cpu": describe(pick_device("cpu"))}
    try:
        chosen = pick_device()
    except DeviceError:
        return names
    if chosen.type != "cpu":
        names[str(chosen)] = describe(chosen)
    return names


def measured(setup: Setup, device: str) -> Measured:
    """``measure(setup, device)``, from the kept ones when it was measured before; else after waiting
    for the lane (its position shown), under a progress bar."""
    key = (setup, device)
    found = _kept().get(key)
    if found is not None:
        return found
    box = st.empty()
    with LANE.turn(on_wait=lambda k: box.info(LANE.waiting_message(k, N_("the measurement")))):
        found = _kept().get(key)  # measured by whoever was ahead in line
        if found is None:
            bar = box.progress(0.0, text=_("Measuring…"))

            names = {ATTENTION: _("self-attention"), CONVOLUTION: _("convolution"), RECURRENT: setup.rnn}

            def report(done: int, total: int, layer: str, n: int) -> None:
                what = _("{layer} at n = {n:,}", layer=names.get(layer, layer), n=n)
                bar.progress(
                    done / total,
                    text=_("Measuring {what} ({done} of {total})", what=what, done=done, total=total),
                )

            found = measure(setup, device, on_progress=report)
            _kept().put(key, found)
    box.empty()
    return found
