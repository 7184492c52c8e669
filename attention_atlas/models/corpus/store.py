"""The corpus store: one embedded DuckDB file per (model, corpus content, options).

The file lives in the cache folder (``$ATLAS_CACHE/corpus/``, default
``~/.cache/attention-atlas/corpus/``) under a name made from its key, so the same corpus with
the same model and options finds the same file: a finished one is read at once, an unfinished
one (cancelled, crashed) is continued. Each batch is written in one transaction with the
texts it covers, so a cut-off run leaves whole texts or none. The stores together stay under
``ATLAS_CORPUS_STORES_MAX_MB`` (``trim_stores``): past it, the least recently used are deleted.

Tables::

    meta(key, value)                      model, corpus, options, layers, heads, status …
    texts(text_id, text)                  every text of the corpus (written first)
    facts(text_id, n_tokens, truncated, output)          one per text done
    stats(text_id, layer, head, n_tokens, n_queries, entropy, mean_distance, special_share,
          previous_share, diagonal_share, first_share, pattern)
    tokens(text_id, pos, token, special)  the query side; key_tokens: the key side (a view for self)
    links(text_id, pos, layer, head, key1, w1, …, keyK, wK)   each query token's top-k keys
    failed(text_id, error)                texts the model could not read
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attention_atlas.i18n import later
from attention_atlas.models.corpus.stats import STAT_COLUMNS
from attention_atlas.paths import cache_dir

MEMORY_LIMIT = "256MB"  # DuckDB's own buffers: the run's memory stays flat however long the corpus
MB = 2**20
STORES_MAX_MB = 4096  # every store together, by default (ATLAS_CORPUS_STORES_MAX_MB)


def _table(columns: dict[str, np.ndarray]):
    """Columns as an Arrow table (zero-copy for numbers), or a pandas frame without pyarrow."""
    try:
        import pyarrow as pa
    except ImportError:
        import pandas as pd

        return pd.DataFrame(columns)
    return pa.table(
        {k: pa.array(v, from_pandas=True) if v.dtype == object else v for k, v in columns.items()}
    )


class StoreError(ValueError):
    """A store that cannot be opened or queried (busy, another version): one line."""


def cache_root() -> Path:
    """The cache folder the models use too (``models.adapters.smollm2.cache_root``)."""
    return cache_dir()


def store_folder() -> Path:
    """Where the stores live: ``$ATLAS_CACHE/corpus``."""
    return cache_root() / "corpus"


def store_key(model_id: str, corpus_sha256: str, options: dict) -> str:
    blob = json.dumps({"model": model_id, "corpus": corpus_sha256, "options": options}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def store_path(model_id: str, corpus_sha256: str, options: dict, folder: Path | None = None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)
    return (folder or store_folder()) / f"{safe}-{store_key(model_id, corpus_sha256, options)}.duckdb"


@contextlib.contextmanager
def filling(
    path: Path, busy: str = "is being filled by another run right now; open it again when that run ends"
):
    """The store's run lock: one run fills a store at a time (another process, or another session
    of the same server), and nobody deletes a store a run is filling; held, it refuses in one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            raise StoreError(f"{path.name} {busy}") from err
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Cached:
    """One store in the cache folder, as the Corpus page lists it."""

    path: Path
    model: str
    corpus: str  # the sample or file it was made from
    done: int  # texts the store holds
    texts: int
    bytes: int  # on disk, its write-ahead log included
    used: float  # last written or opened (a time stamp)
    note: str = ""  # why its contents could not be read (busy, not a store)


def _files(path: Path) -> list[Path]:
    return [p for p in (path, path.with_name(path.name + ".wal")) if p.is_file()]


def cached_stores(folder: Path | None = None) -> list[Cached]:
    """Every store in ``folder`` (default: the cache's), the last used first."""
    root = folder or store_folder()
    found = [c for c in map(_described, root.glob("*.duckdb") if root.is_dir() else []) if c]
    return sorted(found, key=lambda c: c.used, reverse=True)


def _described(path: Path) -> Cached | None:
    """``_describe``, or None for a store deleted meanwhile (the disk limit, in another thread)."""
    try:
        found = _describe(path)
    except FileNotFoundError:
        return None
    return found if path.is_file() else None


def _describe(path: Path) -> Cached:
    size, used = sum(p.stat().st_size for p in _files(path)), path.stat().st_mtime
    try:
        meta, counts = _read(path)
    except Exception as err:  # busy, not a store, another DuckDB version: listed, to be deleted
        model = path.stem.rsplit("-", 1)[0]
        return Cached(path, model, "?", 0, 0, size, used, str(err).splitlines()[0][:200])
    return Cached(
        path, meta.get("model", "?"), meta.get("corpus", "?"), counts["done"], counts["texts"], size, used
    )


