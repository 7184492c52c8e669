"""Attribution beside attention (issue 38): every method for one output, against the passes it needs.

Measured in one run (issue 38's goals in brackets):
- SmolLM2 at 128 input tokens (the first 128 tokens of the bundled English sample): the six methods of
  the command's contract together (the subject: the input's embeddings, its next token and the attention
  the views read; attention, rollout, saliency, input × gradient, integrated gradients with ``--steps``
  steps, occlusion)
  against the reference of ``steps + 2`` forward-and-backward passes of one input plus one forward per
  input token, each pass run one at a time, the two timed alternately (medians; ≤ 1.5×);
- the faithfulness on top (comprehensiveness and sufficiency at 10, 20, 50 %, the deletion curve of
  every method: ``methods × (n + 3)`` forwards), timed apart;
- a couplet, the bundled couplet RNN and Transformer: from the line to every method and the
  faithfulness (≤ 1 s);
- the value-norm-weighted attention and the composed contributions of SmolLM2, timed apart;
- integrated gradients' completeness gap at ``--steps`` steps, for every bundled model with an output;
- plausibility over ``--couplets`` held-out couplets (the first of ``load_split``'s held-out list), each
  position of each forced lower line: how often a method's top upper-line character is the aligned one,
  beside its mean faithfulness.

Run: python -m bench.bench_attribution [--tokens 128] [--steps 32] [--repeat 3] [--couplets 20]
(``ATLAS_THREADS=1`` as the app runs on this shared machine.)
"""

from __future__ import annotations

import argparse
import statistics
from datetime import date

import numpy as np
import torch

from attention_atlas.models.analysis import attribution as at
from attention_atlas.models.registry import load
from attention_atlas.paths import DATA
from bench.measure import timed
from bench.results import machine, write_section

CPU = torch.device("cpu")
UPPER, LOWER = "两个黄鹂鸣翠柳", "一行白鹭上青天"
SEQ2SEQ = (
    ("couplet-rnn-additive", UPPER, LOWER),
    ("couplet-rnn-dot", UPPER, LOWER),
    ("couplet-transformer", UPPER, LOWER),
    ("translate-gru-additive", "I'm home.", "Je suis chez moi."),
    ("translate-lstm-dot", "I'm home.", "Je suis chez moi."),
)


def english_ids(adapter, n: int) -> torch.Tensor:
    text = (DATA / "long_context" / "tatoeba_en.txt").read_text(encoding="utf-8")[:4000]
    ids = adapter.tokenizer(text, return_tensors="pt")["input_ids"][:, :n]
    if ids.shape[1] < n:
        raise SystemExit(f"the sample has only {ids.shape[1]} tokens")
    return ids


SIX = ("attention", "rollout", "saliency", "input_x_gradient", "integrated_gradients", "occlusion")


def everything(adapter, ids, steps: int, faithfulness: bool = False) -> at.Attribution:
    from attention_atlas.models.adapters.hf_common import Encoded

    n = ids.shape[1]
    weights = (
        adapter.run_encoded(Encoded(ids, [""] * n, [False] * n, list(range(n)), [])).records["self"].weights
    )
    subject = at.lm_subject(
        adapter.model, ids, None, None, at.baseline_id(adapter.tokenizer), "smollm2", weights, adapter.labels
    )
    return at.attribute(subject, SIX, steps=steps, faithfulness=faithfulness)


def along_the_path(adapter, ids, points: int = 201) -> tuple[np.ndarray, np.ndarray]:
    """``f`` at ``points`` evenly spaced points of integrated gradients' straight path from the baseline
    input to the input (``alpha``, ``f``): where it turns sharply, a few steps cannot integrate it."""
    subject = at.lm_subject(adapter.model, ids, None, None, at.baseline_id(adapter.tokenizer), "smollm2", "-")
    alpha = torch.linspace(0, 1, points)
    e, b = subject.embeddings, subject.baseline
    with torch.no_grad():
        f = torch.cat(
            [
                subject.forward(alpha[i : i + 25, None, None] * e + (1 - alpha[i : i + 25, None, None]) * b)
                for i in range(0, points, 25)
            ]
        )
    return alpha.numpy(), f.numpy()


