"""The GPU path: every model-side view of a SmolLM2-shaped causal LM on CUDA, beside the CPU, in one run.

The app runs on CUDA first (``models.device``); CI and this project's machine have no GPU, so this
script is the check of that path, run on a lent GPU machine. One folder holds SmolLM2-135M's own
config and tokenizer with random weights (seeded; SmolLM2's real weights are larger than what travels
to that machine, and speed does not depend on the weights' values). The same folder is opened twice
through ``HFAdapter`` — on the CPU and on CUDA — and each view runs on both:

- the Transformer page's record (eager attention weights of every head) at 512 tokens;
- the long-input capture (queries and keys of every layer) at 2,048 and 8,192 tokens, then one head's
  overview from it;
- the logit lens's whole grid at 512 tokens;
- the contribution graph at 512 tokens;
- generation of 64 greedy tokens with each one's attention.

For each: median wall seconds of ``--repeat`` runs on each device (after one warm-up), the ratio, and the
largest difference between the two devices' outputs (weights, probabilities, contributions), which must
stay within float32 rounding (``--tol``); a mismatch or an error is printed and makes the exit status 1.

Run (on a GPU machine where the app is installed): python -m bench.bench_gpu [--repeat 3] [--out results.md]
Where SmolLM2's package is not installed, ``--folder DIR`` gives config.json and tokenizer files
(``--export DIR`` writes them from the app's cached SmolLM2 conversion, on a machine that has it).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import traceback
from datetime import date
from pathlib import Path

import numpy as np
import torch

from attention_atlas.models import registry
from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.adapters import value_norms as vn
from attention_atlas.models.adapters.hf import HFAdapter
from attention_atlas.models.analysis import ablation as ab
from attention_atlas.models.analysis import contributions as cb
from attention_atlas.models.analysis import generate as gn
from attention_atlas.models.analysis import lens as ln
from attention_atlas.models.analysis import neuron as nr
from attention_atlas.models.device import describe
from attention_atlas.viz_core import blockwise as bw
from bench.results import write_section
from harness.tiny_variants import tiny_variant

SMALL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
LAYER, HEAD = 15, 4
CPU = torch.device("cpu")
PARAGRAPH = (
    "The river rose in the night and the village woke to water in the streets. "
    "Old Chen carried his books upstairs, one armful at a time, while his granddaughter counted them. "
)


def export(folder: Path) -> None:
    """SmolLM2's config and tokenizer (no weights) from the app's cached conversion, into ``folder``."""
    from attention_atlas.models.registry import load

    load("smollm2", torch.device("cpu"))  # builds the cache if it is missing
    cached = next((Path.home() / ".cache" / "attention-atlas").glob("smollm2-*"))
    folder.mkdir(parents=True, exist_ok=True)
    for name in SMALL_FILES:
        shutil.copy(cached / name, folder / name)


def with_random_weights(folder: Path, work: Path) -> Path:
    """``folder``'s config and tokenizer with seeded random float32 weights, saved in ``work``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(work)
    for name in SMALL_FILES:
        if (folder / name).exists():
            shutil.copy(folder / name, work / name)
    return work