def remove_store(path: Path) -> int:
    """Delete a store (its DuckDB file and write-ahead log), unless a run is filling it; the bytes freed."""
    path = Path(path)
    with filling(path, "is being filled by a run right now: delete it once that run ends"):
        parts = _files(path)
        freed = sum(p.stat().st_size for p in parts)
        for p in parts:
            p.unlink()
    path.with_suffix(".lock").unlink(missing_ok=True)
    return freed


def used_now(path: Path) -> None:
    """Mark a store as just used (its time stamp): the list shows the last used first."""
    with contextlib.suppress(OSError):
        os.utime(path)


# -- the disk limit ----------------------------------------------------------------------------------


def stores_max_bytes() -> int:
    """The stores' disk limit: ``ATLAS_CORPUS_STORES_MAX_MB`` megabytes (default ``STORES_MAX_MB``);
    anything but a number above 0 is refused in one line."""
    env = os.environ.get("ATLAS_CORPUS_STORES_MAX_MB", "").strip()
    if not env:
        return STORES_MAX_MB * MB
    try:
        mb = float(env)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and mb > 0):
        raise StoreError(
            later(
                "ATLAS_CORPUS_STORES_MAX_MB must be a number of megabytes above 0, not {value}",
                value=repr(env),
            )
        )
    return int(mb * MB)


@dataclass(frozen=True)
class Dropped:
    """A store ``trim_stores`` deleted, and the limit it was deleted for."""

    name: str
    bytes: int
    limit: int


def _by_age(folder: Path) -> list[tuple[Path, int]]:
    """Every store in ``folder`` with its size on disk, the least recently used first."""
    found = []
    for path in folder.glob("*.duckdb") if folder.is_dir() else []:
        with contextlib.suppress(OSError):  # gone meanwhile (another session's trim, a delete)
            found.append((path.stat().st_mtime, path, sum(p.stat().st_size for p in _files(path))))
    return [(path, size) for _, path, size in sorted(found, key=lambda f: f[0])]


def trim_stores(keep=(), folder: Path | None = None, limit: int | None = None) -> list[Dropped]:
    """Delete the least recently used stores while all of them together exceed ``limit`` (default
    ``stores_max_bytes``), never one in ``keep`` (the store a page reads or a run fills) nor one a
    run is filling (its lock held); the stores deleted, the oldest first."""
    limit = stores_max_bytes() if limit is None else limit
    stores = _by_age(folder or store_folder())
    total, kept = sum(size for _, size in stores), {Path(p).resolve() for p in keep}
    dropped = []
    for path, size in stores:
        if total <= limit:
            break
        if path.resolve() in kept:
            continue
        try:
            freed = remove_store(path)
        except (StoreError, OSError):  # a run is filling it: it stays
            continue
        total -= size
        if freed:
            dropped.append(Dropped(path.name, freed, limit))
    return dropped


def _schema(top_k: int, cross: bool) -> list[str]:
    stats = ", ".join(f"{c} DOUBLE" for c in STAT_COLUMNS)
    links = ", ".join(f"key{j} SMALLINT, w{j} REAL" for j in range(1, top_k + 1))
    keys = (
        "CREATE TABLE key_tokens(text_id BIGINT, pos SMALLINT, token VARCHAR, special BOOLEAN)"
        if cross
        else "CREATE VIEW key_tokens AS SELECT * FROM tokens"
    )
    return [
        "CREATE TABLE meta(key VARCHAR PRIMARY KEY, value VARCHAR)",
        "CREATE TABLE texts(text_id BIGINT, text VARCHAR)",
        "CREATE TABLE facts(text_id BIGINT, n_tokens INTEGER, truncated BOOLEAN, output VARCHAR)",
        f"CREATE TABLE stats(text_id BIGINT, layer SMALLINT, head SMALLINT, n_tokens INTEGER, "
        f"n_queries INTEGER, {stats}, pattern VARCHAR)",
        "CREATE TABLE tokens(text_id BIGINT, pos SMALLINT, token VARCHAR, special BOOLEAN)",
        keys,
        f"CREATE TABLE links(text_id BIGINT, pos SMALLINT, layer TINYINT, head TINYINT, {links})",
        "CREATE TABLE failed(text_id BIGINT, error VARCHAR)",
    ]


def _read(path: Path) -> tuple[dict, dict]:
    """A store's meta and counts, read without writing: DuckDB makes a missing file it opens to write,
    so a listing that opened a store the disk limit had just deleted in another thread made it
    again, empty, and the next trim deleted and reported it a second time. A store this process
    is filling is open to write already, and is read with that connection's configuration."""
    import duckdb

    try:
        store = Store.open(path, read_only=True)
    except duckdb.ConnectionException:  # open to write in this process: a run fills it, it stays
        store = Store.open(path)
    with store:
        return store.meta, store.counts()


def connect(path: Path, read_only: bool = False):
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as err:
        raise StoreError(f"{path.name}: the store is busy (another run is writing it) or unreadable") from err
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    return con


