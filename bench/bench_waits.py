"""Waits and their signs of work (issue 27, item 6), in chromium at 1280 × 720, sampled every 100 ms.

Two waits on the Transformer heads page: a fresh server's first visit to ``/transformer`` (from
the request to the first chart drawn) and a 600-word paragraph typed there (Enter to the script's
end). Each sample notes whether the title shows, the text of any spinner or progress bar, the
charts drawn, the page's elements and whether the tabs are on screen. Reported per wait: time to
the first content and to the first chart; the longest stretch in which nothing changed on screen
and nothing said what was happening ("blind"); whether the tabs vanished while the paragraph ran.

Run: python -m bench.bench_waits [repeats] [label=checkout ...]. Each checkout (a git worktree of
the baseline, say) serves the app from its own code, so a baseline and the change run
interleaved on the same machine; without one, the current checkout alone.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "The quick brown fox jumps over the lazy dog while the cat sleeps near the warm fire "
PARAGRAPH = " ".join((SENTENCE * 36).split()[:600])  # 600 words
PROBE = """() => {
  const seen = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const all = s => [...main.querySelectorAll(s)].filter(seen);
  return {
    title: all('h1').length > 0,
    sign: all('[data-testid="stSpinner"], [data-testid="stProgress"]').map(e => e.innerText.trim()).join(' | '),
    charts: all('.js-plotly-plot .main-svg .cartesianlayer').length,
    elements: all('[data-testid="stElementContainer"]').length,
    tabs: all('[data-testid="stTabs"]').length,
    stale: main.querySelectorAll('[data-stale="true"]').length,  // what the run has not redrawn yet
  };
}"""


def watch(page, start: float, done, limit: float = 300.0) -> list[tuple[float, dict]]:
    """Samples every 100 ms until ``done(sample, seconds)`` or ``limit`` seconds."""
    samples = []
    while (t := time.perf_counter() - start) < limit:
        sample = page.evaluate(PROBE)
        samples.append((t, sample))
        if done(sample, t):
            break
        page.wait_for_timeout(100)
    return samples


def settled():
    """``done`` for ``watch`` after a widget's change: the run it started has been seen (something
    stale or a spinner) and is over (charts drawn, nothing stale, no spinner)."""
    begun = []

    def done(sample: dict, seconds: float) -> bool:
        if sample["stale"] or sample["sign"]:
            begun.append(seconds)
        return bool(begun) and sample["charts"] > 0 and not sample["stale"] and not sample["sign"]

    return done


def blind(samples: list[tuple[float, dict]]) -> tuple[float, float]:
    """The longest stretch with no sign of work and nothing new on screen (an element redrawn
    counts as new), and when it began."""
    longest, began, since, last = 0.0, 0.0, samples[0][0], None
    for t, s in samples:
        view = (s["title"], s["charts"], s["elements"], s["tabs"], s["stale"])
        if s["sign"] or view != last:
            since, last = t, view
        if t - since > longest:
            longest, began = t - since, since
    return longest, began


def first(samples, test) -> float | None:
    return next((t for t, s in samples if test(s)), None)


def probe() -> dict:
    """One fresh server of this checkout: the first visit, then the paragraph."""
    from harness.browser import browser_page, streamlit_server

    with browser_page(1280, 720) as page, streamlit_server() as url:
        start = time.perf_counter()
        page.goto(f"{url}/transformer")
        visit = watch(page, start, lambda s, t: s["charts"] > 0 and not s["stale"] and not s["sign"])
        page.wait_for_timeout(2000)
        box = page.get_by_label("text", exact=True)
        box.fill(PARAGRAPH)
        start = time.perf_counter()
        box.press("Enter")
        typed = watch(page, start, settled())
    signs = sorted({s["sign"] for _, s in visit + typed if s["sign"]})
    return {
        "content": first(visit, lambda s: s["title"]),
        "chart": first(visit, lambda s: s["charts"] > 0),
        "visit_blind": blind(visit)[0],
        "visit_blind_from": blind(visit)[1],
        "typed_done": typed[-1][0],
        "typed_blind": blind(typed)[0],
        "typed_blind_from": blind(typed)[1],
        "tabs_vanished": any(s["tabs"] == 0 for _, s in typed),
        "signs": signs,
    }


def run_in(checkout: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--probe"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(repeats: int, checkouts: dict[str, Path]) -> None:
    from bench.results import machine, write_section

    runs: dict[str, list[dict]] = {label: [] for label in checkouts}
    for _ in range(repeats):  # interleaved, so the machine's load hits every checkout alike
        for label, checkout in checkouts.items():
            runs[label].append(run_in(checkout))
            print(label, runs[label][-1], flush=True)
    keys = [
        ("content", "first visit: title shown (s)"),
        ("chart", "first visit: first chart (s)"),
        ("visit_blind", "first visit: longest blind stretch (s)"),
        ("typed_done", "600 words typed: done (s)"),
        ("typed_blind", "600 words typed: longest blind stretch (s)"),
    ]
    lines = [
        "## Waits and their signs (bench/bench_waits.py)",
        "",
        f"{date.today()}, {machine()}. A fresh server per run, chromium at 1280 × 720 sampled every 100 ms: "
        "the first visit to /transformer, then a 600-word paragraph typed there. *Blind*: the longest "
        f"stretch with no spinner or progress bar and nothing new on screen. Medians of {repeats} "
        "interleaved runs (runs in brackets).",
        "",
        "| measure | " + " | ".join(checkouts) + " |",
        "| --- |" + " ---: |" * len(checkouts),
    ]
    for key, name in keys:
        cells = []
        for label in checkouts:
            values = [r[key] for r in runs[label]]
            cells.append(f"{statistics.median(values):.1f} ({', '.join(f'{v:.1f}' for v in values)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    vanished = [f"{sum(r['tabs_vanished'] for r in runs[label])} of {repeats}" for label in checkouts]
    lines.append("| 600 words typed: the tabs vanished meanwhile | " + " | ".join(vanished) + " |")
    for label in checkouts:
        signs = sorted({s for r in runs[label] for s in r["signs"]})
        lines += ["", f"Signs seen ({label}): " + "; ".join(signs or ["none"])]
    write_section("bench_waits", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        print(json.dumps(probe()))
    else:
        args = sys.argv[1:]
        repeats = int(args.pop(0)) if args and args[0].isdigit() else 2
        trees = dict(a.split("=", 1) for a in args) or {"this checkout": str(ROOT)}
        main(repeats, {label: Path(path) for label, path in trees.items()})
