"""Train the couplet Transformer (``python cli.py train couplet-transformer``) and bundle it.

The loop, resuming and progress bar are ``models.training.loop``'s; data, split, vocabulary,
batches and loss are the couplet RNNs' (``models.tasks.couplet``). What is the Transformer's own:
its config, a learning-rate warm-up, and an evaluation that watches the cross-attention
alignment of every layer, so a run can stop once its best layer is diagonal enough.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from models.device import describe, pick_device
from models.nets.transformer import Transformer, TransformerConfig
from models.tasks.couplet import (
    DATA_PATH,
    EXAMPLE,
    SPLIT_SEED,
    VALID_SIZE,
    CoupletBatches,
    build_vocab,
    load_split,
)
from models.tasks.couplet_heads import (
    CoupletTransformer,
    TransformerBundle,
    evaluate_transformer,
    forced_layer_metrics,
)
from models.text.vocab import Vocab
from models.training.loop import Trainer, loss_fn
from models.training.run_folder import check_same_run, fit_logged, logger, run_facts, train_config

REPO = Path(__file__).resolve().parents[2]
MODEL_ID = "couplet-transformer"


@dataclass
class TransformerTrainArgs:
    out: Path | None = None  # default: weights/couplet-transformer
    run_dir: Path | None = None  # default: cache/runs/couplet-transformer (git-ignored; for resuming)
    data: Path = DATA_PATH
    steps: int = 4000
    batch_size: int = 128
    lr: float = 1e-3
    warmup: int = 300  # steps of linear learning-rate warm-up (pre-LN tolerates a short one)
    d_model: int = 256
    heads: int = 4
    encoder_layers: int = 3
    decoder_layers: int = 3
    ffn: int = 1024
    dropout: float = 0.1
    vocab_size: int = 6000  # the RNNs' vocabulary: same data, same build, same characters
    join_prob: float = 0.1
    seed: int = 0
    threads: int = 2
    eval_every: int = 100
    eval_pairs: int = 500  # validation pairs checked during training (the card uses all)
    save_every: int = 100
    target_alignment: float | None = None  # stop once the best layer reaches it on the sample
    min_steps: int = 0
    beam: int = 4  # the card also reports generations of a beam this wide
    dtype: str = "float16"  # storage of the bundled weights (loaded as float32)
    device: str | None = None
    fresh: bool = False  # ignore an existing training state


def train(args: TransformerTrainArgs, command: str = "") -> dict:
    torch.set_num_threads(args.threads)
    out = Path(args.out or REPO / "weights" / MODEL_ID)
    run_dir = Path(args.run_dir or REPO / "cache" / "runs" / MODEL_ID)
    run_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(args.device)
    log = logger(run_dir / "train.log")
    log(f"{MODEL_ID}: device {describe(device)}, data {args.data}")

    train_pairs, valid_pairs = load_split(args.data)
    vocab_file = run_dir / "vocab.json"
    if vocab_file.is_file() and not args.fresh:
        vocab = Vocab.from_json(vocab_file.read_text(encoding="utf-8"))
    else:
        vocab = build_vocab(train_pairs, args.vocab_size)
        vocab_file.write_text(vocab.to_json(), encoding="utf-8")
    cfg = TransformerConfig(
        src_vocab_size=len(vocab),
        tgt_vocab_size=len(vocab),
        d_model=args.d_model,
        num_heads=args.heads,
        encoder_layers=args.encoder_layers,
        decoder_layers=args.decoder_layers,
        ffn_size=args.ffn,
        dropout=args.dropout,
        share_embeddings=True,
    )
    check_same_run(run_dir / "model_config.json", cfg, args.fresh)
    if args.fresh:
        (run_dir / "train_state.safetensors").unlink(missing_ok=True)
    torch.manual_seed(args.seed)  # the initial weights (a resumed run overwrites them)
    model = Transformer(cfg)
    log(
        f"{len(train_pairs):,} training pairs, {len(valid_pairs):,} held out; vocabulary "
        f"{len(vocab):,}; {model.n_parameters():,} parameters"
    )

    sample = valid_pairs[: args.eval_pairs]

    def quick_eval(m: Transformer) -> dict:
        return forced_layer_metrics(CoupletTransformer(m, vocab, device), sample)

    def stop(metrics: dict) -> bool:
        return args.target_alignment is not None and metrics["alignment_best"] >= args.target_alignment

    tcfg = train_config(args, warmup_steps=args.warmup)
    batches = CoupletBatches(train_pairs, vocab, args.batch_size, args.seed, args.join_prob)
    trainer = Trainer(model, tcfg, run_dir, device, batches, loss_fn, quick_eval, stop, log=log)
    result = fit_logged(trainer, log, "chars")

    info = {
        "model_id": MODEL_ID,
        "data": f"{Path(args.data).name} ({len(train_pairs):,} training pairs; {VALID_SIZE:,} "
        f"held out by a shuffle with seed {SPLIT_SEED}, the couplet RNNs' split)",
        "command": command,
        "steps": result.step,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "warmup": args.warmup,
        "epochs": round(result.step * args.batch_size / max(1, len(train_pairs)), 2),
        "chars_per_s": round(result.tokens_per_s, 1),
        "threads": args.threads,
        **run_facts(result, device),
    }
    # Save, then measure the file as bundled (float16 weights upcast on load).
    TransformerBundle(model.eval(), vocab, vocab, "couplet", "char", info).save_dir(out, dtype=args.dtype)
    loaded = TransformerBundle.load(out, device)
    probe = forced_layer_metrics(CoupletTransformer(loaded.model, vocab, device), valid_pairs)
    info["best_layer"] = probe["best_layer"]  # the layer the adapter shows first; chosen on validation
    bundle = TransformerBundle(loaded.model, vocab, vocab, "couplet", "char", info)
    bundle.save_dir(out, dtype=args.dtype)
    cm = CoupletTransformer(loaded.model, vocab, device, layer=info["best_layer"])
    metrics = evaluate_transformer(cm, valid_pairs, beam=args.beam)
    metrics["size_mb"] = round((out / "model.safetensors").stat().st_size / 1e6, 2)
    metrics["parameters"] = model.n_parameters()
    examples = {
        "greedy": cm.text(cm.generate([list(EXAMPLE[0])])[0]),
        f"beam{args.beam}": cm.text(cm.generate([list(EXAMPLE[0])], beam=args.beam)[0]),
    }
    full = {"metrics": metrics, "examples": examples, "training": info, "history": result.history}
    (out / "metrics.json").write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(model_card(cfg, len(vocab), info, metrics, examples), encoding="utf-8")
    log(json.dumps(metrics, ensure_ascii=False))
    return metrics


def model_card(cfg: TransformerConfig, vocab_size: int, info: dict, m: dict, examples: dict) -> str:
    beam = next(k for k in examples if k.startswith("beam"))
    layer_rows = "\n".join(
        f"| {i + 1} | {a:.4f} |{' best' if i == m['best_layer'] else ''}"
        for i, a in enumerate(m["alignment_layers"])
    )
    return f"""# {MODEL_ID}

