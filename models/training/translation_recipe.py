"""Train a translation model (``python cli.py train translate --rnn gru --attention additive``) and bundle it.

Seed 004: a GRU (or LSTM) encoder–decoder whose decoder queries the encoder states with
additive (or scaled dot-product) attention, English → French. The loop, resuming and the
progress bar are ``models.training.loop``'s; the network is ``models.nets.rnn_seq2seq``'s, the search
``models.text.search``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from models.device import describe, pick_device
from models.nets.rnn_seq2seq import ATTENTION_WORDS, Seq2Seq, Seq2SeqConfig, scorer_for
from models.storage.bundle import Seq2SeqBundle
from models.tasks.translation import (
    DATA_PATH,
    SEED_EXAMPLES,
    SPLIT_SEED,
    TEST_SIZE,
    VALID_SIZE,
    Translator,
    batches,
    build_vocabs,
    evaluate,
    load_split,
    quick_metrics,
)
from models.text.vocab import EOS, Vocab
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


def model_id_for(rnn: str, attention: str) -> str:
    return f"translate-{rnn}-{attention}"


@dataclass
class TranslationTrainArgs:
    rnn: str = "gru"  # "gru" (seed 004) or "lstm" (its variant)
    attention: str = "additive"  # "additive" (Bahdanau) or "dot" (scaled dot product)
    out: Path | None = None  # default: weights/<model id>
    run_dir: Path | None = None  # default: cache/runs/<model id> (git-ignored; for resuming)
    data: Path = DATA_PATH
    steps: int = 3000
    batch_size: int = 128
    lr: float = 2e-3
    decay_from: int = 0  # from this step the learning rate falls linearly to lr/10 at --steps
    embed: int = 256
    hidden: int = 256
    dropout: float = 0.2
    min_freq: int = 2  # words seen fewer times in training become unk
    seed: int = 0
    threads: int = 1
    eval_every: int = 200
    save_every: int = 100
    target_bleu: float | None = None  # stop once validation BLEU reaches it
    beam: int = 4  # the beam width the card also reports
    dtype: str = "float16"  # storage of the bundled weights (loaded as float32)
    device: str | None = None
    fresh: bool = False
    test_size: int = TEST_SIZE  # held-out pairs (tests shrink them for tiny data sets)
    valid_size: int = VALID_SIZE


def train(args: TranslationTrainArgs, command: str = "") -> dict:
    scorer = scorer_for(args.attention)
    torch.set_num_threads(args.threads)
    model_id = model_id_for(args.rnn, args.attention)
    out = Path(args.out or REPO / "weights" / model_id)
    run_dir = Path(args.run_dir or REPO / "cache" / "runs" / model_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(args.device)
    log = logger(run_dir / "train.log")
    log(f"{model_id}: device {describe(device)}, data {args.data}")
    commands = record_command(run_dir, command, args.fresh)

    split = load_split(args.data, args.test_size, args.valid_size)
    src_vocab, tgt_vocab = _vocabs(run_dir, split.train, args)
    cfg = Seq2SeqConfig(
        src_vocab_size=len(src_vocab),
        tgt_vocab_size=len(tgt_vocab),
        embed_size=args.embed,
        hidden_size=args.hidden,
        rnn=args.rnn,
        attention=scorer,
        dropout=args.dropout,
    )
    check_same_run(run_dir / "model_config.json", cfg, args.fresh)
    if args.fresh:
        (run_dir / "train_state.safetensors").unlink(missing_ok=True)
    torch.manual_seed(args.seed)
    model = Seq2Seq(cfg)
    log(
        f"{len(split.train):,} training pairs, {len(split.valid):,} validation, {len(split.test):,} test; "
        f"vocabularies {len(src_vocab):,} / {len(tgt_vocab):,}; {model.n_parameters():,} parameters"
    )

    def quick_eval(m: Seq2Seq) -> dict:
        return quick_metrics(Translator(m, src_vocab, tgt_vocab, device), split.valid)

    def stop(metrics: dict) -> bool:
        return args.target_bleu is not None and metrics["bleu"] >= args.target_bleu

    tcfg = train_config(args)
    data = batches(split.train, src_vocab, tgt_vocab, args.batch_size, args.seed)
    per_epoch = len(data(0))
    trainer = Trainer(model, tcfg, run_dir, device, data, make_loss(), quick_eval, stop, log=log)
    result = fit_logged(trainer, log, "words")
    info = {
        "model_id": model_id,
        "data": f"{Path(args.data).name} ({len(split.train):,} training pairs; {args.test_size:,} test and "
        f"{args.valid_size:,} validation pairs held out by seeded shuffles, seeds {SPLIT_SEED} and {SPLIT_SEED + 1})",
        "commands": commands,
        "steps": result.step,
        "epochs": round(result.step / per_epoch, 2),
        "seconds_per_epoch": round(result.seconds * per_epoch / max(1, result.step), 1),
        "words_per_s": round(result.tokens_per_s, 1),
        "batch_size": args.batch_size,
        "lr": args.lr,
        "decay_from": args.decay_from,
        "dropout": args.dropout,
        "min_freq": args.min_freq,
        "threads": args.threads,
        "stored_dtype": args.dtype,
        **run_facts(result, device),
    }
    return _bundle(model, src_vocab, tgt_vocab, info, result.history, split.test, out, args, device, log)


def _vocabs(run_dir: Path, train_pairs, args: TranslationTrainArgs) -> tuple[Vocab, Vocab]:
    """Built once per run folder, so a resumed run keeps its ids."""
    path = run_dir / "vocab.json"
    if path.is_file() and not args.fresh:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Vocab(data["src"]), Vocab(data["tgt"])
    src, tgt = build_vocabs(train_pairs, args.min_freq)
    path.write_text(json.dumps({"src": src.tokens, "tgt": tgt.tokens}, ensure_ascii=False), encoding="utf-8")
    return src, tgt


def _bundle(model, src_vocab, tgt_vocab, info, history, test, out: Path, args, device, log) -> dict:
    Seq2SeqBundle(model.eval(), src_vocab, tgt_vocab, "translation", "word", info).save_dir(
        out, dtype=args.dtype
    )
    # The card's numbers come from the file as bundled (float16 weights upcast on load).
    loaded = Seq2SeqBundle.load(out, device)
    tr = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, device)
    metrics = evaluate(tr, test, beam=args.beam)
    metrics["size_mb"] = round((out / "model.safetensors").stat().st_size / 1e6, 2)
    metrics["parameters"] = model.n_parameters()
    found = tr.generate([s.split() for s in SEED_EXAMPLES])
    examples = {en: tr.text(d) for en, d in zip(SEED_EXAMPLES, found, strict=True)}
    heatmaps = [
        attention_table([*en.split(), EOS], [tr.tgt_vocab.tokens[i] for i in d.tokens], d.weights.numpy())
        for en, d in zip(SEED_EXAMPLES, found, strict=True)
    ]
    full = {"metrics": metrics, "examples": examples, "training": info, "history": history}
    (out / "metrics.json").write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(
        model_card(loaded.model.config, info, metrics, examples, heatmaps), encoding="utf-8"
    )
    log(json.dumps(metrics, ensure_ascii=False))
    return metrics


def attention_table(keys: list[str], queries: list[str], weights) -> str:
    """A heatmap as a Markdown table: rows are output words, columns input words, each row's peak in bold."""
    head = "| | " + " | ".join(f"`{k}`" for k in keys) + " |\n|---|" + "---|" * len(keys)
    rows = []
    for q, row in zip(queries, weights, strict=True):
        peak = int(row.argmax())
        cells = [f"**{w:.2f}**" if j == peak else f"{w:.2f}" for j, w in enumerate(row)]
        rows.append(f"| `{q}` | " + " | ".join(cells) + " |")
    return head + "\n" + "\n".join(rows)


