"""Load test: N concurrent sessions on one `streamlit run app.py` server, without browsers.

Each session speaks Streamlit's websocket protocol (``harness.st_client``) and behaves like a
student: it opens Couplets, Transformer heads (minilm) or Translation, types a new text
(couplets, sentences, some long), switches layers and heads, and thinks 3–8 s between
actions. One asyncio process drives them all. Reported: the time from a request to its
``script_finished`` (time-to-settled) by page, the exceptions and error boxes any session
saw, and the server's resident memory (its process and children) over time, then for
``--leave-minutes`` after every session has left.

    python -m bench.bench_load --sessions 30 --minutes 10 --label after
    python -m bench.bench_load --sessions 10,30,60 --minutes 10     # one fresh server each
    python -m bench.bench_load --sessions 10 --heavy 1              # + one smollm2 long-input session
    python -m bench.bench_load --sessions 30 --texts fresh          # nobody types a shared example

Each run is kept in ``bench/load_runs.json`` under its label and session count, and the
``bench_load`` section of ``bench/RESULTS.md`` is rendered from all kept runs, so a baseline
measured before a change stands beside the result after it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import psutil

from attention_atlas.paths import DATA
from attention_atlas.serve.launcher import serve
from attention_atlas.serve.process import launch_env
from bench.results import machine, write_section
from harness.st_client import Run, Session

RUNS = Path(__file__).with_name("load_runs.json")
LIGHT = ("couplets", "transformer")  # the pages with the p95 goal
GOAL_P95 = 3.0


# --- what the sessions type ---------------------------------------------------------------


class Texts:
    """Couplet lines and English sentences from the bundled corpora, some joined into long inputs.

    Half of what a session types comes from a shared pool (classmates type the same
    examples), half is fresh, so the cache is hit as often as it would be in a room; with
    ``shared=0`` every text is fresh (a class where everyone types their own)."""

    def __init__(self, seed: int, shared: float = 0.5):
        self.rng = random.Random(seed)
        self.shared = shared
        self.lines = [c for pair in _pairs("couplets/tang_couplets.tsv.gz", 4000, seed) for c in pair]
        self.sentences = [e for e, _ in _pairs("translation/eng_fra.tsv.gz", 4000, seed)]
        self.pool = {
            "couplet": [self._couplet() for _ in range(20)],
            "sentence": [self._sentence() for _ in range(20)],
        }

    def couplet(self, rng: random.Random) -> str:
        return rng.choice(self.pool["couplet"]) if rng.random() < self.shared else self._couplet(rng)

    def sentence(self, rng: random.Random, long_share: float = 0.15) -> str:
        if rng.random() < long_share:  # a paragraph of 8–25 sentences: 60–250 words
            return " ".join(rng.choice(self.sentences) for _ in range(rng.randint(8, 25)))
        return rng.choice(self.pool["sentence"]) if rng.random() < self.shared else self._sentence(rng)

    def _couplet(self, rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        if rng.random() < 0.25:  # two or three clauses, up to about 30 characters
            return "，".join(rng.choice(self.lines) for _ in range(rng.randint(2, 3)))
        return rng.choice(self.lines)

    def _sentence(self, rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        return " ".join(rng.choice(self.sentences) for _ in range(rng.randint(1, 2)))


def _pairs(name: str, n: int, seed: int) -> list[tuple[str, str]]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        rows = [tuple(line.rstrip("\n").split("\t")[:2]) for line in f if "\t" in line]
    return random.Random(seed).sample(rows, min(n, len(rows)))


# --- one session --------------------------------------------------------------------------


@dataclass
class Log:
    """Every request of every session, and the memory samples, on one clock."""

    start: float = field(default_factory=time.monotonic)
    requests: list[dict] = field(default_factory=list)
    memory: list[tuple[float, float]] = field(default_factory=list)  # (seconds, MB)

    def add(self, session: int, page: str, action: str, run: Run) -> None:
        self.requests.append(
            {
                "t": round(time.monotonic() - self.start, 2),
                "session": session,
                "page": page,
                "action": action,
                "seconds": round(run.seconds, 3),
                "status": run.status,
                "exceptions": run.exceptions,
                "errors": run.errors,
            }
        )


class Student:
    """One session's behaviour: a page, a new text, a few layer/head switches; think time between."""

    def __init__(self, n: int, url: str, texts: Texts, log: Log, think: tuple[float, float], heavy: bool):
        self.n, self.url, self.texts, self.log, self.think, self.heavy = n, url, texts, log, think, heavy
        self.rng = random.Random(1000 + n)
        self.until = float("inf")

    async def act(self, s: Session, page: str, action: str, call) -> Run | None:
        if time.monotonic() > self.until:  # the class is over: no new request
            call.close()
            return None
        try:
            run = await call
        except KeyError as err:  # a widget the page did not show this time
            run = Run(0.0, f"no widget: {err}")
        self.log.add(self.n, page, action, run)
        await asyncio.sleep(self.rng.uniform(*self.think))
        return run

    async def live(self, until: float) -> None:
        self.until = until
        await asyncio.sleep(self.rng.uniform(0, self.think[1]))  # people do not arrive on the same tick
        async with Session(self.url) as s:
            await self.act(s, "home", "open", s.open(""))
            while time.monotonic() < until:
                if self.heavy:
                    await self.smollm2(s)
                    continue
                visit = self.rng.choice((self.couplets, self.transformer, self.translation))
                await visit(s)

    async def couplets(self, s: Session) -> None:
        await self.act(s, "couplets", "open", s.open("couplets"))
        await self.act(s, "couplets", "type", s.set("couplet_upper", self.texts.couplet(self.rng)))
        if self.rng.random() < 0.3:
            await self.act(s, "couplets", "beam", s.set("couplet_beam", self.rng.randint(2, 5)))

    async def transformer(self, s: Session, model: str = "minilm", long_share: float = 0.15) -> None:
        page = "transformer" if model == "minilm" else f"transformer ({model})"
        await self.act(s, page, "open", s.open("transformer"))
        await self.act(s, page, "model", s.set("tf_model", model))
        await self.act(s, page, "type", s.set("tf_text", self.texts.sentence(self.rng, long_share)))
        for _ in range(self.rng.randint(1, 3)):
            layers, heads = s.widgets.get("tf_layer"), s.widgets.get("tf_head")
            if layers is None or heads is None:  # the text was refused: nothing to switch
                return
            layer = self.rng.randint(int(layers.bounds[0]), int(layers.bounds[1]))
            await self.act(s, page, "layer", s.set("tf_layer", layer))
            head = self.rng.choice([h for h in heads.options if h.isdigit()])
            await self.act(s, page, "head", s.set("tf_head", head))

    async def translation(self, s: Session) -> None:
        await self.act(s, "translation", "open", s.open("translation"))
        await self.act(
            s, "translation", "type", s.set("translate_english", self.texts.sentence(self.rng, 0.1))
        )

    async def smollm2(self, s: Session) -> None:
        """The heavy visitor of the fairness run: SmolLM2 on a fresh long paragraph each time."""
        await self.transformer(s, "smollm2", long_share=1.0)


