"""Cold start: from `streamlit run` to the first Plotly chart drawn in chromium.

Ours (the Scoring functions page, which computes six scorers and three figures) beside a
minimal Streamlit app that draws one small Plotly chart: the framework's own floor.
Run: python -m bench.bench_cold_start [repeats]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from bench.results import machine, write_section
from harness.browser import PLOT_DRAWN, browser_page, streamlit_server

MINIMAL_APP = """
import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Heatmap(z=[[0.2, 0.8], [0.6, 0.4]])))
"""


def cold_start(page, script: str, path: str) -> float:
    start = time.perf_counter()
    with streamlit_server(script=script) as url:
        page.goto(f"{url}/{path}")
        page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
        return time.perf_counter() - start


def main(repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal_app.py"
        minimal.write_text(MINIMAL_APP)
        times = {"Attention Atlas, /scoring": [], "minimal Streamlit + Plotly app": []}
        with browser_page() as page:
            for _ in range(repeats):  # interleaved, so drift in machine load hits both
                times["Attention Atlas, /scoring"].append(cold_start(page, "app.py", "scoring"))
                times["minimal Streamlit + Plotly app"].append(cold_start(page, str(minimal), ""))
    base = statistics.median(times["minimal Streamlit + Plotly app"])
    lines = [
        "## Cold start (bench/bench_cold_start.py)",
        "",
        f"{date.today()}, {machine()}. Seconds from launching `streamlit run` to the first Plotly chart drawn "
        f"in Debian's chromium (headless), median of {repeats} interleaved runs.",
        "",
        "| app | median (s) | runs (s) | vs minimal app |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, ts in times.items():
        runs = ", ".join(f"{t:.1f}" for t in ts)
        lines.append(
            f"| {name} | {statistics.median(ts):.1f} | {runs} | {statistics.median(ts) / base:.2f}× |"
        )
    write_section("bench_cold_start", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
