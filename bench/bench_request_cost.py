"""What one request costs the server in CPU-seconds, page by page, fresh text against a cached one.

One browser-less session (``harness.st_client``) against one server started as ``atlas serve``
starts it, requests one at a time, nothing else running on the server: the server's CPU time
(its process and children, user + system) before and after each request is that request's cost,
whatever else the machine is doing (wall seconds are given too, but they depend on the load).

Each page gets ``--n`` fresh texts (never typed before on this server: the bundled corpora, a seed
of their own) and, for the Transformer page, layer and head switches on the text just typed (the
cached path: no model run). Each request's payload (the bytes the server sent) is counted too.

The interface in English and in Chinese (``--lang en,zh``, the default): one session per language,
each on a server of its own started afresh and typing the same texts (``?lang=zh`` in the session's
URL), side by side with the ratio zh / en of CPU-seconds and payload. The two servers run at once and
the sessions take turns request by request (en then zh, then zh then en, …), so both languages see
the same machine: a sequence of requests one language after the other measured the machine's drift
as much as the language (0.67–1.22× across rows once). The CPU time is read in 10 ms ticks, so the
ratio is of the means (all of a row's CPU-seconds over its count), and of every request together.
The same texts: a Transformer page's payload grows with the square of the tokens (every head's
weights), so languages typing texts of their own compared their texts' lengths (1.43–1.47× once,
the Chinese session's sentences having had 8 words to the English one's 5); a server each: on one
server the second language's texts would come from the cache, no longer fresh.

    python -m bench.bench_request_cost --n 20 --baseline "spinning threads:OMP_WAIT_POLICY="
    git worktree add /tmp/before HEAD~1   # the code before a change, as the baseline's server
    python -m bench.bench_request_cost --n 20 --baseline "before:" --baseline-tree /tmp/before
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import time
from datetime import date
from pathlib import Path

import psutil

from attention_atlas.i18n import check
from attention_atlas.paths import APP
from attention_atlas.serve.launcher import serve
from attention_atlas.serve.process import launch_env
from bench.bench_load import Texts
from bench.results import machine, write_section
from harness.st_client import Session

RUNS = Path(__file__).with_name("request_cost_runs.json")
LANG_RUNS = Path(__file__).with_name("request_cost_languages_runs.json")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (those alive now), seconds."""
    proc = psutil.Process(pid)
    total = 0.0
    for p in (proc, *proc.children(recursive=True)):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


class Meter:
    """Each request's CPU-seconds on the server and wall seconds here, by (page, action)."""

    def __init__(self, pid: int):
        self.pid, self.rows = pid, []

    async def __call__(self, page: str, action: str, call) -> None:
        await asyncio.sleep(0.3)  # the previous request's stragglers (forward messages, gc) settle
        before, start = cpu_seconds(self.pid), time.perf_counter()
        run = await call
        wall = time.perf_counter() - start
        await asyncio.sleep(0.2)  # work the server does after script_finished belongs to this request
        cpu = cpu_seconds(self.pid) - before
        problems = run.problems
        self.rows.append(
            {
                "page": page,
                "action": action,
                "cpu": cpu,
                "wall": wall,
                "bytes": run.bytes,
                "problems": problems,
            }
        )


