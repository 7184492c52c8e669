"""Train a couplet RNN (``python cli.py train couplet-rnn --attention additive|dot``) and bundle it.

Everything generic (the loop, resuming, the progress bar) is in ``models.training.loop``; this
file only wires the couplet data, the evaluation and the model card to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from models.device import describe, pick_device
from models.nets.rnn_seq2seq import ATTENTION_WORDS, Seq2Seq, Seq2SeqConfig, scorer_for
from models.storage.bundle import Seq2SeqBundle
from models.tasks.couplet import (
    DATA_PATH,
    SPLIT_SEED,
    VALID_SIZE,
    CoupletBatches,
    CoupletModel,
    build_vocab,
    evaluate,
    forced_metrics,
    load_split,
)
from models.text.vocab import Vocab
from models.training.loop import Trainer, make_loss
from models.training.run_folder import (
    check_same_run,
    decay_words,
    fit_logged,
    logger,
    record_command,
    run_facts,
    train_config,
)

REPO = Path(__file__).resolve().parents[2]


def model_id_for(attention: str) -> str:
    return f"couplet-rnn-{attention}"


@dataclass
class CoupletTrainArgs:
    attention: str = "additive"  # "dot" (scaled dot, parameter-free) or "additive" (Bahdanau)
    out: Path | None = None  # default: weights/<model id>
    run_dir: Path | None = None  # default: cache/runs/<model id> (git-ignored; for resuming)
    data: Path = DATA_PATH
    steps: int = 3000
    batch_size: int = 128
    lr: float = 1e-3
    embed: int = 256
    hidden: int = 256
    vocab_size: int = 6000  # ≈ 99.9 % of the characters in the data; the rarest become unk
    join_prob: float = 0.1
    seed: int = 0
    threads: int = 1
    eval_every: int = 100
    eval_pairs: int = 500  # validation pairs checked during training (the card uses all)
    save_every: int = 100
    target_alignment: float | None = None  # stop once the validation sample reaches it
    min_steps: int = 0
    decay_from: int = 0  # from this step the learning rate falls linearly to lr/10 at --steps
    keys: str = "tanh"  # "tanh" (seed 000) or "linear": the encoder states' activation
    dropout: float = 0.0  # on embeddings (and between stacked layers) while training
    teacher_forcing: float = 1.0  # seed 000 uses 0.5: steps read the model's own guess otherwise
    dtype: str = "float16"  # storage of the bundled weights (loaded as float32)
    device: str | None = None
    fresh: bool = False  # ignore an existing training state


def train(args: CoupletTrainArgs, command: str = "") -> dict:
    scorer = scorer_for(args.attention)
    torch.set_num_threads(args.threads)
    model_id = model_id_for(args.attention)
    out = Path(args.out or REPO / "weights" / model_id)
    run_dir = Path(args.run_dir or REPO / "cache" / "runs" / model_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(args.device)
    log = logger(run_dir / "train.log")
    log(f"{model_id}: device {describe(device)}, data {args.data}")
    commands = record_command(run_dir, command, args.fresh)

    train_pairs, valid_pairs = load_split(args.data)
    vocab_file = run_dir / "vocab.json"
    if vocab_file.is_file() and not args.fresh:
        vocab = Vocab.from_json(vocab_file.read_text(encoding="utf-8"))
    else:
        vocab = build_vocab(train_pairs, args.vocab_size)
        vocab_file.write_text(vocab.to_json(), encoding="utf-8")
    cfg = Seq2SeqConfig(
        src_vocab_size=len(vocab),
        tgt_vocab_size=len(vocab),
        embed_size=args.embed,
        hidden_size=args.hidden,
        rnn="lstm",
        attention=scorer,
        share_embeddings=True,
        key_activation=args.keys,
        dropout=args.dropout,
    )
    check_same_run(run_dir / "model_config.json", cfg, args.fresh)
    if args.fresh:
        (run_dir / "train_state.safetensors").unlink(missing_ok=True)
    model = Seq2Seq(cfg)
    log(
        f"{len(train_pairs):,} training pairs, {len(valid_pairs):,} held out; vocabulary "
        f"{len(vocab):,}; {model.n_parameters():,} parameters"
    )

    sample = valid_pairs[: args.eval_pairs]

    def quick_eval(m: Seq2Seq) -> dict:
        return forced_metrics(CoupletModel(m, vocab, device), sample)

    def stop(metrics: dict) -> bool:
        return args.target_alignment is not None and metrics["alignment"] >= args.target_alignment

    tcfg = train_config(args)
    batches = CoupletBatches(train_pairs, vocab, args.batch_size, args.seed, args.join_prob)
    trainer = Trainer(
        model, tcfg, run_dir, device, batches, make_loss(args.teacher_forcing), quick_eval, stop, log=log
    )
    result = fit_logged(trainer, log, "chars")

    info = {
        "model_id": model_id,
        "data": f"{Path(args.data).name} ({len(train_pairs):,} training pairs; {VALID_SIZE:,} "
        f"held out by a shuffle with seed {SPLIT_SEED})",
        "command": command,
        "commands": commands,  # every invocation on this run folder, in order (resumes included)
        "steps": result.step,
        "epochs": round(result.step * args.batch_size / max(1, len(train_pairs)), 2),
        "chars_per_s": round(result.tokens_per_s, 1),
        "threads": args.threads,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "decay_from": args.decay_from,
        "teacher_forcing": args.teacher_forcing,
        "join_prob": args.join_prob,
        "stored_dtype": args.dtype,
        **run_facts(result, device),
        "history": result.history,
    }
    bundle = Seq2SeqBundle(model.eval(), vocab, vocab, "couplet", "char", info)
    bundle.save_dir(out, dtype=args.dtype)
    # The card's numbers come from the file as bundled (float16 weights upcast on load).
    loaded = Seq2SeqBundle.load(out, device)
    metrics = evaluate(CoupletModel(loaded.model, loaded.src_vocab, device), valid_pairs)
    metrics["size_mb"] = round((out / "model.safetensors").stat().st_size / 1e6, 2)
    metrics["parameters"] = model.n_parameters()
    full = {
        "metrics": metrics,
        "training": {k: v for k, v in info.items() if k != "history"},
        "history": result.history,
    }
    (out / "metrics.json").write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    example = CoupletModel(loaded.model, loaded.src_vocab, device)
    line = example.text(example.generate([list("两个黄鹂鸣翠柳")])[0])
    (out / "MODEL_CARD.md").write_text(
        model_card(model_id, cfg, len(vocab), info, metrics, line), encoding="utf-8"
    )
    log(json.dumps(metrics, ensure_ascii=False))
    return metrics


def model_card(model_id: str, cfg: Seq2SeqConfig, vocab_size: int, info: dict, m: dict, example: str) -> str:
    scorer = ATTENTION_WORDS[cfg.attention]
    decay = decay_words(info)
    squash = (
        "through tanh"
        if cfg.key_activation == "tanh"
        else (
            "linearly (seed 000 adds a tanh; without it the keys are unbounded, so the parameter-free "
            "dot product can sharpen)"
        )
    )
    tf = "full teacher forcing"
    if info.get("teacher_forcing", 1.0) < 1:
        tf = f"teacher forcing {info['teacher_forcing']:g} (else the previous guess)"
    return f"""# {model_id}