class Store:
    """An open store. ``meta`` holds what made it; ``complete`` whether every text is done."""

    def __init__(self, path: Path, con):
        self.path, self.con = Path(path), con

    # -- making and opening --------------------------------------------------------------------
    @classmethod
    def open_or_create(cls, path: Path, meta: dict, texts: list[str]) -> Store:
        path.parent.mkdir(parents=True, exist_ok=True)
        con = connect(path)
        store = cls(path, con)
        if not store._has_table("meta"):
            store._create(meta, texts)
        elif store.meta.get("key") != meta["key"]:
            con.close()
            raise StoreError(f"{path.name} holds another corpus or options; remove it to start over")
        return store

    @classmethod
    def open(cls, path: Path, read_only: bool = False) -> Store:
        if not Path(path).is_file():
            raise StoreError(f"{path}: no such store")
        store = cls(path, connect(path, read_only))
        if not store._has_table("meta"):
            raise StoreError(f"{Path(path).name}: not a corpus store")
        return store

    def _has_table(self, name: str) -> bool:
        q = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
        return self.con.execute(q, [name]).fetchone()[0] > 0

    def _create(self, meta: dict, texts: list[str]) -> None:
        import pandas as pd

        self.con.execute("BEGIN")
        for sql in _schema(int(meta["top_k"]), meta["kind"] == "cross"):
            self.con.execute(sql)
        frame = pd.DataFrame({"text_id": np.arange(len(texts), dtype=np.int64), "text": texts})
        self._insert("texts", frame)
        rows = [(k, json.dumps(v)) for k, v in {**meta, "status": "running", "created": time.time()}.items()]
        self.con.executemany("INSERT INTO meta VALUES (?, ?)", rows)
        self.con.execute("COMMIT")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- facts ---------------------------------------------------------------------------------
    @property
    def meta(self) -> dict:
        return {k: json.loads(v) for k, v in self.con.execute("SELECT key, value FROM meta").fetchall()}

    def set_meta(self, **values) -> None:
        for k, v in values.items():
            self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [k, json.dumps(v)])

    @property
    def complete(self) -> bool:
        return self.meta.get("status") == "complete"

    def done_ids(self) -> set[int]:
        rows = self.con.execute("SELECT text_id FROM facts UNION ALL SELECT text_id FROM failed").fetchall()
        return {r[0] for r in rows}

    def counts(self) -> dict:
        q = "SELECT (SELECT count(*) FROM texts), (SELECT count(*) FROM facts), (SELECT count(*) FROM failed)"
        total, done, failed = self.con.execute(q).fetchone()
        return {"texts": total, "done": done, "failed": failed}

    # -- writing -------------------------------------------------------------------------------
    def _insert(self, table: str, frame) -> None:
        name = f"_incoming_{table}"
        self.con.register(name, frame)
        try:
            self.con.execute(f"INSERT INTO {table} SELECT * FROM {name}")
        finally:
            self.con.unregister(name)

    def write(self, batch) -> None:
        """One extracted batch (``models.corpus.extract.Batch``), all of it or nothing."""
        self.con.execute("BEGIN")
        try:
            if batch.texts:
                self._insert("facts", _table(batch.texts))
                self._insert("stats", _table(batch.reduced.stats))
                self._insert("links", _table(batch.reduced.links))
                self._insert("tokens", _table(batch.tokens))
                if batch.key_tokens is not None:
                    self._insert("key_tokens", _table(batch.key_tokens))
            if batch.failed:
                self.con.executemany("INSERT INTO failed VALUES (?, ?)", batch.failed)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def writing(self) -> None:
        """One DuckDB thread while the model runs: its inserts are small, and the model wants the cores."""
        self.con.execute("SET threads = 1")

    def finish(self, seconds: float) -> None:
        """Mark the run complete (and sort the links by head, so a search reads one head's rows)."""
        self.con.execute("RESET threads")
        self.con.execute("BEGIN")
        self.con.execute(
            "CREATE TABLE links_sorted AS SELECT * FROM links ORDER BY layer, head, text_id, pos"
        )
        self.con.execute("DROP TABLE links")
        self.con.execute("ALTER TABLE links_sorted RENAME TO links")
        self.set_meta(status="complete", seconds=seconds)
        self.con.execute("COMMIT")
        self.con.execute("CHECKPOINT")

    # -- reading -------------------------------------------------------------------------------
    def frame(self, sql: str, params: list | None = None):
        return self.con.execute(sql, params or []).df()

    def stats_frame(self):
        """Every statistics row, ordered by text, layer and head (what ``--out`` exports)."""
        return self.frame("SELECT * FROM stats ORDER BY text_id, layer, head")

    def export_parquet(self, out: Path) -> int:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        target = str(out).replace("'", "''")
        self.con.execute(
            f"COPY (SELECT * FROM stats ORDER BY text_id, layer, head) TO '{target}' (FORMAT parquet)"
        )
        return self.con.execute("SELECT count(*) FROM stats").fetchone()[0]