def model_card(cfg: Seq2SeqConfig, info: dict, m: dict, examples: dict, heatmaps: list[str]) -> str:
    scorer = ATTENTION_WORDS[cfg.attention]
    rnn = cfg.rnn.upper()
    decay = decay_words(info)
    beam = next(k for k in m if k.startswith("bleu_beam"))
    rows = "\n".join(f"| {en} | {fr} |" for en, fr in examples.items())
    maps = "\n\n".join(
        f"**{en}** → {fr}\n\n{table}" for (en, fr), table in zip(examples.items(), heatmaps, strict=True)
    )
    return f"""# {info["model_id"]}

Seed 004's English → French translator: a bidirectional {rnn} encoder whose states are
projected to {cfg.hidden_size} dimensions through tanh, a {rnn} decoder that reads
[word embedding; attention context] and queries the encoder states at every step with
{scorer}. Word vocabularies of {cfg.src_vocab_size:,} English and {cfg.tgt_vocab_size:,} French
tokens (pad, bos, eos, unk, then every word seen at least {info["min_freq"]} times in training; the
rest read as unk). Embeddings {cfg.embed_size}, hidden {cfg.hidden_size}, dropout {cfg.dropout:g}
while training; {m["parameters"]:,} parameters stored as {info["stored_dtype"]} ({m["size_mb"]} MB),
loaded as float32.

## Data
English–French sentence pairs from the Tatoeba Project (tatoeba.org), CC-BY 2.0 FR:
{info["data"]}. A test source never appears in training, not even with another translation.
Text is lower-cased and punctuation split off (`tokenize` in models/tasks/translation.py).

## Training
```
{chr(10).join(info["commands"])}
```
{info["steps"]:,} steps of {info["batch_size"]} pairs ({info["epochs"]} epochs), Adam {info["lr"]:g}{decay},
full teacher forcing, gradient clipping 1.0; {info["train_seconds"] / 60:.1f} min of training
({info["seconds_per_epoch"]:.0f} s per epoch) on {info["device"]} ({info["cpu"]}, torch {info["torch"]}) at
{info["words_per_s"]:,.0f} target words/s. Stopped: {info["stopped"]}. Date: {info["date"]}.

## Metrics (the {m["n_pairs"]:,} test pairs)
| metric | value |
| --- | --- |
| corpus BLEU, greedy (sacrebleu on our tokens, one reference) | {m["bleu"]:.2f} |
| its 1/2/3/4-gram precisions (%) | {" / ".join(f"{p:.1f}" for p in m["bleu_precisions"])} |
| corpus BLEU, beam {beam[9:]} | {m[beam]:.2f} |
| corpus BLEU, greedy, all test translations of a sentence as references ({m["n_sources"]:,} sentences) | {m["bleu_all_refs"]:.2f} |
| exact match with the reference | {m["exact_match"]:.2%} |
| loss per target word (teacher-forced) | {m["loss"]:.4f} |

## The seed's four sentences (greedy)
| English | French |
| --- | --- |
{rows}

Their attention (rows: the French words written, columns: the English words read; each row sums
to 1, its largest weight in bold):

{maps}

Limitations: Tatoeba sentences are short and everyday; long or technical input falls
outside what it has seen, and rare words are unk.
"""
