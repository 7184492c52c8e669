"""Attention Atlas on the command line.

    atlas serve [--port N] [--address A]     (the dashboard; `python cli.py …` from a checkout is the same)
    python cli.py models [--json]
    python cli.py extract (--model ID | --checkpoint FILE) (--text TEXT [--target TEXT] | --input-file FILE)
                          [--json | --out FILE.npz] [--beam N]
    python cli.py extract (--model ID | --checkpoint FILE) (--text TEXT | --text-file FILE)
                          --layer L --head H --out FILE.npz      (one head, any length up to the context)
    python cli.py figure  (--model ID | --checkpoint FILE) (--text TEXT | --text-file FILE) --view head|model
                          [--kind K --layer L --head H] --out FILE.(json|html|png)
    python cli.py export  --model ID --out FILE
    python cli.py train   couplet-rnn --attention additive|dot [--steps N ...]
    python cli.py train   couplet-transformer [--steps N ...]
    python cli.py train   translate --rnn gru|lstm --attention additive|dot [--steps N ...]
    python cli.py eval    --model ID|FOLDER [--against ID|FOLDER] [--split test|held-out] [--resamples N]
    python cli.py corpus  --model ID (--input-file FILE | --sample english[:N]) [--out STATS.parquet]
                          [--column C] [--ray ADDRESS|auto]
    python cli.py lens    (--model ID | --checkpoint FILE) --text TEXT [--top K] [--token ID]
                          [--json | --out FILE.npz]     (the logit lens of a causal LM)
    python cli.py generate (--model ID | --checkpoint FILE) --text TEXT --max-new-tokens N
                          [--temperature X --top-p P --seed S] [--json | --out FILE.npz]
                          (a causal LM continues TEXT; each new token's attention over all before it)
    python cli.py contributions (--model ID | --checkpoint FILE) --text TEXT (--json | --out FILE.npz)
                          (the contribution graph of a causal LM: attn, attn_residual, ffn, ffn_residual)

docs/ARCHITECTURE.md holds the contract the checks rely on.

Errors go to stderr as one line, with a non-zero exit; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import unicodedata
from pathlib import Path

import numpy as np


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own messages, one line, exit 2
        raise CliError(f"{self.prog}: {message}")

    def _get_values(self, action, arg_strings):
        if action.nargs is None and arg_strings == ["--"]:  # --text=--: Python 3.11 would give []
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def cmd_models(args: argparse.Namespace) -> int:
    from attention_atlas.models.registry import available

    rows = [{"id": m.id, "family": m.family, "description": m.description} for m in available()]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print("no models registered yet")
    else:
        width = max(len(r["id"]) for r in rows)
        for r in rows:
            print(f"{r['id']:<{width}}  {r['family']:<12}  {r['description']}")
    return 0


# -- extract -------------------------------------------------------------------------------


def _adapter(args: argparse.Namespace):
    """The adapter for ``--model`` (registry) or ``--checkpoint`` (any file the upload page accepts:
    our bundle, a torch.save state dict + config, a zipped model folder; checked, no code run)."""
    from attention_atlas.models.device import pick_device

    device = pick_device()
    if args.model:
        from attention_atlas.models.registry import load

        return load(args.model, device)
    from attention_atlas.models.uploads import load_path

    path = Path(args.checkpoint)
    if path.is_dir() and (path / "model.safetensors").is_file():  # a bundle folder (cli.py train --out)
        path = path / "model.safetensors"
    return load_path(path, device=device).adapter


def _read_inputs(path: str) -> list[tuple[str, str | None]]:
    """One input a line, lines ending at ``\n``, ``\r\n`` or ``\r`` and nowhere else: a U+2028 or
    a form feed inside a line stays in its input, so the output has one line per line of the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CliError(f"--input-file {path}: not UTF-8 text ({err.reason})") from err
    items = []
    for line in text.removesuffix("\n").split("\n") if text else []:  # read_text made \r\n and \r \n
        source, tab, target = line.partition("\t")
        items.append((source, target if tab else None))
    return items


