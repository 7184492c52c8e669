"""Model cards (``weights/<id>/MODEL_CARD.md``): one template per family, the shared words once.

The shared words (the data line, the recorded commands, the run facts) are built by
``data_words`` and ``training_words``; each template places them with its own line breaks.
A template reads only the bundle's config, ``metrics.json`` (``training``, ``metrics``,
``examples``) and what its recipe shows beside them, so a card can be re-rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attention_atlas.models.nets.rnn_seq2seq import ATTENTION_WORDS
from attention_atlas.models.tasks.couplet import EXAMPLE

UNIT_WORDS = {"chars": "characters", "words": "words"}  # the loop's unit → "target … /s"
RESUMED = "(One command per line: the later ones resumed the run from its saved state with new options.)"


def data_words(path: str | Path, n_train: int, held_out: str) -> str:
    """The ``data`` fact: file name, training pairs, how the rest was held out."""
    return f"{Path(path).name} ({n_train:,} training pairs; {held_out})"


def decay_words(info: dict) -> str:
    """How the learning rate fell, for a model card ("" when it stayed put)."""
    if not info.get("decay_from"):
        return ""
    return f" (falling linearly to {info['lr'] / 10:g} from step {info['decay_from']:,})"


@dataclass(frozen=True)
class TrainingWords:
    """Pieces of a card's Training section; each template places them with its own line breaks."""

    commands: str  # the recorded commands as a fenced block
    resumed: str  # RESUMED when the run was resumed with other options, else ""
    steps: str  # "6,000 steps of 128 pairs (3.44 epochs)"
    adam: str  # "Adam 0.001 (falling linearly to 0.0001 from step 3,500)"
    minutes: str  # "30.8 min"
    device: str  # "CPU (1 threads)"
    machine: str  # "x86_64, torch 2.13.0+cpu"
    speed: str  # "2,764 target characters/s"
    stopped: str  # "Stopped: max_steps 6000 reached."
    date: str  # "Date: 2026-11-22."

    @property
    def resumed_line(self) -> str:
        return f"{self.resumed}\n" if self.resumed else ""


def training_words(info: dict) -> TrainingWords:
    """The Training section's shared words, from a run's ``info`` (metrics.json ``training``)."""
    commands = info.get("commands") or [info["command"]]
    unit = next(u for u in UNIT_WORDS if f"{u}_per_s" in info)
    return TrainingWords(
        commands="```\n" + "\n".join(commands) + "\n```",
        resumed=RESUMED if len(commands) > 1 else "",
        steps=f"{info['steps']:,} steps of {info['batch_size']} pairs ({info['epochs']} epochs)",
        adam=f"Adam {info['lr']:g}{decay_words(info)}",
        minutes=f"{info['train_seconds'] / 60:.1f} min",
        device=info["device"],
        machine=f"{info['cpu']}, torch {info['torch']}",
        speed=f"{info[f'{unit}_per_s']:,.0f} target {UNIT_WORDS[unit]}/s",
        stopped=f"Stopped: {info['stopped']}.",
        date=f"Date: {info['date']}.",
    )


def curriculum_words(info: dict) -> str:
    """The Data section's account of the training lines (the curriculum of issue 16)."""
    c = info.get("curriculum")
    if c is None:  # bundled before the curriculum
        return (
            f"{info.get('join_prob', 0.1):.0%} of training examples join 2–3 couplets with punctuation so that "
            "longer, punctuated\ninput is familiar."
        )
    ramp = "No curriculum ramp: every epoch uses this mix throughout."
    if c["ramp_epochs"] > 0:
        first = 1 / (c["stages_per_epoch"] * c["ramp_epochs"])
        ramp = (
            f"Curriculum: each epoch comes in {c['stages_per_epoch']} stages, in order, and the\n"
            f"shares of joins, pieces and long clauses grow stage by stage from {first:.0%} of their values to all of\n"
            f"them at the end of epoch {c['ramp_epochs']:g}, so training starts on mostly whole 5/7 lines."
        )
    return f"""Training lines of one to three clauses, up to {c["max_chars"]} characters, are built anew each epoch
from the training couplets (`CoupletBatches`, models/tasks/couplet.py). A couplet's lines are
parallel position by position, so {c["multi"]:.0%} of the lines join 2–3 clauses ({c["three"]:.0%} of them three)
by "，" at the same places on both sides ({c["other_marks"]:.0%} of the joins by 、；。！？). A joined line's
clause is a whole couplet, a piece cut at the caesura from both of its lines ({c["span"]:.0%}: the first 4,
the last 3 or 5 characters) or two pieces of two couplets side by side ({c["long"]:.0%}: 8–12 characters,
synthetic but parallel character by character); a single-clause line is a whole couplet, or
({c["long"]:.0%}) such a long clause. {ramp}"""


