"""The corpus run's batches on Ray Data: a pool of actors that each load the model once.

Only ``models.corpus.run`` imports this, and only when an address is given (``--ray ADDRESS``
or ``ATLAS_RAY_ADDRESS``), so nothing else ever imports Ray. The driver plans the batches
exactly as a local run does and writes what comes back to the same DuckDB store; the actors
run the same extractor, so the rows are the same.

``auto`` (or ``local``) joins a Ray already running on this machine, else starts one;
another address (``ray://head:10001``, ``head:6379``) joins that cluster, whose nodes must
have the project installed (README: Corpus). ``ATLAS_RAY_WORKERS`` caps the actors (default:
one per CPU the cluster has).
"""

from __future__ import annotations

import logging
import os
import pickle
import warnings
from dataclasses import asdict


class _Worker:
    """One Ray actor: the model loaded once, then one planned batch per call."""

    def __init__(self, model_id: str, options: dict, threads: int):
        import torch

        from models.corpus.extract import Options, extractor
        from models.registry import load

        torch.set_num_threads(threads)
        self.ex = extractor(load(model_id), Options(**options))

    def __call__(self, batch: dict) -> dict:
        import pyarrow as pa

        out = []
        for job in batch["job"]:
            ids, texts = pickle.loads(job)
            out.append(pickle.dumps(self.ex.run(ids, texts), protocol=pickle.HIGHEST_PROTOCOL))
        return {"result": pa.array(out, type=pa.binary())}  # Arrow bytes: nothing pickled twice


def connect(address: str) -> None:
    """Join (or for ``auto``/``local``, start if need be) the Ray cluster at ``address``."""
    import ray

    if ray.is_initialized():
        return
    if address in ("auto", "local"):
        try:
            ray.init(address="auto", log_to_driver=False, logging_level=logging.WARNING)
        except ConnectionError:
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    else:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)


def _quiet() -> None:
    """No progress bars or per-dataset log lines: the run reports its own progress."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def workers() -> int:
    import ray

    env = os.environ.get("ATLAS_RAY_WORKERS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"ATLAS_RAY_WORKERS must be a whole number ≥ 1, not {env!r}")
        return int(env)
    return max(int(ray.cluster_resources().get("CPU", 1)), 1)


def run_batches(ex, model_id, options, batches, corpus, address, should_stop):
    """The planned ``batches`` through a pool of actors; results yielded as they finish."""
    if not batches:
        return
    import ray.data

    connect(address)
    _quiet()
    n = min(workers(), len(batches))
    jobs = [{"job": pickle.dumps((ids, [corpus.texts[i] for i in ids]))} for ids in batches]
    ds = ray.data.from_items(jobs, override_num_blocks=len(jobs))
    with warnings.catch_warnings():  # max_restarts travels as a (deprecated) remote argument
        warnings.simplefilter("ignore")
        results = _map(ds, model_id, options, n)
    for row in results.iter_rows():
        if should_stop and should_stop():
            return
        yield pickle.loads(row["result"])


def _map(ds, model_id: str, options, n: int):
    import ray

    return ds.map_batches(
        _Worker,
        fn_constructor_kwargs={"model_id": model_id, "options": asdict(options), "threads": 1},
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=n),
        num_cpus=1,
        max_restarts=0,  # a lost actor fails the run, which then continues from its store when rerun
        zero_copy_batch=True,
    )