def _text(args: argparse.Namespace) -> str | None:
    """``--text``, or the contents of ``--text-file`` (UTF-8, trailing line breaks dropped)."""
    args.target = _from_argv(getattr(args, "target", None))
    if getattr(args, "text_file", None) is None:
        return _from_argv(args.text)
    try:
        return Path(args.text_file).read_text(encoding="utf-8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        raise CliError(f"--text-file {args.text_file}: not UTF-8 text ({err.reason})") from err


def _from_argv(text: str | None) -> str | None:
    """Text from the command line as valid Unicode: bytes that were not UTF-8 (Python keeps them as
    lone surrogates, which nothing can print) read as U+FFFD, with a notice."""
    if text is None:
        return None
    from attention_atlas.viz_core.tokens import well_formed

    text, notices = well_formed(text)
    for notice in notices:
        print(f"notice: {notice}", file=sys.stderr)
    return text


def cmd_extract(args: argparse.Namespace) -> int:
    args.text = _text(args)
    if (args.layer is None) != (args.head is None):
        raise CliError("extract: --layer and --head go together (one head's weights)")
    if args.layer is not None:
        return _extract_head(args)
    if args.input_file and (args.text is not None or args.target is not None):
        raise CliError("extract: give --text (and --target) or --input-file, not both")
    if args.input_file and args.out:
        raise CliError("extract: --input-file prints JSON Lines; --out takes a single --text")
    if args.target is not None and args.text is None:
        raise CliError("extract: --target needs --text")
    if args.beam < 1:
        raise CliError(f"extract: --beam must be at least 1, got {args.beam}")
    _check_out(args)
    adapter = _adapter(args)
    if args.input_file:
        return _extract_lines(adapter, _read_inputs(args.input_file), args.beam)
    result = adapter.run(args.text, target=args.target, beam=args.beam)
    for notice in result.notices:
        print(f"notice: {notice}", file=sys.stderr)
    if args.out:
        _write_npz(Path(args.out), adapter, result)
    elif args.json:
        print(json.dumps(result.to_json(adapter), ensure_ascii=False))
    else:
        _print_text(adapter, result)
    return 0


def _extract_head(args: argparse.Namespace) -> int:
    """One head's full ``[query, key]`` weights to ``--out F.npz``, at any length up to the context:
    from captured queries and keys where the model allows, else from its record."""
    if not args.out or Path(args.out).suffix != ".npz":
        raise CliError("extract: --layer/--head write one head's weights: give --out FILE.npz")
    if args.input_file or args.target is not None:
        raise CliError(
            "extract: --layer/--head take one --text or --text-file (no --target, no --input-file)"
        )
    from attention_atlas.models.adapters import capture as cp

    adapter = _adapter(args)
    if cp.supports(adapter) is None:
        cap = cp.capture(adapter, args.text)
        _check_head(args, cap.n_layers, cap.n_heads)
        from attention_atlas.viz_core.blockwise import head_weights

        weights, queries, keys, notices = (
            head_weights(cap, args.layer, args.head),
            cap.tokens,
            cap.tokens,
            cap.notices,
        )
    else:
        result = adapter.run(args.text, beam=args.beam)
        record = result.records.get("cross") or next(iter(result.records.values()))
        _check_head(args, record.n_layers, record.n_heads)
        weights, queries, keys = record.head(args.layer, args.head), record.query_tokens, record.key_tokens
        notices = result.notices
    for notice in notices:
        print(f"notice: {notice}", file=sys.stderr)
    arrays = {"weights": weights, "query_tokens": queries, "key_tokens": keys}
    arrays |= {"model": adapter.model_id, "layer": args.layer, "head": args.head}
    size = f"{weights.shape[0]:,} × {weights.shape[1]:,}"
    _save_npz(Path(args.out), arrays, f"layer {args.layer}, head {args.head}: {size}")
    return 0


def _check_head(args: argparse.Namespace, layers: int, heads: int) -> None:
    if not 0 <= args.layer < layers:
        raise CliError(f"--layer {args.layer} is out of range: the model has layers 0..{layers - 1}")
    if not 0 <= args.head < heads:
        raise CliError(f"--head {args.head} is out of range: the model has heads 0..{heads - 1}")


def _extract_lines(adapter, items: list[tuple[str, str | None]], beam: int, chunk: int = 512) -> int:
    """JSON Lines in input order; a bad line gets ``{"error": ...}`` and the rest go on."""
    batched = hasattr(adapter, "run_batch")
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        if batched:
            results = adapter.run_batch(part, beam=beam)
        else:
            results = []
            for text, target in part:
                try:
                    results.append(adapter.run(text, target=target, beam=beam))
                except ValueError as err:
                    results.append(err)
        lines = []
        for r in results:
            obj = {"error": str(r)} if isinstance(r, Exception) else r.to_json(adapter)
            lines.append(json.dumps(obj, ensure_ascii=False))
        sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0


def _write_npz(path: Path, adapter, result) -> None:
    arrays = {"model": adapter.model_id, "output": result.output or ""}
    for kind, rec in result.records.items():
        arrays[f"{kind}_weights"] = rec.weights  # [layers, heads, query, key]
        arrays[f"{kind}_query_tokens"] = rec.query_tokens
        arrays[f"{kind}_key_tokens"] = rec.key_tokens
        if rec.sink is not None:  # [layers, heads, query]: what each row left to a learned sink logit
            arrays[f"{kind}_sink"] = rec.sink
    _save_npz(path, arrays, ", ".join(result.records))


def _check_out(args: argparse.Namespace) -> None:
    """``--out`` must name a .npz file: said before the model loads."""
    if args.out and Path(args.out).suffix != ".npz":
        raise CliError(f"{args.command}: --out writes .npz files, got {Path(args.out).name}")


def _save_npz(path: Path, arrays: dict, summary: str) -> None:
    """Every value as a numpy array in one compressed ``path``, then ``wrote PATH (SUMMARY)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    print(f"wrote {path} ({summary})")


def _write_arrays(args: argparse.Namespace, arrays: dict, summary: str) -> bool:
    """``--out FILE.npz`` or ``--json`` (the same arrays as one JSON object); False when neither was given."""
    if args.out:
        _save_npz(Path(args.out), arrays, summary)
    elif args.json:
        obj = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in arrays.items()}
        print(json.dumps(obj, ensure_ascii=False))
    else:
        return False
    return True


def _print_text(adapter, result) -> None:
    print(f"model   {adapter.model_id} on {adapter.device}")
    if result.output is not None:
        print(f"output  {result.output}")
    for kind, rec in result.records.items():
        w = rec.head()  # [query, key]
        note = rec.meta.get("alignment")
        extra = f", alignment {note:.2f}" if isinstance(note, float) else ""
        print(f"\n{kind} attention ({rec.scoring or 'n/a'}{extra}); rows = output, columns = input")
        for line in _table(rec.query_tokens, rec.key_tokens, w):
            print(line)


def _table(rows: list[str], cols: list[str], weights: np.ndarray) -> list[str]:
    """The weights as a text table whose columns line up in a terminal: each label padded to its
    display width (a CJK character takes two cells), every column as wide as its widest entry."""
    left = max(map(_cells, rows), default=0)
    widths = [max(5, _cells(c)) for c in cols]  # a weight prints as 0.00: 4 cells, 5 with its space
    head = " " * left + "  " + " ".join(_right(c, n) for c, n in zip(cols, widths, strict=True))
    body = [
        _right(r, left) + "  " + " ".join(f"{v:{n}.2f}" for v, n in zip(row, widths, strict=True))
        for r, row in zip(rows, weights, strict=True)
    ]
    return [head.rstrip(), *body]


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide and fullwidth characters two, combining marks none."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def _right(text: str, cells: int) -> str:
    return " " * max(cells - _cells(text), 0) + text


# -- export --------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace) -> int:
    from attention_atlas.models.registry import load

    adapter = load(args.model)
    if not hasattr(adapter, "export"):
        raise CliError(f"export: {args.model} has no checkpoint to export")
    path = adapter.export(args.out)
    print(f"wrote {path}")
    return 0


# -- train ---------------------------------------------------------------------------------


def cmd_train(args: argparse.Namespace) -> int:
    """Any ``train`` family: its parser names the module (``train``) and the arguments' dataclass."""
    import importlib

    from attention_atlas.models.training.options import given

    if getattr(args, "preset", None) is not None or getattr(args, "max_seconds", None) is not None:
        return _train_preset(args)
    module = importlib.import_module(args.train_module)
    args_class = getattr(module, args.args_class)
    command = "python cli.py " + " ".join(shlex.quote(a) for a in args.argv)
    metrics = module.train(args_class(**given(args, args_class)), command=command)
    print(json.dumps(metrics, ensure_ascii=False))
    return 0


PRESET_OPTIONS = {"attention", "seed", "threads", "device", "data", "out"}  # the rest the preset fixes


def _train_preset(args: argparse.Namespace) -> int:
    """``train couplet-rnn --preset classroom --max-seconds S --out DIR``: the classroom page's run
    (``models.training.classroom``), and its export in DIR for ``extract --checkpoint DIR``."""
    if args.preset is None or args.max_seconds is None or args.out is None:
        raise CliError(
            "train: --preset, --max-seconds and --out go together, e.g. --preset classroom "
            "--max-seconds 120 --out DIR"
        )
    from attention_atlas.models.training import classroom
    from attention_atlas.models.training.couplet_rnn_recipe import CoupletTrainArgs
    from attention_atlas.models.training.options import given

    fixed = sorted(k for k in given(args, CoupletTrainArgs) if k not in PRESET_OPTIONS)
    fixed = [f"--{k.replace('_', '-')}" for k in fixed]
    if fixed:
        raise CliError(f"train: --preset {args.preset} fixes {', '.join(fixed)}; leave them out")
    report = classroom.train_preset(
        args.preset,
        args.attention,
        args.max_seconds,
        args.out,
        seed=args.seed,
        threads=args.threads,
        device=args.device,
        data=args.data or classroom.DATA_PATH,
        log=lambda m: print(m, file=sys.stderr),
    )
    print(json.dumps(report, ensure_ascii=False))
    return 0


def _preset_options(p) -> None:
    """``train couplet-rnn``'s classroom run (``_train_preset``), beside the recipe's options."""
    p.add_argument("--preset", help="'classroom': the Watch attention learn page's small, fast run")
    p.add_argument("--max-seconds", type=float, help="with --preset: seconds of training (≤ 3600)")


# name: (help, the recipe module, its arguments' dataclass, options beside the dataclass's)
TRAIN_FAMILIES = {
    "couplet-rnn": (
        "the couplet tutorial's couplet seq2seq (BiLSTM + attention)",
        "attention_atlas.models.training.couplet_rnn_recipe",
        "CoupletTrainArgs",
        _preset_options,
    ),
    "couplet-transformer": (
        "our encoder–decoder Transformer on couplets",
        "attention_atlas.models.training.couplet_transformer_recipe",
        "TransformerTrainArgs",
        None,
    ),
    "translate": (
        "the Bahdanau tutorial's English → French GRU/LSTM with attention",
        "attention_atlas.models.training.translation_recipe",
        "TranslationTrainArgs",
        None,
    ),
}


class _FamilyParser(_Parser):
    """A ``train <family>`` parser whose options are the fields of the family's arguments
    dataclass (``models.training.options``: type, default, help, choices), added the first time
    it parses or prints help: importing a recipe imports torch, which only ``train`` needs."""

    def __init__(self, *args, recipe: tuple | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._recipe = recipe

    def _fill(self) -> None:
        if self._recipe is None:
            return
        import importlib

        from attention_atlas.models.training.options import add_options

        module, args_class, extra = self._recipe
        self._recipe = None
        add_options(self, getattr(importlib.import_module(module), args_class))
        if extra is not None:
            extra(self)
        self.set_defaults(func=cmd_train, train_module=module, args_class=args_class)

    def parse_known_args(self, args=None, namespace=None):
        self._fill()
        return super().parse_known_args(args, namespace)

    def format_usage(self):
        self._fill()
        return super().format_usage()

    def format_help(self):
        self._fill()
        return super().format_help()


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train a model and bundle its weights")
    fam = p.add_subparsers(dest="family", required=True, parser_class=_FamilyParser)
    for name, (about, *recipe) in TRAIN_FAMILIES.items():
        fam.add_parser(name, help=about, recipe=tuple(recipe))


# -- eval ----------------------------------------------------------------------------------


def cmd_eval(args: argparse.Namespace) -> int:
    """Corpus BLEU of a translation model (and of ``--against``, a baseline) on the test or the
    held-out split, each with a paired bootstrap interval, and the interval of the difference."""
    from attention_atlas.models.tasks.translation import compare, eval_split

    if args.resamples < 100:
        raise CliError(f"eval: --resamples {args.resamples} is too few for a 95 % interval (100 or more)")
    if args.beam < 1:
        raise CliError(f"eval: --beam {args.beam} must be 1 (greedy) or more")
    if args.first is not None and args.first < 1:
        raise CliError(f"eval: --first {args.first} must be 1 or more")
    names = [n for n in (args.against, args.model) if n is not None]
    translators = [_translator(n) for n in names]
    pairs = eval_split(args.split)[: args.first]
    result = compare(translators, pairs, args.beam, args.resamples, args.seed)
    rows = [*zip(names, result.systems, strict=True)]
    if result.difference is not None:
        rows.append((f"{args.model} − {args.against}", result.difference))
    if args.json:
        print(json.dumps(_eval_json(args, len(pairs), rows), ensure_ascii=False))
        return 0
    search = "greedy" if args.beam == 1 else f"beam {args.beam}"
    print(
        f"{args.split} split, {len(pairs):,} pairs, {search}; corpus BLEU (sacrebleu, tokenize=none on the "
        f"lower-cased tokens, one reference); {result.level:.0%} intervals from {args.resamples:,} "
        f"paired bootstrap resamples of the sentences, seed {args.seed}"
    )
    width = max(len(name) for name, _ in rows)
    for i, (name, iv) in enumerate(rows):
        sign = "+" if i == len(names) else ""
        print(f"  {name:<{width}}  {iv.value:{sign}6.2f}  [{iv.low:{sign}.2f}, {iv.high:{sign}.2f}]")
    return 0


def _translator(name: str):
    """A bundled translation model's id, a bundle folder or a ``.safetensors`` file, loaded on CPU."""
    from attention_atlas.models.storage.bundle import Seq2SeqBundle
    from attention_atlas.models.tasks.translation import Translator
    from attention_atlas.paths import WEIGHTS

    path = Path(name) if Path(name).exists() else WEIGHTS / name
    if not path.exists():
        raise CliError(f"eval: {name} is neither a bundled model id nor a bundle folder or file")
    bundle = Seq2SeqBundle.load(path)
    if bundle.task != "translation":
        raise CliError(f"eval: {name} is a {bundle.task} model; eval scores translation models")
    return Translator(bundle.model, bundle.src_vocab, bundle.tgt_vocab)


def _eval_json(args: argparse.Namespace, n_pairs: int, rows) -> dict:
    return {
        "split": args.split,
        "pairs": n_pairs,
        "beam": args.beam,
        "resamples": args.resamples,
        "seed": args.seed,
        "rows": [{"name": n, "bleu": iv.value, "low": iv.low, "high": iv.high} for n, iv in rows],
    }


def _add_eval(sub) -> None:
    p = sub.add_parser("eval", help="a translation model's BLEU with bootstrap intervals (against another)")
    p.add_argument("--model", required=True, help="a bundled model id, a bundle folder or .safetensors file")
    p.add_argument("--against", help="a second model, the baseline: the difference is --model minus it")
    # models.tasks.translation.EVAL_SPLITS (not imported here: building the parser loads no torch)
    p.add_argument("--split", choices=("test", "held-out"), default="test", help="test (card's) or held-out")
    p.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy, the card's headline)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the sentences")
    p.add_argument("--seed", type=int, default=0, help="seed of the resamples")
    p.add_argument("--first", type=int, help="only the split's first N pairs (a quick check)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_eval)


# -- corpus --------------------------------------------------------------------------------


def cmd_corpus(args: argparse.Namespace) -> int:
    """Every text of a file (or a bundled sample) through one model, reduced to statistics in
    the DuckDB store in the cache folder; ``--out F.parquet`` exports them (one row per text ×
    layer × head). A second run of the same corpus reads the store; a cut-off one continues."""
    import os

    from attention_atlas.models.corpus import inputs

    if args.out and Path(args.out).suffix != ".parquet":
        raise CliError(f"corpus: --out writes a .parquet file, not {Path(args.out).name}")
    if args.top_k < 1 or args.batch_size < 1:
        raise CliError("corpus: --top-k and --batch-size must be at least 1")
    if args.input_file:
        corpus = inputs.read_file(args.input_file, args.column)
    else:
        corpus = inputs.parse_sample("sample:" + args.sample)
    print(f"read {corpus.summary()}", file=sys.stderr)
    if not corpus.texts:
        raise CliError(f"corpus: {corpus.name} holds no text (every line is empty)")
    address = args.ray or os.environ.get("ATLAS_RAY_ADDRESS") or None
    if address:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise CliError("corpus --ray needs Ray: pip install 'ray[data]==2.60.0'")
    from attention_atlas.models.corpus.extract import (
        Options,  # torch: only once the input is known to be good
    )
    from attention_atlas.models.corpus.run import Cancelled, run_corpus

    options = Options(kind=args.kind, top_k=args.top_k, max_tokens=args.max_tokens, batch_size=args.batch_size)
    report = _progress_printer()
    try:
        store = run_corpus(
            args.model, corpus, options, folder=args.store_dir, progress=report, ray_address=address
        )
    except (KeyboardInterrupt, Cancelled):
        print("\nstopped; the same command continues where this run stopped", file=sys.stderr)
        raise KeyboardInterrupt from None
    with store:
        counts = store.counts()
        print(f"store {store.path} ({counts['done']:,} texts done)", file=sys.stderr)
        for text_id, error in store.con.execute("SELECT * FROM failed ORDER BY text_id LIMIT 3").fetchall():
            print(f"notice: text {text_id} was not read: {error}", file=sys.stderr)
        if counts["failed"]:
            print(f"notice: {counts['failed']:,} texts could not be read by the model", file=sys.stderr)
        if args.out:
            rows = store.export_parquet(Path(args.out))
            print(f"wrote {args.out} ({rows:,} rows: text × layer × head)")
    return 0


def _progress_printer():
    """Progress on stderr: redrawn in place on a terminal, else a line every 5 seconds."""
    import time

    last = [0.0]
    tty = sys.stderr.isatty()

    def report(p) -> None:
        if p.elapsed == 0:  # the start: say where a continued run resumes
            if p.started_with:
                print(f"continuing: {p.started_with:,} of {p.total:,} texts were done", file=sys.stderr)
            return
        now = time.monotonic()
        if p.done < p.total and now - last[0] < (0.2 if tty else 5.0):
            return
        last[0] = now
        print(("\r" if tty else "") + p.line(), end="" if tty and p.done < p.total else "\n", file=sys.stderr)

    return report


def _add_corpus(sub) -> None:
    p = sub.add_parser("corpus", help="statistics of every head over many texts (DuckDB store, Parquet export)")
    p.add_argument("--model", required=True, help="a registry id (see: cli.py models)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--input-file", help="one text a line (.txt), or a .csv / .jsonl with a text column")
    what.add_argument("--sample", help="a bundled sample: english[:N] or couplets[:N] (N texts, 1000)")
    p.add_argument("--column", help="the .csv/.jsonl field that holds the text (default: 'text')")
    p.add_argument("--kind", help="self, encoder_self, decoder_self or cross (default: cross, else self)")
    p.add_argument("--top-k", type=int, default=3, help="keys kept per token × layer × head (3)")
    p.add_argument("--max-tokens", type=int, help="tokens read per text (default: the model's limit, ≤ 512)")
    p.add_argument("--batch-size", type=int, default=128, help="texts per forward at most (128)")
    p.add_argument("--out", help="write the statistics to FILE.parquet")
    p.add_argument(
        "--ray", nargs="?", const="auto", help="run on Ray: auto (local) or a cluster address (ATLAS_RAY_ADDRESS)"
    )
    p.add_argument("--store-dir", type=Path, help="folder of the DuckDB stores (default $ATLAS_CACHE/corpus)")
    p.set_defaults(func=cmd_corpus)


# -- figure --------------------------------------------------------------------------------


def cmd_figure(args: argparse.Namespace) -> int:

    from attention_atlas.viz_core.figures import head_view
    from attention_atlas.viz_core.model_view import model_view

    out = Path(args.out)
    if out.suffix not in (".json", ".html", ".png"):
        raise CliError(f"--out must end in .json, .html or .png, not {out.suffix or 'nothing'!r}")
    args.text = _text(args)
    adapter = _adapter(args)
    long_fig = _long_figure(args, adapter)
    if long_fig is not None:
        return _save_figure(long_fig, out)
    result = adapter.run(args.text, target=args.target)
    kind = args.kind or ("cross" if "cross" in result.records else next(iter(result.records)))
    if kind not in result.records:
        raise CliError(f"--kind {kind!r}: this model gives {', '.join(result.records)}")
    record = result.records[kind]
    if args.view == "model":
        fig = model_view(record)
    else:
        if not 0 <= args.layer < record.n_layers:
            raise CliError(
                f"--layer {args.layer} is out of range: the model has layers 0..{record.n_layers - 1}"
            )
        if args.head != "average" and not (args.head.isdigit() and int(args.head) < record.n_heads):
            raise CliError(f"--head {args.head!r}: give 0..{record.n_heads - 1} or 'average'")
        fig = head_view(record, args.layer, args.head)
    return _save_figure(fig, out)


def _long_figure(args: argparse.Namespace, adapter):
    """For text over ``run()``'s token limit: the long-context figure from captured queries and
    keys (the head's max-pooled overview, or the long-input page's model view of every head's
    thumbnail); None for shorter text."""
    from attention_atlas.models.adapters import capture as cp

    limit = getattr(adapter, "max_tokens", None)
    if limit is None or cp.supports(adapter) is not None or args.target:
        return None
    if limit >= cp.context_limit(adapter) or len(adapter.tokenizer(args.text)["input_ids"]) <= limit:
        return None  # run() reads it all, or cuts it with a notice as before (minilm: 512 either way)
    from attention_atlas.viz_core import blockwise as bw
    from attention_atlas.viz_core import every_head as eh
    from attention_atlas.viz_core import long_figures as lf

    cap = cp.capture(adapter, args.text)
    title = f"{adapter.model_id}, {cap.n_tokens:,} tokens"
    if args.view == "model":  # the long-input page's model view, every layer done, on every core
        return lf.long_model_view(eh.all_heads(cap)[0])
    if not args.head.isdigit():
        raise CliError(f"--head {args.head!r}: give a head number (0..{cap.n_heads - 1}) at long context")
    args.head = int(args.head)
    _check_head(args, cap.n_layers, cap.n_heads)
    red = bw.reduce_head(cap, args.layer, args.head)
    return lf.overview_figure(red, cap.tokens, f"{title}, layer {args.layer}, head {args.head}")


def _save_figure(fig, out: Path) -> int:
    import plotly.io as pio

    if out.suffix == ".json":
        out.write_text(pio.to_json(fig, validate=False), encoding="utf-8")  # what st.plotly_chart sends
    elif out.suffix == ".html":
        fig.write_html(out, include_plotlyjs=True)  # self-contained: opens offline
    else:
        fig.write_image(out, scale=2)  # kaleido drives the local chromium
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")  # on stdout, as every other command's "wrote"
    return 0


# -- lens --------------------------------------------------------------------------------------------


def cmd_lens(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.lens import lens

    text = _from_argv(args.text)
    _check_out(args)
    adapter = _adapter(args)
    grid, tokens = lens(adapter, text, top=args.top, token=args.token)
    arrays = {"model": adapter.model_id, "tokens": tokens, "top_ids": grid.top_ids, "top_probs": grid.top_probs}
    if args.token is not None:
        arrays |= {"token": args.token, "token_probs": grid.token_probs, "token_ranks": grid.token_ranks}
    if not _write_arrays(args, arrays, f"top_ids, top_probs {list(grid.top_ids.shape)}"):
        _print_lens(adapter, grid, tokens)
    return 0


def _print_lens(adapter, grid, tokens: list[str]) -> None:
    """The top token after every block at the last position, with its probability."""
    print(f"model   {adapter.model_id}; after each block, the top tokens at the last position {tokens[-1]!r}")
    for layer, (ids, probs) in enumerate(zip(grid.top_ids[:, -1], grid.top_probs[:, -1], strict=True)):
        best = ", ".join(f"{adapter.tokenizer.decode([int(i)])!r} {p:.3f}" for i, p in zip(ids[:3], probs[:3], strict=True))
        print(f"{layer:>5}  {best}")


def _add_lens(sub) -> None:
    p = sub.add_parser("lens", help="the logit lens: each block's output read through the model's final norm and head")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a registry id of a causal LM (see: cli.py models)")
    which.add_argument("--checkpoint", help="an uploadable file or zipped Hugging Face folder of a causal LM")
    p.add_argument("--text", required=True, help="the input")
    p.add_argument("--top", type=int, default=10, help="tokens kept per layer and position (10, at most 100)")
    p.add_argument("--token", type=int, help="a token id to follow: its probability and rank everywhere")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument("--out", help="write FILE.npz: top_ids, top_probs [layers, positions, K], tokens")
    p.set_defaults(func=cmd_lens)


# -- generate ----------------------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.generate import Sampling, generate

    text = _from_argv(args.text)
    _check_out(args)
    given = {"temperature": args.temperature, "top_p": args.top_p, "seed": args.seed}
    options = {k: v for k, v in given.items() if v is not None}
    sampling = Sampling(**options) if options else None  # any of the three samples; none is greedy
    if sampling is not None:
        sampling.check()  # before loading the model
    adapter = _adapter(args)
    done = generate(adapter, text, max_new_tokens=args.max_new_tokens, sampling=sampling)
    arrays = {
        "model": adapter.model_id,
        "ids": done.ids,
        "tokens": done.tokens,
        "prompt_len": done.prompt_len,
        "attention": done.attention,
        "text": done.text,
    }
    summary = f"{len(done.ids) - done.prompt_len} new tokens; attention {list(done.attention.shape)}"
    if not _write_arrays(args, arrays, summary):
        _print_generated(adapter, done)
    return 0


def _print_generated(adapter, done) -> None:
    """The continuation, then each new token with the earlier token its query attended to most
    (averaged over layers and heads)."""
    print(f"model   {adapter.model_id}; {done.text!r}")
    mean = done.attention.mean(axis=(0, 1))  # [new, all]
    for k, row in enumerate(mean):
        pos = done.prompt_len + k
        top = int(row.argmax())
        seen = f"looked most at {top} · {done.tokens[top]!r} ({row[top]:.2f})"
        print(f"{pos:>5}  {done.tokens[pos]!r:<16} {seen}")


def _add_generate(sub) -> None:
    p = sub.add_parser("generate", help="continue a text with a causal LM, keeping each new token's attention")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a registry id of a causal LM (see: cli.py models)")
    which.add_argument("--checkpoint", help="an uploadable file or zipped Hugging Face folder of a causal LM")
    p.add_argument("--text", required=True, help="the prompt")
    p.add_argument("--max-new-tokens", type=int, required=True, help="stop after this many (or at EOS)")
    p.add_argument("--temperature", type=float, help="sample at this temperature (> 0; default greedy)")
    p.add_argument("--top-p", type=float, help="sample from the tokens whose probability reaches P (0 < P ≤ 1)")
    p.add_argument("--seed", type=int, help="the sampling seed (0): one seed, one continuation")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument(
        "--out", help="write FILE.npz: ids, tokens, prompt_len, attention [layers, heads, new, all tokens]"
    )
    p.set_defaults(func=cmd_generate)


# -- contributions -----------------------------------------------------------------------------------

CONTRIBUTIONS = ("attn", "attn_residual", "ffn", "ffn_residual")


def cmd_contributions(args: argparse.Namespace) -> int:
    from attention_atlas.models.analysis.contributions import contributions

    text = _from_argv(args.text)
    _check_out(args)
    adapter = _adapter(args)
    result = contributions(adapter, text)
    arrays = {"model": adapter.model_id, "tokens": result.tokens} | {
        k: getattr(result, k) for k in CONTRIBUTIONS
    }
    _write_arrays(args, arrays, f"attn {list(result.attn.shape)}, attn_residual, ffn, ffn_residual, tokens")
    return 0


def _add_contributions(sub) -> None:
    p = sub.add_parser(
        "contributions",
        help="the contribution graph: how much each head, token and block adds to each residual",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a registry id of a causal LM (see: cli.py models)")
    which.add_argument("--checkpoint", help="an uploadable file or zipped Hugging Face folder of a causal LM")
    p.add_argument("--text", required=True, help="the input")
    fmt = p.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument(
        "--out",
        help="write FILE.npz: attn [layers, heads, positions, positions], attn_residual, ffn, ffn_residual"
        " [layers, positions], tokens",
    )
    p.set_defaults(func=cmd_contributions)


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="start the dashboard (Streamlit) in the foreground")
    p.add_argument("--port", type=int, default=8501, help="the port to listen on (8501)")
    p.add_argument("--address", help="the address to listen on (default: every interface)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from attention_atlas.serve.launcher import run_forever

    if not 0 < args.port < 65536:
        raise CliError(f"serve: --port {args.port} is not a port (1–65535)")
    return run_forever(args.port, args.address)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cli.py", description="See attention from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("models", help="list the bundled models")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("extract", help="attention weights of one input or a file of inputs")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a registry id (see: cli.py models)")
    which.add_argument("--checkpoint", help="a self-describing checkpoint file (cli.py export)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the input, e.g. an upper line 两个黄鹂鸣翠柳")
    what.add_argument("--input-file", help="one input a line: source or source<TAB>target")
    what.add_argument(
        "--text-file", help="one input: the whole UTF-8 file (long context, with --layer/--head)"
    )
    p.add_argument("--target", help="force-decode this output (teacher forcing)")
    p.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy)")
    p.add_argument("--layer", type=int, help="with --head and --out F.npz: that head's full weights only")
    p.add_argument("--head", type=int, help="with --layer: the head whose weights --out writes")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object per input")
    fmt.add_argument("--out", help="write the records to FILE.npz")
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("export", help="write a model's self-describing checkpoint")
    p.add_argument("--model", required=True, help="a registry id")
    p.add_argument("--out", required=True, help="the checkpoint file to write")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("figure", help="write a view's Plotly figure (JSON as the page sends it, HTML or PNG)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a registry id (see: cli.py models)")
    which.add_argument("--checkpoint", help="a self-describing checkpoint file (cli.py export)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the input")
    what.add_argument("--text-file", help="the input: a UTF-8 file, up to the model's context")
    p.add_argument("--target", help="force-decode this output (seq2seq models)")
    p.add_argument(
        "--kind", help="self, encoder_self, decoder_self or cross (default: cross, else the first)"
    )
    p.add_argument("--view", required=True, choices=["head", "model"], help="one head, or all layers × heads")
    p.add_argument("--layer", type=int, default=0, help="layer of the head view (0)")
    p.add_argument("--head", default="0", help="head of the head view, or 'average' (0)")
    p.add_argument("--out", required=True, help="FILE.json, FILE.html or FILE.png")
    p.set_defaults(func=cmd_figure)

    _add_train(sub)
    _add_eval(sub)
    _add_corpus(sub)
    _add_lens(sub)
    _add_generate(sub)
    _add_contributions(sub)
    _add_serve(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        args.argv = argv
        return args.func(args)
    except CliError as err:
        _fail(err)
        return 2
    except (ValueError, KeyError, IndexError, OSError) as err:
        _fail(err.args[0] if isinstance(err, KeyError) and err.args else err)
        return 1
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except Exception as err:  # a bug, still one line: the contract is no tracebacks
        _fail(f"{type(err).__name__}: {err}")
        return 1


def _fail(message) -> None:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
