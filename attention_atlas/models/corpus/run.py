"""A corpus run: batches through the model, each reduced and written as it finishes.

``run_corpus(model_id, corpus, options)`` opens (or makes) the run's store, skips the texts it
already holds, and writes the rest batch by batch, calling ``progress`` after each and
stopping cleanly when ``should_stop()`` turns true (a cancelled run, like a crashed one,
continues where it stopped the next time). With ``ray_address`` the batches run on a Ray
cluster (``models.corpus.ray_run``, its address checked before the model loads); Ray is imported
there only. Before the run and after it completes, the least recently used other stores are
deleted while the stores exceed their disk limit (``store.trim_stores``), each said to ``dropped``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from attention_atlas.i18n import _
from attention_atlas.models.corpus.extract import Options, extractor, plan
from attention_atlas.models.corpus.inputs import Corpus
from attention_atlas.models.corpus.store import Dropped, Store, filling, store_path, trim_stores


class Cancelled(Exception):
    """The run stopped at a caller's request; the store keeps every finished batch."""


@dataclass(frozen=True)
class Progress:
    done: int  # texts in the store now
    total: int
    started_with: int  # texts the store already held when this run began
    elapsed: float  # seconds of this run

    @property
    def rate(self) -> float:
        """Texts per second in this run."""
        return (self.done - self.started_with) / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    def line(self) -> str:
        """``'120/1,000 texts, 35/s, 25 s left'``, in the language in force."""
        if self.eta is None:
            return _(
                "{done:,}/{total:,} texts, {rate:,.0f}/s", done=self.done, total=self.total, rate=self.rate
            )
        return _(
            "{done:,}/{total:,} texts, {rate:,.0f}/s, {eta:,.0f} s left",
            done=self.done,
            total=self.total,
            rate=self.rate,
            eta=self.eta,
        )


def _meta(adapter_id: str, corpus: Corpus, options: Options, kind: str, layers: int, heads: int) -> dict:
    return {
        "model": adapter_id,
        "corpus": corpus.name,
        "corpus_sha256": corpus.sha256,
        "column": corpus.column,
        "n_texts": len(corpus.texts),
        "n_empty": corpus.n_empty,
        "options": options.key(),
        "kind": kind,
        "top_k": options.top_k,
        "layers": layers,
        "heads": heads,
    }


def path_for(model_id: str, corpus: Corpus, options: Options, folder=None):
    return store_path(model_id, corpus.sha256, options.key(), folder)


def finished(model_id: str, corpus: Corpus, options: Options, folder=None) -> bool:
    """Whether this run's store is complete already (the page then skips the model load)."""
    path = path_for(model_id, corpus, options, folder)
    if not path.is_file():
        return False
    try:
        with Store.open(path) as store:
            return store.complete
    except ValueError:
        return False


def run_corpus(
    model_id: str,
    corpus: Corpus,
    options: Options | None = None,
    *,
    adapter=None,
    folder=None,
    progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    ray_address: str | None = None,
    dropped: Callable[[list[Dropped]], None] | None = None,
) -> Store:
    """The open, complete store of ``model_id`` over ``corpus`` (computed now where missing)."""
    options = options or Options()
    path = path_for(model_id, corpus, options, folder)
    if path.is_file():
        store = Store.open(path)
        if store.complete:
            return store
        store.close()
    if ray_address:
        from attention_atlas.models.corpus.ray_run import check

        check(ray_address)
    _trim(path, dropped)
    if adapter is None:
        from attention_atlas.models.registry import load

        adapter = load(model_id)
    ex = extractor(adapter, options)
    layers, heads = _shape(adapter, ex)
    meta = {**_meta(model_id, corpus, options, ex.kind, layers, heads), "key": path.stem}
    with filling(path):
        store = Store.open_or_create(path, meta, corpus.texts)
        try:
            if not store.complete:  # another run may have finished it while this one waited
                _fill(store, ex, corpus, options, progress, should_stop, ray_address, model_id)
            _trim(path, dropped)
        except BaseException:
            store.close()
            raise
    return store


def _trim(path, dropped: Callable[[list[Dropped]], None] | None) -> None:
    """The stores beside ``path`` kept under their disk limit, ``path`` itself never deleted."""
    gone = trim_stores(keep=[path], folder=path.parent)
    if gone and dropped:
        dropped(gone)


def _shape(adapter, ex) -> tuple[int, int]:
    if hasattr(ex, "n_layers"):
        return ex.n_layers, ex.n_heads
    from attention_atlas.models.registry import info

    try:
        m = info(adapter.model_id)
        return m.layers, m.heads
    except KeyError:
        return 0, 0


def _fill(store, ex, corpus, options, progress, should_stop, ray_address, model_id) -> None:
    store.writing()
    done = store.done_ids()
    todo = [i for i in range(len(corpus.texts)) if i not in done]
    start, total = time.perf_counter(), len(corpus.texts)
    texts = [corpus.texts[i] for i in todo]
    batches = planned(ex, texts, todo, options) if todo else []
    count = len(done)
    if progress:
        progress(Progress(count, total, len(done), 0.0))
    if ray_address:
        from attention_atlas.models.corpus.ray_run import run_batches
    else:
        run_batches = _local_batches
    # closed however the loop ends (a cancel, a page rerun raised in ``progress``): Ray's actor pool
    # is shut down now, not when the generator is collected, so the next run finds the CPUs free
    with contextlib.closing(
        run_batches(ex, model_id, options, batches, corpus, ray_address, should_stop)
    ) as results:
        for batch in results:
            store.write(batch)
            count += len(batch.texts.get("text_id", [])) + len(batch.failed)
            if progress:
                progress(Progress(count, total, len(done), time.perf_counter() - start))
    if should_stop and should_stop() and count < total:
        raise Cancelled(f"stopped at {count:,} of {total:,} texts; run again to continue")
    meta = store.meta
    store.finish(meta.get("seconds", 0.0) + time.perf_counter() - start)


def planned(ex, texts: list[str], ids: list[int], options: Options) -> list[list[int]]:
    """The batches of text ids (``texts[i]`` is text ``ids[i]``) a run makes, sorted by length."""
    return plan(ex.lengths(texts), ids, options, _cells(ex))


def _cells(ex) -> int:
    """Weights per token² in one text (layers × heads): the batch planner's unit."""
    return max(getattr(ex, "n_layers", 1) * getattr(ex, "n_heads", 1), 1)


def _local_batches(ex, model_id, options, batches, corpus, address, should_stop):
    for ids in batches:
        if should_stop and should_stop():
            return
        yield ex.run(ids, [corpus.texts[i] for i in ids])