def clause_section(m: dict, whose: str = "") -> str:
    """The cards' table of alignment by line length and clause count (``m["clauses"]``)."""
    c = m["clauses"]
    by_len, by_n = c["by_length"], c["by_clauses"]
    fives_sevens = sum(by_len[b]["lines"] for b in ("5", "7") if b in by_len)
    rows = "\n".join(f"| {b} | {v['lines']:,} | {v['alignment']:.4f} |" for b, v in by_len.items())
    rows_n = "\n".join(
        f"| {k} | {v['lines']:,} | {v['alignment']:.4f} |" for k, v in by_n.items() if v["lines"]
    )
    return f"""## Alignment by line length and clause count
Force-decoded diagonal alignment{whose} (the share of lower-line characters whose attention
peaks on their own position) on the clause validation split (models/tasks/couplet_clauses.py),
{c["n_lines"]:,} lines built only from the held-out couplets: each of them as a 5- or 7-character
line ({fives_sevens:,}), {by_n["1"]["lines"] - fives_sevens:,} long single clauses (8–12 characters, two pieces side by side), and
{by_n["2"]["lines"]:,} lines of two and {by_n["3"]["lines"]:,} of three clauses joined by "，" (8–30 characters).

| line length (characters) | lines | alignment |
| --- | --- | --- |
{rows}

| clauses | lines | alignment |
| --- | --- | --- |
{rows_n}

Single-clause 5/7-character lines: {c["alignment_single_5_7"]:.4f}; multi-clause lines: {c["alignment_multi"]:.4f}.
Greedy generation for these {c["n_lines"]:,} upper lines: the lower line has the upper line's length
{c["length_correct"]:.2%}, and its punctuation at the upper line's places (the same marks, none
elsewhere) {c["punctuation_correct"]:.2%}; the search enforces both.
"""


# -- the templates -------------------------------------------------------------------------


def couplet_rnn_card(cfg, vocab_size: int, info: dict, m: dict, example: str) -> str:
    """``example``: the greedy lower line of ``EXAMPLE[0]``."""
    t = training_words(info)
    squash = (
        "through tanh"
        if cfg.key_activation == "tanh"
        else (
            "linearly (the couplet tutorial adds a tanh; without it the keys are unbounded, so the parameter-free "
            "dot product can sharpen)"
        )
    )
    tf = "full teacher forcing"
    if info.get("teacher_forcing", 1.0) < 1:
        tf = f"teacher forcing {info['teacher_forcing']:g} (else the previous guess)"
    return f"""# {info["model_id"]}

The couplet tutorial's couplet seq2seq (上联 → 下联): a bidirectional LSTM encoder whose states are
projected back to {cfg.hidden_size} dimensions {squash}, an LSTM decoder that reads
[character embedding; attention context], and {ATTENTION_WORDS[cfg.attention]}. Character vocabulary of
{vocab_size:,} (pad, bos, eos, unk, the six punctuation marks, then the most frequent
characters; rarer ones read as unk). Embeddings {cfg.embed_size} (shared by both lines),
hidden {cfg.hidden_size}{f", dropout {cfg.dropout:g} on the embeddings while training" if cfg.dropout else ""}, {m["parameters"]:,} parameters, stored as {info["stored_dtype"]}
({m["size_mb"]} MB), loaded as float32.

## Data
Tang poetry couplets derived from the chinese-poetry project (MIT): {info["data"]}.
{curriculum_words(info)}

## Training
{t.commands}
{t.resumed}
{t.steps}, {t.adam}, {tf},
gradient clipping 1.0; {t.minutes} of training on {t.device}
({t.machine}) at {t.speed}.
{t.stopped} {t.date}

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

{clause_section(m) if "clauses" in m else ""}
Example: {EXAMPLE[0]} → {example}

Limitations: trained on Tang verse and on lines built from it only; it writes plausible
characters in the right places, not poetry. The length and punctuation rule is enforced
by the search, not learned.
"""


def couplet_transformer_card(cfg, vocab_size: int, info: dict, m: dict, examples: dict) -> str:
    """``examples``: ``EXAMPLE[0]``'s lower line, greedy and by a beam (``beam<width>``)."""
    t = training_words(info)
    beam = next(k for k in examples if k.startswith("beam"))
    layer_rows = "\n".join(
        f"| {i + 1} | {a:.4f} |{' best' if i == m['best_layer'] else ''}"
        for i, a in enumerate(m["alignment_layers"])
    )
    return f"""# {info["model_id"]}

Our small encoder–decoder Transformer for couplets (上联 → 下联): {cfg.encoder_layers} encoder
and {cfg.decoder_layers} decoder layers, {cfg.num_heads} heads, d = {cfg.d_model}, feed-forward
{cfg.ffn_size}, pre-LayerNorm, fixed sinusoidal positions, dropout {cfg.dropout}; one
character table of {vocab_size:,} (the couplet RNNs' vocabulary) for both lines and the
output layer. {m["parameters"]:,} parameters, stored as {info.get("stored_dtype", "float16")} ({m["size_mb"]} MB), loaded
as float32. Every attention (encoder self, causal decoder self, and cross) is taken
from the explicit softmax, per layer and head.

## Data
Tang poetry couplets derived from the chinese-poetry project (MIT): {info["data"]}.
{curriculum_words(info)}

## Training
{t.commands}
{t.resumed_line}{t.steps}, {t.adam}
after a {info["warmup"]}-step linear warm-up, teacher forcing, gradient clipping 1.0;
{t.minutes} of training on {t.device} ({info["cpu"]}, torch
{info["torch"]}) at {t.speed}. {t.stopped}
{t.date}

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

{clause_section(m, f" of layer {m['best_layer'] + 1} (heads averaged)") if "clauses" in m else ""}
Example: {EXAMPLE[0]} → {examples["greedy"]} (greedy), {examples[beam]} (beam {beam[4:]}).

Limitations: trained on Tang verse and on lines built from it only, for minutes on a CPU;
it writes plausible characters in the right places, not poetry. The length and punctuation
rule is enforced by the search, not learned.
"""


