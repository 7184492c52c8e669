"""The corpus run's batches on Ray Data: a pool of actors that each load the model once.

Only ``models.corpus.run`` imports this, and only when an address is given (``--ray ADDRESS``
or ``ATLAS_RAY_ADDRESS``), and it imports Ray only when it runs, so nothing else ever imports
Ray. The driver plans the batches exactly as a local run does and writes what comes back to the
same DuckDB store. For a Hugging Face model of up to 50 M parameters on the CPU the driver also
tokenizes each batch and traces the model's attention to a TorchScript graph, used only if it
gives the model's weights bit for bit on this corpus's texts (``traced``): the actors run that
graph and never import transformers, which starts each about 3 CPU-s sooner (two actors on two
cores: 3 s of a 16 s run over 10,000 sentences). Otherwise (the seq2seq families, a larger
model, a GPU, a model that does not trace to the same weights) each actor loads the model and
runs the same extractor. The rows are the same.

``auto`` (or ``local``) joins a Ray already running on this machine, else starts one;
another address (``ray://head:10001``, ``head:6379``) joins that cluster, whose nodes must
have the project installed (README: Corpus). ``ATLAS_RAY_WORKERS`` caps the actors (default:
one per CPU the cluster has).
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
import warnings
from dataclasses import asdict

# A graph saves each actor importing transformers (~3 CPU-s); tracing and checking it costs the
# driver 0.6 CPU-s for minilm (22 M parameters) but 5.9 for SmolLM2 (135 M, and 540 MB through
# the object store to every actor), which then loads the model itself.
GRAPH_MAX_PARAMS = 50_000_000


class _Worker:
    """One Ray actor: the model once, then one planned batch per call. Given ``graph`` (the model's
    attention traced by the driver, ``traced``) it runs that on batches the driver tokenized and
    never imports transformers, which starts it about 3 CPU-s sooner; else it loads the model."""

    def __init__(self, model_id: str, options: dict, threads: int, graph=None):
        import torch

        torch.set_num_threads(threads)
        if graph is not None:
            import ray

            from attention_atlas.models.corpus.extract import Forward

            forward = Forward(load_graph(ray.get(graph[0])), model_id, options["top_k"])
            self.run = forward.run  # a job: (parts, failed)
        else:
            from attention_atlas.models.corpus.extract import Options, extractor
            from attention_atlas.models.registry import load

            self.run = extractor(load(model_id), Options(**options)).run  # a job: (ids, texts)

    def __call__(self, batch: dict) -> dict:
        import pyarrow as pa

        out = [
            pickle.dumps(self.run(*pickle.loads(job)), protocol=pickle.HIGHEST_PROTOCOL)
            for job in batch["job"]
        ]
        return {"result": pa.array(out, type=pa.binary())}  # Arrow bytes: nothing pickled twice


_OWNER_LOCK = threading.Lock()


def connect(address: str) -> None:
    """Join (or for ``auto``/``local``, start if need be) the Ray cluster at ``address``.

    ``ray.init`` runs in the main thread or in a thread of its own that lives as long as Ray is
    initialised, never in the caller's thread: a Ray that ``ray.init`` starts here is a child of
    the thread that started it, with Linux's parent-death signal set (Ray's fate-sharing), so it is
    killed when that thread ends. The Corpus page's runs are threads (a page run, a
    ``serve.jobs.Job``): a Ray started by the first one died with it, and the next run waited
    on a dead cluster at 0 texts (issue 27, item 10)."""
    import ray

    with _OWNER_LOCK:
        if ray.is_initialized():
            return
        if threading.current_thread() is threading.main_thread():
            return _init(address)
        failed: list[BaseException] = []
        ready = threading.Event()
        owner = threading.Thread(
            target=_own, args=(address, ready, failed), name="atlas-ray-owner", daemon=True
        )
        owner.start()
        ready.wait()
        if failed:
            raise failed[0]


def _own(address: str, ready: threading.Event, failed: list) -> None:
    """The thread that starts or joins Ray, then stays until Ray is shut down (its children die
    with it)."""
    import ray

    try:
        _init(address)
    except BaseException as err:  # the caller raises it
        failed.append(err)
    finally:
        ready.set()
    while ray.is_initialized():
        time.sleep(1.0)


START_TRIES = 3  # a Ray started here: its raylet must register within Ray's fixed 30 s


def _init(address: str) -> None:
    import ray

    if address in ("auto", "local"):
        try:
            ray.init(address="auto", log_to_driver=False, logging_level=logging.WARNING)
        except ConnectionError:
            _start_local()
    else:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)


def _start_local() -> None:
    """A Ray of this machine's own, started again (after a shutdown of what the try left) when it
    times out: on a saturated 2-core server its raylet can miss Ray's 30 s to register."""
    import ray

    for attempt in range(1, START_TRIES + 1):
        try:
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            return
        except Exception as err:
            if attempt == START_TRIES or "timed out during startup" not in str(err):
                raise
            ray.shutdown()


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
    graph = traced(ex, batches, corpus.texts)
    graph = [ray.put(graph)] if graph else None  # in a list: Ray hands the actors the reference itself
    work = ex.prepare if graph else lambda ids, texts: (ids, texts)
    jobs = [{"job": pickle.dumps(work(ids, [corpus.texts[i] for i in ids]))} for ids in batches]
    ds = ray.data.from_items(jobs, override_num_blocks=len(jobs))
    with warnings.catch_warnings():  # max_restarts travels as a (deprecated) remote argument
        warnings.simplefilter("ignore")
        results = _map(ds, model_id, options, n, graph)
    for row in results.iter_rows():
        if should_stop and should_stop():
            return
        yield pickle.loads(row["result"])


