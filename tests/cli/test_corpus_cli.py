"""cli.py corpus: the contract (one Parquet row per text × layer × head, text_id among non-empty
lines, entropy in bits as the adapter's own record gives it) and one-line refusals."""

import os
import re

import numpy as np
import pandas as pd
import pytest

from tests.support import one_line
from tests.support import run_cli as cli

LINES = [
    "The cat sat on the mat.",
    "",
    "<script>alert(1)</script> & <b>bold</b>",
    "   ",
    "两个黄鹂鸣翠柳 مرحبا 👨\u200d👩\u200d👧",
    "A much longer sentence about the rain that fell over the quiet town all night.",
]
TEXTS = [t for t in LINES if t.strip()]


def env(tmp_path, **extra) -> dict:
    return {**os.environ, "ATLAS_CACHE": str(tmp_path / "cache"), **extra}


def refused(tmp_path, *args, **extra) -> str:
    run = cli("corpus", "--model", "minilm", *args, env=env(tmp_path, **extra))
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    message = run.stderr.strip().splitlines()[-1]
    assert message.startswith("error: ") and one_line(message), run.stderr
    return message


def entropy_bits(weights: np.ndarray) -> np.ndarray:
    """[layers, heads]: each query row's entropy in bits, averaged over rows (written out here anew)."""
    w = weights.astype(np.float64)
    terms = np.zeros_like(w)
    np.log2(w, out=terms, where=w > 0)
    return -(w * terms).sum(-1).mean(-1)


def test_corpus_writes_one_row_per_text_layer_head_with_the_records_entropy(tmp_path):
    path, out = tmp_path / "corpus.txt", tmp_path / "stats.parquet"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    run = cli("corpus", "--model", "minilm", "--input-file", path, "--out", out,
              env=env(tmp_path, PYTHONPROFILEIMPORTTIME="1"))  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "2 empty lines skipped" in run.stderr and f"{len(TEXTS) * 72:,} rows" in run.stdout
    assert not re.search(r"\|\s+ray(\.|\s*$)", run.stderr, re.MULTILINE), "a local run imported ray"
    stats = pd.read_parquet(out)
    assert {"text_id", "layer", "head", "n_tokens", "entropy"} <= set(stats.columns)
    assert len(stats) == len(TEXTS) * 6 * 12
    assert sorted(stats["text_id"].unique()) == list(range(len(TEXTS)))
    from attention_atlas.models.registry import load

    adapter = load("minilm")
    for text_id, text in enumerate(TEXTS):
        rec = adapter.run(text).records["self"]
        rows = stats[stats["text_id"] == text_id].sort_values(["layer", "head"])
        assert (rows["n_tokens"] == len(rec.key_tokens)).all()
        assert np.allclose(rows["entropy"].to_numpy().reshape(6, 12), entropy_bits(rec.weights), atol=1e-5)
    again = cli("corpus", "--model", "minilm", "--input-file", path, "--out", tmp_path / "2.parquet",
                env=env(tmp_path))  # fmt: skip
    assert again.returncode == 0 and pd.read_parquet(tmp_path / "2.parquet").equals(stats)


def test_binary_non_utf8_and_oversized_files_get_one_line_errors(tmp_path):
    (tmp_path / "w.txt").write_bytes(b"\x00\x01\x02 weights")
    assert "binary" in refused(tmp_path, "--input-file", tmp_path / "w.txt")
    (tmp_path / "l.txt").write_bytes("café\n".encode("latin-1"))
    assert "not UTF-8" in refused(tmp_path, "--input-file", tmp_path / "l.txt")
    (tmp_path / "big.txt").write_text("a line\n" * 500, encoding="utf-8")
    message = refused(tmp_path, "--input-file", tmp_path / "big.txt", ATLAS_CORPUS_MAX_MB="0.001")
    assert "size cap" in message
    assert "no such file" in refused(tmp_path, "--input-file", tmp_path / "none.txt")


@pytest.mark.parametrize(
    ("name", "data", "column", "expect"),
    [
        ("d.csv", "id,sentence\n1,hello\n", "text", "the columns are 'id', 'sentence'"),
        ("d.csv", "text,n\nok,1\nbad,1,2\n", None, "line 3"),
        ("d.jsonl", '{"text": "ok"}\n{"text": \n', None, "line 2"),
        ("d.jsonl", '{"body": "x", "id": 2}\n', "text", "'body', 'id'"),
        ("d.txt", "\n\n  \n", None, "holds no text"),
    ],
)
def test_malformed_tables_and_missing_columns_are_named(tmp_path, name, data, column, expect):
    (tmp_path / name).write_text(data, encoding="utf-8")
    extra = ["--column", column] if column else []
    assert expect in refused(tmp_path, "--input-file", tmp_path / name, *extra)


def test_out_must_be_parquet(tmp_path):
    assert ".parquet" in refused(tmp_path, "--sample", "english:5", "--out", tmp_path / "x.csv")


def test_a_stopped_ray_cluster_is_one_line_within_seconds(tmp_path):
    """--ray at a loopback port where nothing listens: one line before any model loads, in seconds
    (ray.init waited over two minutes there); the same from ATLAS_RAY_ADDRESS."""
    import time

    pytest.importorskip("ray")
    from tests.unit.test_corpus_limits import closed_port

    address = f"127.0.0.1:{closed_port()}"
    began = time.monotonic()
    message = refused(tmp_path, "--sample", "english:5", "--ray", address)
    assert message.startswith(f"error: corpus --ray: no Ray cluster answers at {address} (Connection")
    assert "no Ray cluster answers" in refused(tmp_path, "--sample", "english:5", ATLAS_RAY_ADDRESS=address)
    assert time.monotonic() - began < 60  # two fresh interpreters


def test_the_stores_disk_limit_deletes_the_least_recently_used_store_and_says_so(tmp_path):
    from tests.unit.test_corpus_limits import make_store

    folder = tmp_path / "stores"
    folder.mkdir()
    old, size = make_store(folder, "minilm-0123456789abcdef", 200, 0)
    run = cli("corpus", "--model", "minilm", "--sample", "english:5", "--store-dir", folder,
              env=env(tmp_path, ATLAS_CORPUS_STORES_MAX_MB="0.5"))  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    said = [line for line in run.stderr.splitlines() if "ATLAS_CORPUS_STORES_MAX_MB" in line]
    assert said == [
        f"notice: deleted the least recently used store {old.name} ({size / 2**20:,.1f} MB): the stores passed 0.5 MB "
        "(ATLAS_CORPUS_STORES_MAX_MB)"
    ]
    assert not old.exists() and len(list(folder.glob("minilm-*.duckdb"))) == 1
    # a complete store is read whatever the setting; a run to make is refused (before the model loads)
    bad = refused(tmp_path, "--sample", "english:6", "--store-dir", folder, ATLAS_CORPUS_STORES_MAX_MB="-1")
    assert bad == "error: ATLAS_CORPUS_STORES_MAX_MB must be a number of megabytes above 0, not '-1'"
