"""Self-attention beside a convolution and a recurrent layer, measured as the sequence grows.

The attention-pooling tutorial compares layers that map n tokens of d numbers to n tokens of d
numbers: self-attention costs O(n²·d), a convolution of kernel k O(k·n·d²), a recurrent layer
O(n·d²); they need O(1), O(1) and O(n) sequential operations; and the longest path between two
tokens is O(1), O(n/k) and O(n) layers or steps. Here each layer is built as the tutorial
describes it and timed on this machine:

- self-attention: scaled dot-product attention with queries, keys and values all X (``n × d``),
  softmax(X Xᵀ / √d) X, the n × n weights materialised (no fused kernel);
- a 1-D convolution with d input and output channels, kernel k (odd), padding that keeps n;
- a GRU or LSTM layer with a d-dimensional hidden state.

``measure`` times one forward of each (the median of a few after a warm-up, under
``torch.no_grad``, batch 1, float32) at every n of a geometric range, skipping any size whose
time or memory, predicted from the last size measured, exceeds its ``Budget``. Memory is the
CUDA allocator's peak over one forward on a GPU (measured), and elsewhere the bytes of the
tensors the layer's computation writes, counted from their shapes (not measured: the CPU has
no allocator statistics, and the profiler's memory events do not add up to a peak).

The paths are counted on graphs (``graph``): which positions one layer connects, stacked until
token 0's input reaches the output at token n−1 (``path_length``), and the longest chain of steps
inside one layer (``sequential_steps``); the tests check both against the tutorial's formulas.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

from attention_atlas.i18n import _
from attention_atlas.models.device import describe

ATTENTION, CONVOLUTION, RECURRENT = "self-attention", "convolution", "recurrent"
LAYERS = (ATTENTION, CONVOLUTION, RECURRENT)
RNNS = ("GRU", "LSTM")
GATES = {"GRU": 3, "LSTM": 4}  # gate blocks of d numbers each step computes
FLOAT = 4  # bytes of a float32


@dataclass(frozen=True)
class TutorialRow:
    """One row of the tutorial's table: cost, sequential operations, maximum path length, and the
    exponent of n in the cost (what the measured slope on log-log axes should approach)."""

    cost: str
    sequential: str
    path: str
    n_exponent: int


TUTORIAL = {
    ATTENTION: TutorialRow("O(n²·d)", "O(1)", "O(1)", 2),
    CONVOLUTION: TutorialRow("O(k·n·d²)", "O(1)", "O(n/k)", 1),
    RECURRENT: TutorialRow("O(n·d²)", "O(n)", "O(n)", 1),
}


@dataclass(frozen=True)
class Budget:
    """What one measurement (a layer at one n) may cost: a size is skipped when one forward is
    predicted to take more than ``seconds`` or to write more than ``bytes``; its timed forwards stop
    (after at least one) once they have taken ``seconds``."""

    seconds: float = 1.0
    bytes: int = 1 << 30


@dataclass(frozen=True)
class Setup:
    """What to measure: every n in ``sizes``, the width ``d``, the kernel ``k`` (odd), the recurrent
    cell ``rnn``, ``repeats`` timed forwards after ``warmup`` untimed ones."""

    sizes: tuple[int, ...]
    d: int = 64
    k: int = 3
    rnn: str = "GRU"
    repeats: int = 5
    warmup: int = 1
    budget: Budget = field(default_factory=Budget)

    def __post_init__(self) -> None:
        if not self.sizes or any(n < 1 for n in self.sizes):
            raise ValueError(f"sequence lengths must be whole numbers ≥ 1, got {self.sizes}")
        if self.d < 1:
            raise ValueError(f"d must be ≥ 1, got {self.d}")
        if self.k < 3 or self.k % 2 == 0:
            raise ValueError(f"the kernel k must be odd and ≥ 3 (so the layer keeps n), got {self.k}")
        if self.rnn not in RNNS:
            raise ValueError(f"unknown recurrent cell {self.rnn!r}; choose one of {RNNS}")
        if self.repeats < 1 or self.warmup < 0:
            raise ValueError(f"repeats must be ≥ 1 and warm-ups ≥ 0, got {self.repeats}, {self.warmup}")


def geometric_sizes(shortest: int, longest: int, factor: int = 2) -> tuple[int, ...]:
    """``shortest``, ``shortest·factor``, … up to ``longest`` (included when on the way)."""
    if not 1 <= shortest <= longest or factor < 2:
        raise ValueError(f"need 1 ≤ shortest ≤ longest and factor ≥ 2, got {shortest}, {longest}, {factor}")
    sizes = [shortest]
    while sizes[-1] * factor <= longest:
        sizes.append(sizes[-1] * factor)
    return tuple(sizes)


# -- the three layers ------------------------------------------------------------------------------


class SelfAttention(nn.Module):
    """softmax(X Xᵀ / √d) X: the tutorial's self-attention, queries, keys and values all X."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [batch, n, d]
        scores = (x / math.sqrt(x.shape[-1])) @ x.transpose(-1, -2)  # [batch, n, n]
        return torch.softmax(scores, dim=-1) @ x