Seed 000's couplet seq2seq (上联 → 下联): a bidirectional LSTM encoder whose states are
projected back to {cfg.hidden_size} dimensions {squash}, an LSTM decoder that reads
[character embedding; attention context], and {scorer}. Character vocabulary of
{vocab_size:,} (pad, bos, eos, unk, the six punctuation marks, then the most frequent
characters; rarer ones read as unk). Embeddings {cfg.embed_size} (shared by both lines),
hidden {cfg.hidden_size}{f", dropout {cfg.dropout:g} on the embeddings while training" if cfg.dropout else ""}, {m["parameters"]:,} parameters, stored as {info["stored_dtype"]}
({m["size_mb"]} MB), loaded as float32.

## Data
Tang poetry couplets derived from the chinese-poetry project (MIT): {info["data"]}.
{info["join_prob"]:.0%} of training examples join 2–3 couplets with punctuation so that longer, punctuated
input is familiar.

## Training
```
{chr(10).join(info.get("commands") or [info["command"]])}
```
{"(One command per line: the later ones resumed the run from its saved state with new options.)" if len(info.get("commands") or []) > 1 else ""}
{info["steps"]:,} steps of {info["batch_size"]} pairs ({info["epochs"]} epochs), Adam {info["lr"]:g}{decay}, {tf},
gradient clipping 1.0; {info["train_seconds"] / 60:.1f} min of training on {info["device"]}
({info["cpu"]}, torch {info["torch"]}) at {info["chars_per_s"]:,.0f} target characters/s.
Stopped: {info["stopped"]}. Date: {info["date"]}.

## Metrics (the {m["n_pairs"]:,} held-out pairs, greedy decoding)
| metric | value |
| --- | --- |
| force-decoded alignment (attention argmax on the own position) | {m["alignment"]:.4f} |
| the same on the first 200 held-out pairs (what the tests check) | {m["alignment_first_200"]:.4f} |
| alignment while generating | {m["generation_alignment"]:.4f} |
| lower line has the upper line's length | {m["length_correct"]:.2%} |
| char BLEU-4 (sacrebleu, tokenize="zh") | {m["bleu_char"]:.2f} |
| its 1/2/3/4-gram precisions (%) | {" / ".join(f"{p:.1f}" for p in m["bleu_char_precisions"])} |
| copy rate (generated characters found in the upper line) | {m["copy_rate"]:.4f} |
| copy rate of the reference lower lines, for comparison | {m["copy_rate_reference"]:.4f} |
| validation loss per character | {m["valid_loss"]:.4f} |

Example: 两个黄鹂鸣翠柳 → {example}

Limitations: trained on Tang verse only; it writes plausible characters in the right
places, not poetry. The length and punctuation rule is enforced by the search, not learned.
"""