def traced(ex, batches: list[list[int]], texts: list[str]) -> bytes | None:
    """The model's attention traced to TorchScript (saved) on the corpus's shortest and longest
    texts, if it gives the eager weights bit for bit on them, on other paddings and batch sizes, on
    the shortest and the longest batch's texts and on one text alone; else None (the actors then
    load the model). Hugging Face models on the CPU up to ``GRAPH_MAX_PARAMS`` only."""
    if not hasattr(ex, "prepare") or ex.adapter.device.type != "cpu":
        return None
    if sum(p.numel() for p in ex.model.parameters()) > GRAPH_MAX_PARAMS:
        return None
    import io

    import torch

    shortest, longest = batches[0][0], batches[-1][-1]  # the plan sorts texts by length
    picks = [[shortest, longest], [longest, *batches[0][:3]], batches[0][:4], batches[-1][:4], [longest]]
    samples = [ex.prepare(ids, [texts[i] for i in ids]) for ids in picks]
    if any(failed or len(parts) != 1 for parts, failed in samples):
        return None
    first, *checks = [parts[0] for parts, _ in samples]
    with warnings.catch_warnings():  # TorchScript is deprecated; transformers warns while traced
        warnings.simplefilter("ignore")
        try:
            with torch.no_grad():
                graph = torch.jit.trace(_Attention(ex.model), (first.ids, first.mask), check_trace=False)
            if not all(_same(ex.attend, graph, p) for p in [first, *checks]):
                return None
            buf = io.BytesIO()
            torch.jit.save(graph, buf)
        except Exception:  # a model that does not trace (or a torch without TorchScript) runs as it is
            return None
    return buf.getvalue()


def load_graph(data: bytes):
    """The traced graph back, a module of (ids, mask) → weights: torch only."""
    import io

    import torch

    with warnings.catch_warnings():  # TorchScript is deprecated
        warnings.simplefilter("ignore")
        return torch.jit.load(io.BytesIO(data), map_location="cpu")


def _same(eager, traced, p) -> bool:
    import torch

    with torch.inference_mode():
        want, got = eager(p.ids, p.mask), traced(p.ids, p.mask)
    return len(want) == len(got) and all(torch.equal(a, b) for a, b in zip(want, got, strict=True))


def _Attention(model):
    """``model`` as a module of (ids, mask) → every layer's attention weights (for the tracer)."""
    import torch

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return tuple(self.model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions)

    return Attention().eval()


def _map(ds, model_id: str, options, n: int, graph):
    import ray

    return ds.map_batches(
        _Worker,
        fn_constructor_kwargs={
            "model_id": model_id,
            "options": asdict(options),
            "threads": 1,
            "graph": graph,
        },
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=n),
        num_cpus=1,
        max_restarts=0,  # a lost actor fails the run, which then continues from its store when rerun
        zero_copy_batch=True,
    )