def translation_card(cfg, info: dict, m: dict, examples: dict, heatmaps: list[str]) -> str:
    """``examples``: the Bahdanau tutorial's sentences and their greedy translations; ``heatmaps``: their
    attention as ``attention_table``s."""
    t = training_words(info)
    rnn = cfg.rnn.upper()
    beam = next(k for k in m if k.startswith("bleu_beam"))
    rows = "\n".join(f"| {en} | {fr} |" for en, fr in examples.items())
    maps = "\n\n".join(
        f"**{en}** → {fr}\n\n{table}" for (en, fr), table in zip(examples.items(), heatmaps, strict=True)
    )
    return f"""# {info["model_id"]}

The Bahdanau tutorial's English → French translator: a bidirectional {rnn} encoder whose states are
projected to {cfg.hidden_size} dimensions through tanh, a {rnn} decoder that reads
[word embedding; attention context] and queries the encoder states at every step with
{ATTENTION_WORDS[cfg.attention]}. Word vocabularies of {cfg.src_vocab_size:,} English and {cfg.tgt_vocab_size:,} French
tokens (pad, bos, eos, unk, then every word seen at least {info["min_freq"]} times in training; the
rest read as unk). Embeddings {cfg.embed_size}, hidden {cfg.hidden_size}, dropout {cfg.dropout:g}
while training; {m["parameters"]:,} parameters stored as {info["stored_dtype"]} ({m["size_mb"]} MB),
loaded as float32.

## Data
English–French sentence pairs from the Tatoeba Project (tatoeba.org), CC-BY 2.0 FR:
{info["data"]}. A test source never appears in training, not even with another translation.
Text is lower-cased and punctuation split off (`tokenize` in models/tasks/translation.py).

## Training
{t.commands}
{t.resumed_line}{t.steps}, {t.adam},
full teacher forcing, gradient clipping 1.0; {t.minutes} of training
({info["seconds_per_epoch"]:.0f} s per epoch) on {t.device} ({t.machine}) at
{t.speed}. {t.stopped} {t.date}

## Metrics (the {m["n_pairs"]:,} test pairs)
| metric | value |
| --- | --- |
| corpus BLEU, greedy (sacrebleu on our tokens, one reference) | {m["bleu"]:.2f} |
| its 95 % interval (1,000 paired bootstrap resamples of the test pairs, seed 0) | {_interval(m)} |
| its 1/2/3/4-gram precisions (%) | {" / ".join(f"{p:.1f}" for p in m["bleu_precisions"])} |
| corpus BLEU, beam {beam[9:]} | {m[beam]:.2f} |
| corpus BLEU, greedy, all test translations of a sentence as references ({m["n_sources"]:,} sentences) | {m["bleu_all_refs"]:.2f} |
| exact match with the reference | {m["exact_match"]:.2%} |
| loss per target word (teacher-forced) | {m["loss"]:.4f} |

The test split chose this bundle over earlier ones, so a gain over them is claimed only where
the held-out split, which no run trains on or is judged by, confirms it (`atlas eval
--model {info["model_id"]} --against EARLIER --split held-out`; see eng_fra's SOURCE.md).

## The Bahdanau tutorial's four sentences (greedy)
| English | French |
| --- | --- |
{rows}

Their attention (rows: the French words written, columns: the English words read; each row sums
to 1, its largest weight in bold):

{maps}

Limitations: Tatoeba sentences are short and everyday; long or technical input falls
outside what it has seen, and rare words are unk.
"""


def _interval(m: dict) -> str:
    low, high = m["bleu_ci95"]
    return f"{low:.2f} – {high:.2f}"


def attention_table(keys: list[str], queries: list[str], weights) -> str:
    """A heatmap as a Markdown table: rows are output words, columns input words, each row's peak in bold."""
    head = "| | " + " | ".join(f"`{k}`" for k in keys) + " |\n|---|" + "---|" * len(keys)
    rows = []
    for q, row in zip(queries, weights, strict=True):
        peak = int(row.argmax())
        cells = [f"**{w:.2f}**" if j == peak else f"{w:.2f}" for j, w in enumerate(row)]
        rows.append(f"| `{q}` | " + " | ".join(cells) + " |")
    return head + "\n" + "\n".join(rows)