def text_of(adapter, n: int) -> str:
    """A text that the adapter encodes to about ``n`` tokens."""
    ids = adapter.tokenizer(PARAGRAPH * (n // 20 + 2))["input_ids"][: n - 2]
    return adapter.tokenizer.decode(ids)


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_time(fn, repeat: int):
    fn()  # warm-up (CUDA kernels, caches)
    times, out = [], None
    for _ in range(repeat):
        sync()
        t = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def record(adapter, text):
    return next(iter(adapter.run(text).records.values())).weights


def capture_overview(adapter, text):
    cap = cp.capture(adapter, text)
    return bw.reduce_head(cap, LAYER, HEAD).values, len(cap.tokens)


def lens_grid(adapter, text):
    grid, _ = ln.lens(adapter, text, 10)
    return grid.top_probs, grid.top_ids


def contribution_graph(adapter, text):
    c = cb.contributions(adapter, text)
    return np.concatenate([c.attn.ravel(), c.attn_residual.ravel(), c.ffn.ravel(), c.ffn_residual.ravel()])


def generation(adapter, text):
    result = gn.generate(adapter, text, 64)
    return result.attention, result.ids


def value_norms(adapter, text):
    return vn.value_norms(adapter, text)


def ablated_lens(adapter, text):
    return np.concatenate([a.ravel() for a in ab.lens_at_last(adapter, text, [(LAYER, HEAD), (0, 0)])])


def neuron_vectors(adapter, text):
    vectors = nr.head_vectors(adapter, text, "self")
    return np.concatenate([np.asarray(x, dtype=np.float32).ravel() for x in _arrays(vectors)])


def _arrays(obj) -> list:
    """Every numpy array in a dataclass or sequence, in order."""
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for x in obj for a in _arrays(x)]
    if hasattr(obj, "__dataclass_fields__"):
        return [a for f in obj.__dataclass_fields__ for a in _arrays(getattr(obj, f))]
    return []


def bundled(cpu_device, gpu_device) -> list[tuple[str, bool]]:
    """Every bundled model whose weights are here, run on both devices: each record's weights compared."""
    rows = []
    for model_id in (
        "couplet-rnn-dot",
        "couplet-rnn-additive",
        "couplet-transformer",
        "translate-gru-additive",
        "translate-lstm-dot",
    ):
        try:
            a, b = registry.load(model_id, cpu_device), registry.load(model_id, gpu_device)
        except Exception as err:  # weights that did not travel: say so, go on
            rows.append((f"| {model_id} | | not loaded: {type(err).__name__} | | | | |", True))
            continue
        example = registry.info(model_id).example
        line, good = run_case(
            f"{model_id} record", lambda ad, t: _arrays(_records(ad, t)), 0, a, b, 3, 1e-4, text=example
        )
        rows.append((line, good))
    return rows


def _records(adapter, text):
    return [r.weights for r in adapter.run(text).records.values()]


def notebook_show(folder: Path, text: str, device: torch.device, dtype: torch.dtype) -> np.ndarray:
    """What ``attention_atlas.notebook.show`` draws for the model as a researcher loaded it (SDPA,
    ``dtype``, on ``device``): every head's weights."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from attention_atlas.notebook.run import adapter_of, records_of

    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa", dtype=dtype).to(device)
    records, _ = records_of(adapter_of(model.eval(), AutoTokenizer.from_pretrained(folder)), text)
    return records["self"].weights


def eager_weights(folder: Path, text: str, device: torch.device = CPU) -> np.ndarray:
    """transformers' own eager attention in float32 on ``device``, ``[layers, heads, n, n]``."""
    plain = HFAdapter("eager", folder, device)
    return next(iter(plain.run(text).records.values())).weights


def notebook_rows(folder: Path, text: str, gpu: torch.device) -> list[str]:
    """``show()`` on CUDA (float32 and bfloat16, SDPA) against eager attention on the CPU."""
    want = eager_weights(folder, text)
    rows = []
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 0.1)):
        t = time.perf_counter()
        try:
            got = notebook_show(folder, text, gpu, dtype)
        except Exception as err:  # a bench reports every failure and goes on
            traceback.print_exc()
            rows.append(
                (f"| notebook show(), SDPA {dtype} | | error: {type(err).__name__}: {err} | | | | |", False)
            )
            continue
        worst = diff(got, want)
        good = worst <= tol
        rows.append(
            (
                f"| notebook show(), SDPA {str(dtype).split('.')[-1]} on CUDA vs eager float32 on the CPU "
                f"| {want.shape[-1]} | | {time.perf_counter() - t:.2f} s | | {worst:.1e} | {'ok' if good else 'MISMATCH'} |",
                good,
            )
        )
    return rows


VARIANTS = ("mistral", "gemma2", "gemma3", "gpt_oss")  # harness.tiny_variants, with SmolLM2's tokenizer


def variant_rows(folder: Path, work: Path, gpu: torch.device) -> list[tuple[str, bool]]:
    """Each variant's long-input capture on CUDA, every head recomputed block-wise, against eager on the CPU."""
    import transformers

    rows = []
    vocab = len(transformers.AutoTokenizer.from_pretrained(folder))
    for name in VARIANTS:
        try:
            model = tiny_variant(name, vocab_size=vocab)
            where = work.with_name(f"{work.name}-{name}")
            model.save_pretrained(where)
            for f in SMALL_FILES[2:]:
                shutil.copy(folder / f, where / f)
            text = PARAGRAPH * 2
            cap = cp.capture(HFAdapter(name, where, gpu), text)
            got = np.stack(
                [[bw.head_weights(cap, la, h) for h in range(cap.n_heads)] for la in range(cap.n_layers)]
            )
            worst, across = diff(got, eager_weights(where, text, gpu)), diff(got, eager_weights(where, text))
            rows.append(
                (
                    f"| long-input capture vs eager, both on CUDA, {name} | {cap.n_tokens} | | | | {worst:.1e} | "
                    f"{'ok' if worst <= 1e-5 else 'MISMATCH'} (vs eager on the CPU: {across:.1e}) |",
                    worst <= 1e-5,
                )
            )
        except Exception as err:  # a bench reports every failure and goes on
            traceback.print_exc()
            rows.append(
                (
                    f"| long-input capture, {name} | | error: {type(err).__name__}: {str(err)[:160]} | | | | |",
                    False,
                )
            )
    return rows