async def one_page(s: Session, meter: Meter, page: str, texts, n: int, query: str) -> None:
    key = {"couplets": "couplet_upper", "transformer": "tf_text", "translation": "translate_english"}[page]
    await s.open(page, query)
    if page == "transformer":
        await s.set("tf_model", "minilm")
    for text in texts[:n]:
        await meter(page, "fresh text", s.set(key, text))
        layers, heads = s.widgets.get("tf_layer"), s.widgets.get("tf_head")
        if layers is not None and heads is not None:  # the Transformer page, a text it took
            await meter(page, "layer switch", s.set("tf_layer", int(layers.bounds[1]) // 2))
            await meter(page, "head switch", s.set("tf_head", heads.options[1]))
        await meter(page, "open again (cached)", s.open(page, query))


def fresh_texts(n: int, seed: int) -> dict[str, list[str]]:
    """Each page's ``n`` texts, the same for every language: none typed by the warm-up, and
    the Transformer page's distinct from the Translation page's."""
    source = Texts(seed + 1)  # a seed of its own: no text the warm-up or another run typed
    couplets, sentences = _distinct(source._couplet, n), _distinct(source._sentence, 2 * n)
    return {
        "couplets": couplets,
        "transformer": sentences[:n],
        "translation": sentences[n:],
    }


async def measure(url: str, pid: int, n: int, seed: int, lang: str = "en") -> list[dict]:
    """One language's rows, one session on a server of its own (``fresh_texts``: every language
    types the same texts, each of them fresh to its server)."""
    query = "" if lang == "en" else f"lang={lang}"
    meter = Meter(pid)
    async with Session(url) as s:
        for page in ("", "couplets", "transformer", "translation"):  # pages compiled, models loaded
            await s.open(page, query)
        await s.open("transformer")
        await s.set("tf_model", "minilm")
        await s.set("tf_text", "a warm-up sentence the runs below never type")
        for page, texts in fresh_texts(n, seed).items():
            await one_page(s, meter, page, texts, n, query)
    return meter.rows


def _distinct(make, n: int) -> list[str]:
    seen: list[str] = []
    while len(seen) < n:
        text = make()
        if text not in seen:
            seen.append(text)
    return seen


async def measure_together(servers: dict[str, tuple[str, int]], n: int, seed: int) -> dict[str, list[dict]]:
    """Every language's rows, one session each on its own server (``servers``: lang → url, pid), the
    sessions taking turns request by request, the order flipped each turn (``Turns``)."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = {lang: await stack.enter_async_context(Session(url)) for lang, (url, _) in servers.items()}
        queries = {lang: "" if lang == "en" else f"lang={lang}" for lang in servers}
        for lang, s in sessions.items():  # pages compiled, models loaded, on each server
            for page in ("", "couplets", "transformer", "translation"):
                await s.open(page, queries[lang])
            await s.open("transformer", queries[lang])
            await s.set("tf_model", "minilm")
            await s.set("tf_text", "a warm-up sentence the runs below never type")
        turns = Turns({lang: (sessions[lang], Meter(pid), queries[lang]) for lang, (_, pid) in servers.items()})
        for page, texts in fresh_texts(n, seed).items():
            await turns.page(page, texts[:n])
        return {lang: meter.rows for lang, (_, meter, _) in turns.sides.items()}


class Turns:
    """The languages' sessions making the same requests in turn: ``each(page, action, call)`` runs
    ``call(session, query)`` in every session, metered, the order flipped from one turn to the next."""

    def __init__(self, sides: dict[str, tuple[Session, Meter, str]]):
        self.sides, self.flip = sides, False

    async def each(self, page: str, action: str, call) -> None:
        order = list(self.sides.values())
        for s, meter, query in reversed(order) if self.flip else order:
            await meter(page, action, call(s, query))
        self.flip = not self.flip

    async def page(self, page: str, texts: list[str]) -> None:
        key = {"couplets": "couplet_upper", "transformer": "tf_text", "translation": "translate_english"}[page]
        for s, _, query in self.sides.values():
            await s.open(page, query)
            if page == "transformer":
                await s.set("tf_model", "minilm")
        first = next(iter(self.sides.values()))[0]
        for text in texts:
            await self.each(page, "fresh text", lambda s, q: s.set(key, text))  # noqa: B023 (awaited now)
            layers, heads = first.widgets.get("tf_layer"), first.widgets.get("tf_head")
            if layers is not None and heads is not None:  # the Transformer page, a text it took
                layer, head = int(layers.bounds[1]) // 2, heads.options[1]
                await self.each(page, "layer switch", lambda s, q: s.set("tf_layer", layer))  # noqa: B023
                await self.each(page, "head switch", lambda s, q: s.set("tf_head", head))  # noqa: B023
            await self.each(page, "open again (cached)", lambda s, q: s.open(page, q))


def summarise(rows: list[dict], label: str, env: dict[str, str]) -> dict:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(f"{r['page']}: {r['action']}", []).append(r)
    return {
        "label": label,
        "date": str(date.today()),
        "machine": machine(),
        "env": {**launch_env(), **env},
        "requests": {
            k: {
                "n": len(v),
                "cpu_median": round(statistics.median(r["cpu"] for r in v), 3),
                "cpu_mean": round(statistics.fmean(r["cpu"] for r in v), 4),
                "cpu": [round(r["cpu"], 3) for r in v],  # each request's, in order (the languages pair up)
                "cpu_max": round(max(r["cpu"] for r in v), 3),
                "wall_median": round(statistics.median(r["wall"] for r in v), 3),
                "kb_median": round(statistics.median(r.get("bytes", 0) for r in v) / 1000, 1),
                "problems": sum(bool(r["problems"]) for r in v),
            }
            for k, v in groups.items()
        },
    }


def render(runs: dict, languages: bool = False) -> str:
    keys = sorted({k for r in runs.values() for k in r["requests"]})
    labels = list(runs)
    sized = all("kb_median" in runs[k]["requests"][key] for k in labels for key in runs[k]["requests"])
    lines = [
        "## What one request costs the server (bench/bench_request_cost.py)"
        + (", in English and in Chinese" if languages else ""),
        "",
        (
            "One browser-less session per language, on servers started as `atlas serve` starts them, taking "
            "turns request by request (en, zh, then zh, en, …): "
            if languages
            else "One browser-less session, one request at a time, on a server started as `atlas serve` starts it: "
        )
        + "the server's CPU-seconds (process and children, user + system) for each request, median over the "
        "requests (n each), with the wall seconds beside them (those depend on what else the machine ran)"
        + (" and the payload, the kilobytes the server sent for it" if sized else "")
        + ". 'fresh text' is a text never typed on the server before (a model run); switches and the reopened "
        "page are the cached path. "
        + (
            "Columns are the interface's languages, one session each on a server of its own started afresh "
            "(`?lang=zh` in the Chinese session's URL), the two at once, all typing the same texts. The ratio "
            "below is of the mean CPU-seconds (the process clock ticks in 10 ms), each row's and all together."
            if languages
            else "Columns are runs under their labels, a baseline beside the change."
        ),
        "",
        f"{runs[labels[-1]]['date']}, {runs[labels[-1]]['machine']}. Server environment per column: "
        + "; ".join(f"{k}: {runs[k]['env']}" for k in labels)
        + ".",
        "",
        "| request | "
        + " | ".join(f"{k}: CPU s / wall s" + (" / kB" if sized else "") for k in labels)
        + " |",
        "| --- |" + " ---: |" * len(labels),
    ]
    for key in keys:
        cells = []
        for k in labels:
            c = runs[k]["requests"].get(key)
            size = f" / {c['kb_median']:,.1f}" if c is not None and sized else ""
            cells.append(
                "—" if c is None else f"{c['cpu_median']:.3f} / {c['wall_median']:.2f}{size} (n {c['n']})"
            )
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    pairs = [
        (k, k.replace("(en)", "(zh)"))
        for k in labels
        if k.endswith("(en)") and k.replace("(en)", "(zh)") in runs
    ]
    if languages and pairs:
        for en, zh in pairs:
            lines += ["", f"Ratio zh / en, {zh} / {en} (goal: within 5 %):", ""]
            lines += [
                "| request | CPU-seconds (means), [95 % interval] | payload |",
                "| --- | ---: | ---: |",
            ]
            for key in keys:
                a, b = runs[en]["requests"].get(key), runs[zh]["requests"].get(key)
                if not (a and b):
                    continue
                mean = "cpu_mean" if "cpu_mean" in a and "cpu_mean" in b else "cpu_median"
                cpu = f"{b[mean] / a[mean]:.2f}×{interval(a.get('cpu'), b.get('cpu'))}" if a[mean] > 0 else "—"
                size = f"{b['kb_median'] / a['kb_median']:.3f}×" if a.get("kb_median") else "—"
                lines.append(f"| {key} | {cpu} | {size} |")
            total = {k: sum(r.get("cpu_mean", 0) * r["n"] for r in runs[k]["requests"].values()) for k in (en, zh)}
            if total[en] > 0:
                every = [[c for key in keys for c in runs[k]["requests"].get(key, {}).get("cpu", [])] for k in (en, zh)]
                lines.append(f"| every request together | {total[zh] / total[en]:.3f}×{interval(*every)} | |")
    elif len(labels) > 1:
        a, b = labels[0], labels[-1]
        lines += ["", f"Ratio of CPU-seconds, {b} / {a}:", ""]
        for key in keys:
            ca, cb = runs[a]["requests"].get(key), runs[b]["requests"].get(key)
            if ca and cb and ca["cpu_median"] > 0:
                lines.append(f"- {key}: {cb['cpu_median'] / ca['cpu_median']:.2f}×")
    return "\n".join(lines)


def interval(en: list[float] | None, zh: list[float] | None, resamples: int = 4000) -> str:
    """`` [lo, hi]``: the 95 % interval of the ratio of the sums ``zh / en``, by a paired bootstrap
    (request i of each language typed the same text, in the same turn); empty without the values."""
    if not en or not zh or len(en) != len(zh):
        return ""
    rng = random.Random(0)
    pairs, ratios = list(zip(en, zh, strict=True)), []
    for _ in range(resamples):
        sample = rng.choices(pairs, k=len(pairs))
        low = sum(a for a, _ in sample)
        if low > 0:
            ratios.append(sum(b for _, b in sample) / low)
    ratios.sort()
    return f" [{ratios[int(0.025 * len(ratios))]:.2f}, {ratios[int(0.975 * len(ratios)) - 1]:.2f}]"


def keep(runs: dict, path: Path = RUNS) -> dict:
    """This invocation's runs, replacing the kept ones: a table compares runs taken together."""
    path.write_text(json.dumps(runs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return runs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20, help="fresh texts per page")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--label", default="current")
    p.add_argument(
        "--baseline",
        metavar="LABEL:KEY=VALUE,…",
        help="first a server with this environment on top of launch_env's, kept under LABEL "
        "(e.g. 'spinning threads:OMP_WAIT_POLICY='), then the current one",
    )
    p.add_argument(
        "--baseline-tree",
        type=Path,
        metavar="DIR",
        help="the baseline's server runs the code of this checkout (e.g. a git worktree of the commit before)",
    )
    p.add_argument(
        "--lang",
        default="en,zh",
        help="the interface's languages, side by side with their ratio (default en,zh; en alone: the "
        "English table kept as before)",
    )
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    langs = tuple(dict.fromkeys(check(code) for code in args.lang.split(",") if code.strip()))
    variants = [(args.label, {}, APP)]
    if args.baseline:
        label, _, pairs = args.baseline.partition(":")
        env = dict(pair.split("=", 1) for pair in pairs.split(",") if pair)
        script = APP
        if args.baseline_tree:
            env["PYTHONPATH"] = str(args.baseline_tree.resolve())
            script = args.baseline_tree.resolve() / APP.relative_to(APP.parents[1])
        variants.insert(0, (label, env, script))
    runs = {}
    for label, env, script in variants:
        if langs == ("en",):
            with serve(env={**launch_env(), **env}, script=script) as server:
                rows = {"en": asyncio.run(measure(server.url, server.process.pid, args.n, args.seed))}
        else:  # a server each, at once: the same texts, fresh to each, the sessions taking turns
            with contextlib.ExitStack() as stack:
                servers = {lang: stack.enter_context(serve(env={**launch_env(), **env}, script=script)) for lang in langs}
                where = {lang: (sv.url, sv.process.pid) for lang, sv in servers.items()}
                rows = asyncio.run(measure_together(where, args.n, args.seed))
        for lang, lang_rows in rows.items():
            name = label if langs == ("en",) else f"{label} ({lang})"
            runs[name] = summarise(lang_rows, name, env)
            print(name, json.dumps(runs[name]["requests"], indent=1))
    if not args.no_write:
        if langs == ("en",):
            write_section("bench_request_cost", render(keep(runs)))
        else:  # beside the English-only table, which stays
            write_section("bench_request_cost_languages", render(keep(runs, LANG_RUNS), languages=True))


if __name__ == "__main__":
    main()
