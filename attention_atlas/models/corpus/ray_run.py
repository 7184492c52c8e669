"""The corpus run's batches on Ray Data: a pool of actors that each load the model once.

Only ``models.corpus.run`` imports this, and only when an address is given (``--ray ADDRESS``
or ``ATLAS_RAY_ADDRESS``) (the Corpus page and ``atlas corpus`` call its ``check`` too), and it
imports Ray only when it runs, so nothing else ever imports Ray. The driver plans the batches exactly as a local run does and writes what comes back to the
same DuckDB store. For a Hugging Face model of up to 50 M parameters on the CPU the driver also
tokenizes each batch and traces the model's attention to a TorchScript graph, used only if it
gives the model's weights bit for bit on this corpus's texts (``traced``): the actors run that
graph and never import transformers, which starts each about 3 CPU-s sooner (two actors on two
cores: 3 s of a 16 s run over 10,000 sentences). Otherwise (the seq2seq families, a larger
model, a GPU, a model that does not trace to the same weights) each actor loads the model and
runs the same extractor. The rows are the same.

``auto`` (or ``local``) joins a Ray already running on this machine, else starts one;
another address (``ray://head:10001``, ``head:6379``) joins that cluster, whose nodes must
have the project installed (README: Corpus). Such an address is checked first (``check``): a
cluster that is stopped or out of reach is one line within ``PROBE_SECONDS``, where ``ray.init``
waited over two minutes on a closed port. ``ATLAS_RAY_WORKERS`` caps the actors (default:
one per CPU the cluster has).
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import threading
import time
import warnings
from dataclasses import asdict
from urllib.parse import urlsplit

from attention_atlas.i18n import later

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


PROBE_SECONDS = 3.0  # a stopped cluster refuses at once; a machine that is gone gets this long


class Unreachable(ConnectionError):
    """No Ray cluster answers at the address given: said in one line before any model loads."""


def check(address: str, seconds: float = PROBE_SECONDS) -> None:
    """Refuse ``address`` in one line, within ``seconds``, when no Ray answers there: its GCS port
    (``head:6379``) or its Ray Client port (``ray://head:10001``) must take a TCP connection and
    answer HTTP/2's preface as a gRPC server does (the dashboard's port 8265, say, does not).
    ``auto`` and ``local`` are not checked (a Ray is started when none runs)."""
    if address in ("auto", "local"):
        return
    host, port = _host_port(address)
    reason = _probe(host, port, seconds)
    if reason is not None:
        raise Unreachable(
            later(
                "no Ray cluster answers at {address} ({reason}): start it (ray start --head) "
                "or point ATLAS_RAY_ADDRESS or --ray at a running one",
                address=address,
                reason=reason,
            )
        )


def _host_port(address: str) -> tuple[str, int]:
    """``head:6379`` or ``ray://head[:10001]`` as (host, port), else one line."""
    client = address.startswith("ray://")
    try:
        parts = urlsplit("//" + address.removeprefix("ray://"))
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, or out of range
        host = port = None
    if not host or (port is None and not client):
        raise Unreachable(
            later("{address} is not a Ray address: give auto, HOST:PORT or ray://HOST:PORT", address=address)
        )
    return host, port or 10001


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS, its client server)
# answers with a SETTINGS frame of its own (type 4, the frame header's fourth byte)
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _probe(host: str, port: int, seconds: float) -> str | None:
    """Why ``host:port`` did not answer as a gRPC server within ``seconds`` (the name's lookup
    included, in a thread of its own so that nothing outlasts the bound), or None once it did."""
    said: list = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=seconds) as conn:
                conn.sendall(PREFACE)
                said.append(None if _settings(conn) else later("it answers, but not as Ray does"))
        except OSError as err:
            said.append(err.strerror or str(err) or type(err).__name__)

    thread = threading.Thread(target=attempt, name="atlas-ray-probe", daemon=True)
    thread.start()
    thread.join(seconds)
    return said[0] if said else later("no answer in {seconds:g} s", seconds=seconds)


def _settings(conn: socket.socket) -> bool:
    """Whether the first frame the server sends is HTTP/2's SETTINGS."""
    head = b""
    while len(head) < 9:
        part = conn.recv(9 - len(head))
        if not part:
            return False
        head += part
    return head[3] == 4


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
