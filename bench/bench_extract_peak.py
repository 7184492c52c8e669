"""The peak memory of one head of a long text on the command line (issue 26: `cli.py extract --model
smollm2 --text-file F --layer 18 --head 6 --out F.npz` on a 7,894-token text peaked at 3,175 MB
against 853 MB on 16 tokens, +2,322 MB; goal: ≤ 1 GB above the short run).

Each command runs in a process of its own, the short one first; the peak is the process's maximum
resident set (``ru_maxrss`` of this process's children: the larger of those waited for so far, so
the long command's is read after the short one's). The text is the long-context sample cut to the
token count with SmolLM2's tokenizer.

Run: python -m bench.bench_extract_peak [--tokens 7894]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from attention_atlas.paths import DATA
from bench.measure import peak_mb
from bench.results import machine, write_section

REPO = Path(__file__).resolve().parents[1]



def text_of(tokens: int) -> str:
    from transformers import AutoTokenizer

    from attention_atlas.models.adapters.smollm2 import converted_folder

    tokenizer = AutoTokenizer.from_pretrained(converted_folder())
    text = (DATA / "long_context" / "tatoeba_en.txt").read_text(encoding="utf-8")
    ids = tokenizer(text)["input_ids"]  # about 2,000: repeated to length
    return tokenizer.decode((ids * (tokens // len(ids) + 1))[:tokens])


def extract(text: str, folder: Path) -> tuple[float, float]:
    """Seconds and peak MB of ``cli.py extract`` on ``text`` (one head, to an .npz)."""
    source = folder / "text.txt"
    source.write_text(text, encoding="utf-8")
    command = [sys.executable, str(REPO / "cli.py"), "extract", "--model", "smollm2", "--text-file", str(source)]
    command += ["--layer", "18", "--head", "6", "--out", str(folder / "head.npz")]
    t = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - t, peak_mb(children=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=7894)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench_extract_peak_"))
    short_s, short_mb = extract("The cat sat on the mat because it was tired.", folder)
    long_s, long_mb = extract(text_of(args.tokens), folder)
    lines = [
        "## One head of a long text on the command line: peak memory (bench_extract_peak)",
        "",
        f"{date.today()}, {machine()}; `cli.py extract --model smollm2 --text-file F --layer 18 --head 6 "
        "--out F.npz`, each command a process of its own; peak: its maximum resident set.",
        "",
        "| text | seconds | peak | above the short run [≤ 1,024 MB] |",
        "| --- | --- | --- | --- |",
        f"| 16 tokens | {short_s:.1f} s | {short_mb:,.0f} MB | |",
        f"| {args.tokens:,} tokens | {long_s:.1f} s | {long_mb:,.0f} MB | +{long_mb - short_mb:,.0f} MB |",
    ]
    print("\n".join(lines))
    write_section("bench_extract_peak", "\n".join(lines))


if __name__ == "__main__":
    main()
