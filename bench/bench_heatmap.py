"""One 512 × 512 attention heatmap: payload size and build time, ours beside naive Plotly.

Goal (issue 2): figure JSON ≤ 1.5 MB, built in ≤ 50 ms (median of 20).
Run: python -m bench.bench_heatmap
"""

from __future__ import annotations

from datetime import date

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from attention_atlas.viz_core.figures import heatmap
from bench.results import machine, median_seconds, write_section

N = 512


def attention(n: int, seed: int = 0) -> np.ndarray:
    """Softmax rows of random scores: realistic, peaky attention weights."""
    scores = np.random.default_rng(seed).normal(scale=3.0, size=(n, n))
    w = np.exp(scores - scores.max(1, keepdims=True))
    return (w / w.sum(1, keepdims=True)).astype(np.float32)


def naive(w: np.ndarray, tokens: list[str]) -> go.Figure:
    """What notebooks usually do: nested lists and a hover string per cell."""
    text = [
        [f"{tokens[i]} → {tokens[j]}: {w[i, j]:.3f}" for j in range(len(tokens))] for i in range(len(tokens))
    ]
    return go.Figure(
        go.Heatmap(z=w.tolist(), x=list(range(N)), y=list(range(N)), text=text, hoverinfo="text")
    )


def plain_numpy(w: np.ndarray, tokens: list[str]) -> go.Figure:
    """Plotly with a float64 numpy array and tick labels, no per-cell text."""
    return go.Figure(go.Heatmap(z=w.astype(np.float64))).update_xaxes(
        tickvals=list(range(N)), ticktext=tokens
    )


def to_json(fig: go.Figure) -> str:
    return pio.to_json(fig, validate=False)  # what st.plotly_chart sends


def measure(build, w, tokens) -> dict:
    return {
        "bytes": len(to_json(build(w, tokens))),
        "build": median_seconds(lambda: build(w, tokens)),
        "build_json": median_seconds(lambda: to_json(build(w, tokens))),
    }


def main() -> None:
    w = attention(N)
    tokens = [chr(0x4E00 + (i * 37) % 20000) for i in range(N)]  # CJK characters, some repeated
    rows = {
        "viz_core.heatmap (ours)": measure(lambda w, t: heatmap(w, t, t), w, tokens),
        "float64 numpy + ticks": measure(plain_numpy, w, tokens),
        "naive lists + hover text": measure(naive, w, tokens),
    }
    ours = rows["viz_core.heatmap (ours)"]
    lines = [
        "## Heatmap, 512 × 512 (bench/bench_heatmap.py)",
        "",
        f"{date.today()}, {machine()}. Median of 20 builds after 2 warm-ups; payload = `plotly.io.to_json`, "
        "which is what `st.plotly_chart` sends. Goal: ≤ 1.5 MB and ≤ 50 ms.",
        "",
        "| figure | payload (MB) | build (ms) | build + JSON (ms) | payload vs ours |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['bytes'] / 1e6:.2f} | {r['build'] * 1e3:.1f} | {r['build_json'] * 1e3:.1f} "
            f"| {r['bytes'] / ours['bytes']:.2f}× |"
        )
    write_section("bench_heatmap", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
