"""``corpus``: every text of a file (or a bundled sample) through one model, reduced to statistics
of every head in the DuckDB store in the cache folder, here or on Ray; ``--out F.parquet`` exports
them (one row per text × layer × head)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attention_atlas.cli.common import CliError


def add_parser(sub) -> None:
    p = sub.add_parser("corpus", help="statistics of every head over many texts (DuckDB store, Parquet export)")
    p.add_argument("--model", required=True, help="a registry id (see: atlas models)")
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


def cmd_corpus(args: argparse.Namespace) -> int:
    """Every text through the model into the store; a second run of the same corpus reads the
    store, a cut-off one continues."""
    corpus = _read_corpus(args)
    address = _ray_address(args)
    from attention_atlas.models.corpus.extract import (
        Options,  # torch: only once the input is known to be good
    )
    from attention_atlas.models.corpus.run import Cancelled, run_corpus

    options = Options(kind=args.kind, top_k=args.top_k, max_tokens=args.max_tokens, batch_size=args.batch_size)
    report = _progress_printer()
    try:
        store = run_corpus(
            args.model, corpus, options, folder=args.store_dir, progress=report, ray_address=address,
            dropped=_say_dropped,
        )  # fmt: skip
    except (KeyboardInterrupt, Cancelled):
        print("\nstopped; the same command continues where this run stopped", file=sys.stderr)
        raise KeyboardInterrupt from None
    with store:
        _report_store(store, args.out)
    return 0


def _read_corpus(args: argparse.Namespace):
    """The options checked and the texts read (said on stderr), before any model loads."""
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
    return corpus


def _ray_address(args: argparse.Namespace) -> str | None:
    """``--ray`` or ``$ATLAS_RAY_ADDRESS`` (None: this process), checked that Ray is installed and
    that a cluster answers there (a stopped one is one line within a few seconds, not a hang)."""
    import os

    address = args.ray or os.environ.get("ATLAS_RAY_ADDRESS") or None
    if address:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise CliError("corpus --ray needs Ray: pip install 'ray[data]==2.60.0'")
        from attention_atlas.models.corpus.ray_run import Unreachable, check

        try:
            check(address)
        except Unreachable as err:
            raise CliError(f"corpus --ray: {err}") from None
    return address


def _say_dropped(gone) -> None:
    """One notice per store the disk limit deleted (``ATLAS_CORPUS_STORES_MAX_MB``)."""
    for d in gone:
        print(
            f"notice: deleted the least recently used store {d.name} ({d.bytes / 2**20:,.1f} MB): the stores "
            f"passed {round(d.limit / 2**20, 2):,g} MB (ATLAS_CORPUS_STORES_MAX_MB)",
            file=sys.stderr,
        )


def _report_store(store, out: str | None) -> None:
    """Where the store is, what could not be read (three texts, then a count), and the export."""
    counts = store.counts()
    print(f"store {store.path} ({counts['done']:,} texts done)", file=sys.stderr)
    for text_id, error in store.con.execute("SELECT * FROM failed ORDER BY text_id LIMIT 3").fetchall():
        print(f"notice: text {text_id} was not read: {error}", file=sys.stderr)
    if counts["failed"]:
        print(f"notice: {counts['failed']:,} texts could not be read by the model", file=sys.stderr)
    if out:
        rows = store.export_parquet(Path(out))
        print(f"wrote {out} ({rows:,} rows: text × layer × head)")


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