def reference(model, ids, steps: int) -> None:
    """``steps + 2`` forward-and-backward passes of one input, then one forward per input token."""
    table = model.get_input_embeddings()
    e = table(ids).detach()
    for _ in range(steps + 2):
        x = e.clone().requires_grad_(True)
        out = torch.log_softmax(model(inputs_embeds=x, use_cache=False, logits_to_keep=1).logits[:, -1], -1)[
            0, 0
        ]
        torch.autograd.grad(out, x)
    with torch.no_grad():
        for _ in range(ids.shape[1]):
            model(inputs_embeds=e, use_cache=False, logits_to_keep=1)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--steps", type=int, default=at.STEPS)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--couplets", type=int, default=20)
    args = p.parse_args(argv)
    where = machine()
    adapter = load("smollm2", CPU)
    ids = english_ids(adapter, args.tokens)
    everything(adapter, ids[:, :16], args.steps)  # warm: captum's import, oneDNN's kernels
    ours, ref = [], []
    for _ in range(args.repeat):
        ours.append(timed(lambda: everything(adapter, ids, args.steps))[:2])
        ref.append(timed(lambda: reference(adapter.model, ids, args.steps))[:2])
    ours_wall, ours_cpu = (statistics.median(r[k] for r in ours) for k in (0, 1))
    ref_wall, ref_cpu = (statistics.median(r[k] for r in ref) for k in (0, 1))
    faith_wall, faith_cpu, full = timed(lambda: everything(adapter, ids, args.steps, faithfulness=True))
    faith_wall -= ours_wall
    faith_cpu -= ours_cpu

    path_gaps = {m: everything(adapter, ids[:, :24], m).ig_relative_gap for m in (32, 128)}
    alpha, f_path = along_the_path(adapter, ids[:, :24])
    slope = np.abs(np.diff(f_path) / np.diff(alpha))
    text = adapter.tokenizer.decode(ids[0])
    rows_wall2, rows_cpu2, _ = timed(lambda: at.subject_of(adapter, text))
    couplets = []
    gaps = [("smollm2", f"{args.tokens} tokens of English", full)]
    for model_id, text, target in SEQ2SEQ:
        seq = load(model_id, CPU)
        at.attribute(at.subject_of(seq, text, target), steps=args.steps)  # warm
        runs = [
            timed(lambda seq=seq, text=text: at.attribute(at.subject_of(seq, text), steps=args.steps))[:2]
            for _ in range(args.repeat)
        ]
        wall, cpu = (statistics.median(r[k] for r in runs) for k in (0, 1))
        couplets.append((model_id, text, wall, cpu))
        gaps.append(
            (model_id, f"{text} → {target}", at.attribute(at.subject_of(seq, text, target), steps=args.steps))
        )

    from attention_atlas.models.tasks.couplet import load_split

    held_out = load_split()[1][: args.couplets]
    plausible = {m: at.plausibility(load(m, CPU), held_out, steps=args.steps) for m, *_ in SEQ2SEQ[:3]}

    lines = [
        f"## Attribution beside attention (bench_attribution.py, {date.today()})",
        "",
        f"{where}. Medians of {args.repeat}; wall-clock seconds, CPU seconds of the process beside them.",
        "",
        "| what | wall s | CPU s | goal |",
        "| --- | ---: | ---: | --- |",
        f"| SmolLM2, {args.tokens} tokens: every method ({', '.join(full.methods)}; {args.steps} steps) "
        f"| {ours_wall:.1f} | {ours_cpu:.1f} | |",
        f"| the reference: {args.steps + 2} forward-and-backward passes + {args.tokens} forwards, one at a time "
        f"| {ref_wall:.1f} | {ref_cpu:.1f} | |",
        f"| ratio | {ours_wall / ref_wall:.2f}× | {ours_cpu / ref_cpu:.2f}× | ≤ 1.5× |",
        f"| faithfulness on top ({len(full.methods)} methods × ({args.tokens} + 3) forwards, batched) "
        f"| {faith_wall:.1f} | {faith_cpu:.1f} | |",
        f"| SmolLM2, {args.tokens} tokens: the subject as the page and the command make it (attention, rollout, value norms, contributions; "
        f"no gradient) | {rows_wall2:.1f} | {rows_cpu2:.1f} | |",
        *(
            f"| {model_id} on {text}: the line to every method and the faithfulness | {wall:.2f} | {cpu:.2f} | "
            f"{'≤ 1 s' if 'couplet' in model_id else ''} |"
            for model_id, text, wall, cpu in couplets
        ),
        "",
        f"Integrated gradients' completeness gap at {args.steps} steps, |Σᵢ IGᵢ − (f(x) − f(baseline))|, "
        "f the output token's log-probability:",
        "",
        "| model | output | baseline | f(x) | f(baseline) | gap | share of the difference |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {model_id} | {what}: {r.target!r} | {r.baseline_token} | {r.f_input:.3f} | {r.f_baseline:.3f} "
            f"| {r.ig_completeness_gap:.2e} | {r.ig_relative_gap:.2%} |"
            for model_id, what, r in gaps
        ),
        "",
        f"SmolLM2's gap, on the first 24 of those tokens: {path_gaps[32]:.1%} at 32 steps, {path_gaps[128]:.1%} at 128. "
        f"Along the straight path from the baseline input to the input, f (201 points) goes from {f_path[0]:.2f} to "
        f"{f_path[-1]:.2f} through a minimum of {f_path.min():.2f} at α = {alpha[f_path.argmin()]:.2f}, where "
        f"|df/dα| reaches {slope.max():.0f}: a narrow dip that a few quadrature points miss, so the gap says how far "
        "to trust integrated gradients' scores for this output, and more --steps narrow it.",
        "",
        f"Plausibility and faithfulness over {len(held_out)} held-out couplets, every position of each forced "
        "lower line: plausible = how often the method's top upper-line character is the aligned one (position "
        "i ↔ i); AOPC, comprehensiveness and sufficiency at 20 % averaged (higher AOPC and comprehensiveness, "
        "lower sufficiency: more faithful).",
        "",
        "| model | method | plausible | AOPC | comprehensiveness 20 % | sufficiency 20 % |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {model_id} | {m} | {row['plausible']:.0%} | {row['aopc']:.3f} | {row['comprehensiveness']:.3f} "
            f"| {row['sufficiency']:.3f} |"
            for model_id, report in plausible.items()
            for m, row in report.items()
        ),
        *(
            f"- {model_id}: most plausible {max(report, key=lambda m: report[m]['plausible'])}, most faithful "
            f"(AOPC) {max(report, key=lambda m: report[m]['aopc'])}."
            for model_id, report in plausible.items()
        ),
    ]
    print("\n".join(lines))
    write_section("bench_attribution", "\n".join(lines))


if __name__ == "__main__":
    main()
