"""What ``atlas extract --json`` writes for one long input: MiniLM's records at its 512-token limit
(6 layers × 12 heads × 512 × 512 weights), through ``cli.common.json_text`` (orjson, each float32 in
its shortest decimal) against the ``json.dumps`` of ``tolist()`` the command used before, in the same
run. Both are read back and compared with the weights as computed.

Run: python -m bench.bench_json [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import date

import numpy as np
import torch

from attention_atlas.cli.common import json_text
from bench.results import machine, write_section


def seconds(fn, repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from attention_atlas.models.registry import load

    adapter = load("minilm", torch.device("cpu"))
    result = adapter.run("word " * 2_000)  # cut to the first 512 tokens
    obj = result.to_json(adapter)
    weights = obj["records"][0]["weights"]
    before = {**obj, "records": [{**r, "weights": r["weights"].tolist()} for r in obj["records"]]}
    old_s, old = seconds(lambda: json.dumps(before, ensure_ascii=False), args.repeat)
    new_s, new = seconds(lambda: json_text(obj), args.repeat)
    for text in (old, new):
        back = np.array(json.loads(text)["records"][0]["weights"], dtype=np.float32)
        assert np.array_equal(back, weights), "the JSON does not read back to the weights as computed"
    lines = [
        "## `atlas extract --json` at 512 tokens (bench_json)",
        "",
        f"{date.today()}, {machine()}; MiniLM, {weights.shape} float32 weights; median of {args.repeat}; "
        "both read back to the same float32.",
        "",
        "| writer | MB | seconds | vs json.dumps |",
        "| --- | --- | --- | --- |",
        f"| `json.dumps` of `tolist()` (before) | {len(old.encode()) / 1e6:,.0f} | {old_s:.2f} | 1.00× |",
        f"| `json_text` (orjson) | {len(new.encode()) / 1e6:,.0f} | {new_s:.2f} | {new_s / old_s:.3f}× |",
    ]
    print("\n".join(lines))
    write_section("bench_json", "\n".join(lines))


if __name__ == "__main__":
    main()