# --- the server's memory --------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    """Resident memory of a process and all its children, MB."""
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return float("nan")
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 2**20


async def sample_memory(pid: int, log: Log, every: float = 5.0) -> None:
    while True:
        log.memory.append((round(time.monotonic() - log.start, 1), round(rss_mb(pid), 1)))
        await asyncio.sleep(every)


async def settle_memory(pid: int, seconds: float) -> float:
    """Memory after ``seconds`` of quiet (the median of the last few samples)."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(min(5.0, max(0.0, end - time.monotonic())))
        samples.append(rss_mb(pid))
    return statistics.median(samples[-3:]) if samples else rss_mb(pid)


# --- one run ------------------------------------------------------------------------------


async def warm_up(url: str) -> None:
    """One visit to each page (models loaded, pages compiled): what 'the idle server' means here."""
    async with Session(url) as s:
        for page in ("", "couplets", "transformer", "translation"):
            await s.open(page)
        await s.open("transformer")
        await s.set("tf_model", "minilm")


async def load_run(url: str, pid: int, args) -> dict:
    cold = rss_mb(pid)
    await warm_up(url)
    idle = await settle_memory(pid, 10)
    log = Log()
    sampler = asyncio.create_task(sample_memory(pid, log))
    texts = Texts(args.seed, shared=0.0 if args.texts == "fresh" else 0.5)
    until = time.monotonic() + args.minutes * 60
    students = [Student(i, url, texts, log, args.think, heavy=i < args.heavy) for i in range(args.sessions)]
    load_start = os.getloadavg()[0]
    await asyncio.gather(*(st.live(until) for st in students))
    ended = time.monotonic() - log.start
    load_end = os.getloadavg()[0]
    after = await settle_memory(pid, args.leave_minutes * 60)
    sampler.cancel()
    return summarise(
        log, args, {"cold_idle": cold, "idle": idle, "after_leave": after}, ended, (load_start, load_end)
    )


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * len(xs) + 0.5) - 1))] if xs else float("nan")


def summarise(log: Log, args, mem: dict, ended: float, load: tuple[float, float]) -> dict:
    pages: dict[str, list[float]] = {}
    for r in log.requests:
        if r["status"].startswith("FINISHED"):
            pages.setdefault(r["page"], []).append(r["seconds"])
    bad = [
        r for r in log.requests if not r["status"].startswith("FINISHED") or r["exceptions"] or r["errors"]
    ]
    at = {m: _memory_at(log.memory, m * 60) for m in (2, args.minutes)}
    return {
        "label": args.label,
        "sessions": args.sessions,
        "heavy": args.heavy,
        "texts": args.texts,
        "minutes": args.minutes,
        "think": list(args.think),
        "date": str(date.today()),
        "machine": machine(),
        "env": {
            **{
                k: os.environ[k]
                for k in ("ATLAS_THREADS", "ATLAS_MAX_MODELS", "ATLAS_MODEL_SLOTS")
                if k in os.environ
            },
            **({} if args.url else launch_env()),
        },
        "load_average": [round(x, 1) for x in load],
        "requests": len(log.requests),
        "pages": {p: _stats(ts) for p, ts in sorted(pages.items())},
        "problems": len(bad),
        "problem_examples": sorted(
            {f"{r['page']} {r['action']}: {r['status']} {r['exceptions'] + r['errors']}" for r in bad}
        )[:10],
        "memory_mb": {**{k: round(v, 1) for k, v in mem.items()}, "minute_2": at[2], "end": at[args.minutes]},
        "memory_trace": log.memory,
        "ended_s": round(ended, 1),
    }


def _stats(ts: list[float]) -> dict:
    return {"n": len(ts), "p50": percentile(ts, 50), "p95": percentile(ts, 95), "max": max(ts)}


def _memory_at(trace: list[tuple[float, float]], t: float) -> float:
    """The median of the samples within 15 s of ``t`` (the last sample if the run was shorter)."""
    near = [mb for s, mb in trace if abs(s - t) <= 15]
    return round(statistics.median(near), 1) if near else (trace[-1][1] if trace else float("nan"))


# --- the report ---------------------------------------------------------------------------


def verdicts(r: dict) -> list[str]:
    m = r["memory_mb"]
    growth = m["end"] / m["minute_2"] - 1
    back = m["after_leave"] / m["idle"] - 1
    p95 = {p: r["pages"].get(p, {}).get("p95", float("nan")) for p in LIGHT}
    return [
        f"errors {r['problems']} ({'met' if r['problems'] == 0 else 'not met'})",
        "p95 "
        + ", ".join(f"{p} {v:.2f} s" for p, v in p95.items())
        + f" ({'met' if all(v <= GOAL_P95 for v in p95.values()) else 'not met'})",
        f"memory minute 2 → {r['minutes']}: {growth:+.1%} ({'met' if growth <= 0.10 else 'not met'})",
        f"after leaving vs warm idle: {back:+.1%} ({'met' if back <= 0.10 else 'not met'})",
    ]


def render(runs: dict) -> str:
    lines = [
        "## Load (bench/bench_load.py)",
        "",
        "Browser-less sessions speaking Streamlit's websocket protocol (`harness/st_client.py`) against one "
        "`streamlit run app.py`: each opens Couplets, Transformer heads (minilm) or Translation, types a "
        "text (texts 'mixed': half from a shared pool of 20, half fresh; 'fresh': every text new, nobody "
        "types a shared example; some long paragraphs either way), switches layers and heads, and "
        "thinks between actions. Time-to-settled: from the request to its `script_finished`. Memory: resident, "
        "server process and children; 'idle' is the server after one warm-up visit of each page (models "
        "loaded), 'cold' the server before it. The machine (2 cores) was at times shared with a training "
        "run: the load average is given per run, and a baseline sits beside its result in the same table. "
        "The server is started as `make run` starts it where a run's goals line says env MALLOC_ARENA_MAX=2. "
        "'+ 1 smollm2' is the fairness run: one of the sessions opens SmolLM2 with a fresh long paragraph "
        "each time (its own column), while the others do as above. 'min 2' and 'end' are the memory at "
        "minute 2 and at the end of the sessions (the growth goal is for 10-minute runs).",
        "",
        "| run | sessions | texts | min | requests | problems | couplets p50/p95 (s) | transformer p50/p95 (s) | "
        "translation p50/p95 (s) | smollm2, long (s) | memory cold/idle/min 2/end/after leaving (MB) | load avg |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- | --- | --- | --- |",
    ]
    for key in sorted(
        runs,
        key=lambda k: (runs[k]["sessions"], runs[k]["heavy"], runs[k].get("texts", ""), runs[k]["label"]),
    ):
        r = runs[key]
        pages = ("couplets", "transformer", "translation", "transformer (smollm2)")
        cells = [_cell(r["pages"].get(p)) for p in pages]
        m = r["memory_mb"]
        mem = "/".join(f"{m[k]:.0f}" for k in ("cold_idle", "idle", "minute_2", "end", "after_leave"))
        heavy = f" + {r['heavy']} smollm2" if r["heavy"] else ""
        lines.append(
            f"| {r['label']} ({r['date']}) | {r['sessions']}{heavy} | {r.get('texts', 'mixed')} | "
            f"{r['minutes']:g} | {r['requests']} | "
            f"{r['problems']} | {' | '.join(cells)} | {mem} | {r['load_average'][0]}→{r['load_average'][1]} |"
        )
    lines += ["", "Goals (30 sessions, 10 minutes):", ""]
    for key, r in sorted(runs.items()):
        lines.append(f"- {key}: " + "; ".join(verdicts(r)) + (f"; env {r['env']}" if r["env"] else ""))
    return "\n".join(lines)


def _cell(stats: dict | None) -> str:
    return "—" if not stats else f"{stats['p50']:.2f} / {stats['p95']:.2f}"


def keep(result: dict) -> dict:
    runs = json.loads(RUNS.read_text(encoding="utf-8")) if RUNS.exists() else {}
    key = f"{result['label']}, {result['sessions']} sessions" + (
        f" + {result['heavy']} heavy" if result["heavy"] else ""
    )
    key += ", fresh texts" if result["texts"] == "fresh" else ""
    runs[key] = result
    RUNS.write_text(json.dumps(runs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return runs


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", default="30", help="sessions, or a list (10,30,60): one fresh server each")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--think", type=lambda s: tuple(float(x) for x in s.split(",")), default=(3.0, 8.0))
    p.add_argument(
        "--leave-minutes", type=float, default=2.0, help="memory watched this long after they leave"
    )
    p.add_argument(
        "--heavy", type=int, default=0, help="of the sessions, this many run smollm2 on long inputs"
    )
    p.add_argument(
        "--texts",
        choices=("mixed", "fresh"),
        default="mixed",
        help="mixed: half the texts from a shared pool of 20; fresh: every text typed once, never shared",
    )
    p.add_argument("--label", default="current", help="the name this run is kept under (baseline, after, …)")
    p.add_argument("--url", help="an already running server (default: start one); its pid via --pid")
    p.add_argument("--pid", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print only; keep nothing")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    for n in [int(x) for x in str(args.sessions).split(",")]:
        one = argparse.Namespace(**{**vars(args), "sessions": n})
        if args.url:
            result = asyncio.run(load_run(args.url, args.pid, one))
        else:
            with serve(env=launch_env()) as server:
                result = asyncio.run(load_run(server.url, server.process.pid, one))
        print(
            json.dumps({k: v for k, v in result.items() if k != "memory_trace"}, indent=1, ensure_ascii=False)
        )
        print("\n".join(verdicts(result)))
        if not args.no_write:
            write_section("bench_load", render(keep(result)))


if __name__ == "__main__":
    main()