def compare(name: str, cpu_out, gpu_out) -> tuple[float, str]:
    """The largest difference of the float outputs, and a note where integer outputs differ."""
    if name == "capture + overview":
        return diff(cpu_out[0], gpu_out[0]), ""
    if name == "logit lens grid":
        same = float(np.mean(cpu_out[1][..., 0] == gpu_out[1][..., 0]))
        return diff(cpu_out[0], gpu_out[0]), f"top-1 ids agree at {same:.2%} of cells"
    if name == "generate 64":
        if cpu_out[1].shape != gpu_out[1].shape or (cpu_out[1] != gpu_out[1]).any():
            first = int(np.argmax(cpu_out[1][: len(gpu_out[1])] != gpu_out[1][: len(cpu_out[1])]))
            return float("nan"), f"tokens part at position {first}"
        return diff(cpu_out[0], gpu_out[0]), "same tokens"
    if isinstance(cpu_out, list):
        return max(diff(a, b) for a, b in zip(cpu_out, gpu_out, strict=True)), ""
    return diff(cpu_out, gpu_out), ""


CASES = (
    ("record (every head)", record, 512),
    ("capture + overview", capture_overview, 2048),
    ("capture + overview", capture_overview, 8192),
    ("logit lens grid", lens_grid, 512),
    ("contribution graph", contribution_graph, 512),
    ("generate 64", generation, 128),
    ("value norms", value_norms, 512),
    ("ablated logit lens", ablated_lens, 512),
    ("neuron view vectors", neuron_vectors, 512),
)


def run_case(name, fn, n, cpu, gpu, repeat, tol, text=None) -> tuple[str, bool]:
    text = text if text is not None else text_of(cpu, n)
    n = n or len(text)
    try:
        t_cpu, out_cpu = median_time(lambda: fn(cpu, text), repeat)
        t_gpu, out_gpu = median_time(lambda: fn(gpu, text), repeat)
        worst, note = compare(name, out_cpu, out_gpu)
    except Exception as err:
        traceback.print_exc()
        return f"| {name} | {n:,} | error: {type(err).__name__}: {str(err)[:160]} | | | | |", False
    good = (worst <= tol or name == "generate 64") and not note.startswith("tokens part")
    return (
        f"| {name} | {n:,} | {t_cpu:.3f} s | {t_gpu:.3f} s | {t_cpu / t_gpu:.1f}× | {worst:.1e} | "
        f"{note or ('ok' if good else 'MISMATCH')} |"
    ), good


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--folder",
        type=Path,
        help="config.json and tokenizer of a causal LM (default: SmolLM2's, from the app)",
    )
    parser.add_argument("--export", type=Path, help="write SmolLM2's config and tokenizer here, and stop")
    parser.add_argument("--work", type=Path, default=Path("/tmp/atlas-gpu-model"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-3, help="largest CPU–CUDA difference allowed")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only-variants", action="store_true", help="the attention variants' rows alone")
    parser.add_argument("--device", default="cuda", help="the device beside the CPU (cpu: a smoke test here)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every case's tokens (smoke tests)")
    args = parser.parse_args(argv)
    if args.export:
        export(args.export)
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: this bench compares the CPU with a GPU", file=sys.stderr)
        return 2
    if args.folder is None:  # where the app is installed: SmolLM2's own config and tokenizer
        args.folder = args.work.with_name(args.work.name + "-config")
        export(args.folder)
    folder = with_random_weights(args.folder, args.work)
    cpu = HFAdapter("smollm2-shaped", folder, torch.device("cpu"))
    gpu = HFAdapter("smollm2-shaped", folder, torch.device(args.device))
    lines = [
        "## GPU path (bench_gpu)",
        "",
        f"{date.today()}, {describe(gpu.device)} beside the same machine's CPU "
        f"({torch.get_num_threads()} torch threads), torch {torch.__version__}; SmolLM2-135M's config and "
        f"tokenizer with seeded random weights (float32, eager attention as the app loads it); median of "
        f"{args.repeat} after a warm-up; the last column is the largest CPU–CUDA difference of the outputs.",
        "",
        "| view | tokens | CPU | CUDA | speed-up | max difference | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    print("\n".join(lines), flush=True)
    ok = True
    for name, fn, n in () if args.only_variants else CASES:
        line, good = run_case(name, fn, max(16, int(n * args.scale)), cpu, gpu, args.repeat, args.tol)
        lines.append(line)
        ok &= good
        print(line, flush=True)
    rows = variant_rows(args.folder, args.work, gpu.device)
    if not args.only_variants:
        rows = bundled(cpu.device, gpu.device) + notebook_rows(folder, text_of(cpu, 256), gpu.device) + rows
    for line, good in rows:
        lines.append(line)
        ok &= good
        print(line, flush=True)
    if gpu.device.type == "cuda" and not args.only_variants:  # a smoke test or a part records nothing
        write_section("gpu", "\n".join(lines))
    if args.out:  # the lent machine's copy of RESULTS.md does not come back: this file does
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