class Convolution(nn.Module):
    """A 1-D convolution over the positions, d channels in and out, padding that keeps n."""

    def __init__(self, d: int, k: int):
        super().__init__()
        self.conv = nn.Conv1d(d, d, k, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [batch, n, d]
        return self.conv(x.transpose(1, 2)).transpose(1, 2)


class Recurrent(nn.Module):
    """A GRU or LSTM layer, hidden state of d numbers; returns every step's state."""

    def __init__(self, d: int, cell: str):
        super().__init__()
        self.rnn = getattr(nn, cell)(d, d, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def build(layer: str, d: int, k: int, rnn: str, device: torch.device) -> nn.Module:
    """One of ``LAYERS``, seeded, in eval mode on ``device``."""
    torch.manual_seed(0)
    modules: dict[str, Callable[[], nn.Module]] = {
        ATTENTION: SelfAttention,
        CONVOLUTION: lambda: Convolution(d, k),
        RECURRENT: lambda: Recurrent(d, rnn),
    }
    return modules[layer]().to(device).eval()


def activation_bytes(layer: str, n: int, d: int, k: int = 3, rnn: str = "GRU") -> int:
    """The bytes of the tensors ``layer``'s computation writes for one forward, from their shapes
    (float32): attention its scaled input, scores and weights (n × n each) and output; a
    convolution its output; a recurrent layer every step's gates and state. Kernels' own
    workspaces are not counted."""
    if layer == ATTENTION:
        floats = 2 * n * n + 2 * n * d
    elif layer == CONVOLUTION:
        floats = n * d
    else:
        floats = n * d * (GATES[rnn] + (2 if rnn == "LSTM" else 1))  # gates, state (and LSTM's cell)
    return FLOAT * floats


# -- measuring -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One layer at one n: the median and fastest wall-clock seconds of its timed forwards
    (``repeats`` of them), the median CPU seconds the measuring thread spent on one (``thread_time``:
    the whole work when torch runs one thread, and blind to waiting for a busy CPU), and its memory
    in bytes."""

    layer: str
    n: int
    seconds: float
    fastest: float
    cpu_seconds: float
    repeats: int
    bytes: int


@dataclass(frozen=True)
class Skipped:
    """A size left out: the budget it would exceed (``"bytes"`` or ``"seconds"``), by how much (the
    MiB it would write, or one forward's predicted seconds) and that budget (MiB or seconds)."""

    layer: str
    n: int
    over: str
    amount: float
    budget: float

    @property
    def reason(self) -> str:
        """Why, in the language in force (a measurement is kept for every visitor, in none)."""
        if self.over == "bytes":
            return _(
                "would write {amount:,.0f} MiB, over the {budget:,.0f} MiB budget",
                amount=self.amount,
                budget=self.budget,
            )
        return _(
            "one forward predicted at {amount:.1f} s, over the {budget:g} s budget",
            amount=self.amount,
            budget=self.budget,
        )


@dataclass(frozen=True)
class Measured:
    """What ``measure`` found: the points, the sizes it skipped and why, where and how."""

    setup: Setup
    device: str  # where, in words: "CPU (2 threads)", "CUDA (NVIDIA H100)"
    memory: str  # how the bytes were obtained, in words
    points: tuple[Point, ...]
    skipped: tuple[Skipped, ...]

    def series(self, layer: str, what: str = "seconds") -> tuple[list[int], list[float]]:
        """The sizes ``layer`` was measured at, and its ``what`` there (a ``Point`` field: ``seconds``,
        ``cpu_seconds``, ``bytes``)."""
        mine = [p for p in self.points if p.layer == layer]
        return [p.n for p in mine], [getattr(p, what) for p in mine]


def thread_clock_counts_all() -> bool:
    """Whether a thread's CPU time is a forward's whole work here: torch runs one thread
    (``ATLAS_THREADS=1``), so every kernel runs in the calling thread."""
    return torch.get_num_threads() == 1


def memory_method(device: torch.device) -> str:
    if device.type == "cuda":
        return "measured: the CUDA allocator's peak over one forward (max_memory_allocated), less what was allocated before"
    return "counted from shapes: the bytes of the tensors each layer's computation writes (float32), not measured"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _timed(forward: Callable[[], object], device: torch.device) -> tuple[float, float]:
    """Wall-clock and this thread's CPU seconds of one forward."""
    start, cpu = time.perf_counter(), time.thread_time()
    forward()
    _sync(device)
    return time.perf_counter() - start, time.thread_time() - cpu


def _timings(forward: Callable[[], object], device: torch.device, setup: Setup) -> list[tuple[float, float]]:
    """``setup.warmup`` untimed forwards, then up to ``setup.repeats`` timed ones (wall, CPU): fewer
    (at least one) once the timed ones have used the budget's seconds of wall clock."""
    for _warm in range(setup.warmup):
        forward()
    _sync(device)
    times = [_timed(forward, device)]
    while len(times) < setup.repeats and sum(wall for wall, _ in times) < setup.budget.seconds:
        times.append(_timed(forward, device))
    return times


def _peak_bytes(forward: Callable[[], object], device: torch.device, counted: int) -> int:
    """The CUDA allocator's peak over one forward above what was allocated before; ``counted``
    (from shapes) elsewhere."""
    if device.type != "cuda":
        return counted
    _sync(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    forward()
    _sync(device)
    return int(torch.cuda.max_memory_allocated(device) - before)


def _too_costly(
    budget: Budget, layer: str, n: int, last: Point | None, bytes_needed: int
) -> tuple[str, float, float] | None:
    """Why measuring ``layer`` at ``n`` would exceed ``budget`` (``Skipped``'s over, amount and
    budget), or None when it fits: its tensors' bytes, or one forward's time predicted from ``last``
    (the size measured before: its fastest forward scaled by the tutorial's exponent of n, which
    overestimates where overheads dominate)."""
    if bytes_needed > budget.bytes:
        return "bytes", bytes_needed / 2**20, budget.bytes / 2**20
    if last is not None:
        each = last.fastest * (n / last.n) ** TUTORIAL[layer].n_exponent
        if each > budget.seconds:
            return "seconds", each, budget.seconds
    return None


def _measure_one(
    module: nn.Module, setup: Setup, layer: str, n: int, device: torch.device, counted: int
) -> Point:
    x = torch.randn(1, n, setup.d, generator=torch.Generator().manual_seed(n)).to(device)
    forward = lambda: module(x)  # noqa: E731
    wall, cpu = zip(*_timings(forward, device, setup), strict=True)
    bytes_used = _peak_bytes(forward, device, counted)
    return Point(layer, n, statistics.median(wall), min(wall), statistics.median(cpu), len(wall), bytes_used)


def measure(
    setup: Setup,
    device: torch.device | str = "cpu",
    on_progress: Callable[[int, int, str, int], None] | None = None,
) -> Measured:
    """Time (and size) each layer at each n of ``setup``, smallest n first. A size over the budget
    is skipped, and so is every larger one of that layer; a measurement's timed forwards stop
    once they have used the budget's seconds. ``on_progress(done, total, layer, n)`` after each."""
    device = torch.device(device)
    total = len(LAYERS) * len(setup.sizes)
    points, skipped, done = [], [], 0
    with torch.no_grad():
        for layer in LAYERS:
            module, last, reason = build(layer, setup.d, setup.k, setup.rnn, device), None, None
            for n in sorted(setup.sizes):
                counted = activation_bytes(layer, n, setup.d, setup.k, setup.rnn)
                reason = reason or _too_costly(setup.budget, layer, n, last, counted)
                if reason:
                    skipped.append(Skipped(layer, n, *reason))
                else:
                    last = _measure_one(module, setup, layer, n, device, counted)
                    points.append(last)
                done += 1
                if on_progress is not None:
                    on_progress(done, total, layer, n)
    return Measured(setup, describe(device), memory_method(device), tuple(points), tuple(skipped))


# -- reading the measurements ----------------------------------------------------------------------


def fitted_slope(sizes: Iterable[float], values: Iterable[float]) -> float:
    """The least-squares slope of log(value) against log(n): the measured exponent of n."""
    x = torch.tensor([math.log(v) for v in sizes], dtype=torch.float64)
    y = torch.tensor([math.log(v) for v in values], dtype=torch.float64)
    if len(x) < 2 or float(x.max() - x.min()) == 0:
        raise ValueError("a slope needs at least two different sizes")
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / (x * x).sum())


def tail_slope(sizes: list[int], values: list[float], least: int = 3) -> float | None:
    """``fitted_slope`` over the larger half of the sizes (at least ``least`` of them): the tutorial's
    O(·) is about large n, where fixed overheads no longer count. None with fewer than 2 sizes."""
    if len(sizes) < 2:
        return None
    keep = max(least, (len(sizes) + 1) // 2)
    return fitted_slope(sizes[-keep:], values[-keep:])


def crossover(sizes_a: list[int], a: list[float], sizes_b: list[int], b: list[float]) -> float | None:
    """The n at which ``a`` first rises above ``b`` (both measured at those sizes), interpolated
    on log-log axes between the two sizes around it; None when it does not within the sizes both
    have (or is above from the start)."""
    shared = sorted(set(sizes_a) & set(sizes_b))
    gap = [math.log(a[sizes_a.index(n)]) - math.log(b[sizes_b.index(n)]) for n in shared]
    for i in range(1, len(shared)):
        if gap[i - 1] <= 0 < gap[i]:
            lo, hi = math.log(shared[i - 1]), math.log(shared[i])
            return math.exp(lo + (hi - lo) * -gap[i - 1] / (gap[i] - gap[i - 1]))
    return None


# -- paths, counted on graphs ----------------------------------------------------------------------

# (position, row): the row is a layer (0 = the input), or 0 = x and 1 = h for a recurrent layer
Node = tuple[int, int]


@dataclass(frozen=True)
class Graph:
    """Nodes at (position, row), edges between node indices, and one shortest path from token 0's
    input to token n−1's output (node indices); ``rows`` names each row."""

    nodes: tuple[Node, ...]
    edges: tuple[tuple[int, int], ...]
    path: tuple[int, ...]
    rows: tuple[str, ...]


def reach(k: int) -> int:
    """How many positions to each side a convolution of odd kernel ``k`` reads."""
    return (k - 1) // 2


def _successors(layer: str, n: int, k: int, node: Node) -> list[Node]:
    """The nodes that read ``node`` directly."""
    pos, row = node
    if layer == RECURRENT:
        if row == 0:
            return [(pos, 1)]  # x_i feeds h_i
        return [(pos + 1, 1)] if pos + 1 < n else []  # h_i feeds h_{i+1}
    if layer == ATTENTION:
        return [(i, row + 1) for i in range(n)]
    r = reach(k)
    return [(i, row + 1) for i in range(max(0, pos - r), min(n, pos + r + 1))]


def _target(layer: str, n: int, node: Node) -> bool:
    return node[0] == n - 1 and node[1] >= 1


def shortest_path(layer: str, n: int, k: int = 3) -> list[Node]:
    """Breadth first from token 0's input to the first node that is token n−1's output: the
    fewest edges (layers, or recurrent steps) between them."""
    start: Node = (0, 0)
    before: dict[Node, Node | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if _target(layer, n, node):
            path = [node]
            while before[path[-1]] is not None:
                path.append(before[path[-1]])
            return path[::-1]
        for nxt in _successors(layer, n, k, node):
            if nxt not in before:
                before[nxt] = node
                queue.append(nxt)
    raise ValueError(f"token {n - 1} is never reached from token 0 by {layer}")  # cannot happen for k ≥ 3


def path_length(layer: str, n: int, k: int = 3) -> int:
    """Edges from token 0's input to token n−1's output, counted on the graph."""
    return len(shortest_path(layer, n, k)) - 1


def path_formula(layer: str, n: int, k: int = 3) -> int:
    """The same count in closed form: 1 for attention, ⌈(n−1)/((k−1)/2)⌉ layers (at least 1) for a
    convolution, n (x₀ → h₀, then n−1 recurrent steps) for a recurrent layer."""
    if layer == ATTENTION:
        return 1
    if layer == CONVOLUTION:
        return max(1, math.ceil((n - 1) / reach(k)))
    return n


def _rows(layer: str, depth: int) -> tuple[str, ...]:
    if layer == RECURRENT:
        return ("x", "h")  # inputs, states
    return ("input", *(f"layer {i}" for i in range(1, depth + 1)))


def _stacked(
    layer: str, n: int, k: int, depth: int
) -> tuple[list[Node], dict[Node, int], list[tuple[int, int]]]:
    """Rows 0 … ``depth`` of n nodes each, and every edge between them."""
    nodes = [(i, row) for row in range(depth + 1) for i in range(n)]
    index = {node: i for i, node in enumerate(nodes)}
    edges = [(index[a], index[b]) for a in nodes for b in _successors(layer, n, k, a) if b in index]
    return nodes, index, edges


def graph(layer: str, n: int, k: int = 3) -> Graph:
    """Every node and edge up to the depth the shortest path needs (every layer alike), and the path."""
    path = shortest_path(layer, n, k)
    depth = 1 if layer == RECURRENT else path[-1][1]
    nodes, index, edges = _stacked(layer, n, k, depth)
    return Graph(tuple(nodes), tuple(edges), tuple(index[p] for p in path), _rows(layer, depth))


def one_layer(layer: str, n: int, k: int = 3) -> Graph:
    """The nodes and edges of ONE layer (input row and output row; x and h for a recurrent layer)."""
    nodes, _, edges = _stacked(layer, n, k, 1)
    return Graph(tuple(nodes), tuple(edges), (), _rows(layer, 1))


def sequential_steps(layer: str, n: int, k: int = 3) -> int:
    """The longest chain of outputs inside one layer that must be computed one after another,
    counted on ``one_layer``: 1 for attention and a convolution (every output at once from the
    inputs), n for a recurrent layer (h₀ → h₁ → … → hₙ₋₁)."""
    g = one_layer(layer, n, k)
    longest = {i: 1 for i, (_, row) in enumerate(g.nodes) if row == 1}
    for a, b in sorted(g.edges, key=lambda e: g.nodes[e[1]]):  # along the row, left to right
        if a in longest:
            longest[b] = max(longest[b], longest[a] + 1)
    return max(longest.values())