Our small encoder–decoder Transformer for couplets (上联 → 下联): {cfg.encoder_layers} encoder
and {cfg.decoder_layers} decoder layers, {cfg.num_heads} heads, d = {cfg.d_model}, feed-forward
{cfg.ffn_size}, pre-LayerNorm, fixed sinusoidal positions, dropout {cfg.dropout}; one
character table of {vocab_size:,} (the couplet RNNs' vocabulary) for both lines and the
output layer. {m["parameters"]:,} parameters, stored as float16 ({m["size_mb"]} MB), loaded
as float32. Every attention (encoder self, causal decoder self, and cross) is taken
from the explicit softmax, per layer and head.

## Data
Tang poetry couplets derived from the chinese-poetry project (MIT): {info["data"]}.
10 % of training examples join 2–3 couplets with punctuation so that longer, punctuated
input is familiar.

## Training
```
{info["command"]}
```
{info["steps"]:,} steps of {info["batch_size"]} pairs ({info["epochs"]} epochs), Adam {info["lr"]:g}
after a {info["warmup"]}-step linear warm-up, teacher forcing, gradient clipping 1.0;
{info["train_seconds"] / 60:.1f} min of training on {info["device"]} ({info["cpu"]}, torch
{info["torch"]}) at {info["chars_per_s"]:,.0f} target characters/s. Stopped: {info["stopped"]}.
Date: {info["date"]}.

## Cross-attention alignment per decoder layer
Share of lower-line characters whose cross attention, averaged over the {cfg.num_heads} heads,
peaks on the same position of the upper line (force-decoding the {m["n_pairs"]:,} held-out
reference pairs). The adapter shows layer {m["best_layer"] + 1} first; it was picked on this
same validation split.

| layer | alignment |
| --- | --- |
{layer_rows}

## Generation (the {m["n_pairs"]:,} held-out upper lines)
| metric | greedy | beam {beam[4:]} |
| --- | --- | --- |
| lower line has the upper line's length | {m["length_correct"]:.2%} | {m[beam + "_length_correct"]:.2%} |
| char BLEU (sacrebleu, tokenize="zh") | {m["bleu_char"]:.2f} | {m[beam + "_bleu_char"]:.2f} |
| copy rate (generated characters found in the upper line) | {m["copy_rate"]:.4f} | {m[beam + "_copy_rate"]:.4f} |

Copy rate of the reference lower lines, for comparison: {m["copy_rate_reference"]:.4f}.
Alignment of layer {m["best_layer"] + 1} while generating (greedy): {m["generation_alignment"]:.4f}.
Validation loss per character (teacher forcing): {m["valid_loss"]:.4f}.

Example: {EXAMPLE[0]} → {examples["greedy"]} (greedy), {examples[beam]} (beam {beam[4:]}).

Limitations: trained on Tang verse only, for minutes on a CPU; it writes plausible
characters in the right places, not poetry. The length and punctuation rule is enforced
by the search, not learned.
"""
