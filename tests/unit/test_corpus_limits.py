"""The corpus run's two limits: a Ray address where no cluster answers is one line within a few
seconds (``ray_run.check``: a closed port, a port that answers as something else, one that never
answers), and the stores' disk limit (``store.trim_stores``): real DuckDB stores on disk, the least
recently used deleted first, never the one kept or one a run is filling."""

import os
import socket
import threading
import time

import pytest

from attention_atlas.models.corpus import ray_run
from attention_atlas.models.corpus.inputs import Corpus
from attention_atlas.models.corpus.run import path_for, run_corpus
from attention_atlas.models.corpus.store import (
    STORES_MAX_MB,
    Store,
    StoreError,
    filling,
    stores_max_bytes,
    trim_stores,
)
from tests.support import one_line

# -- Ray: a cluster that does not answer -------------------------------------------------------------


def closed_port() -> int:
    """A loopback port with nothing listening (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    """Loopback TCP servers, each answering every connection with its ``reply`` (None: never a byte)."""
    held: list[socket.socket] = []

    def serve(reply: bytes | None) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        held.append(listener)

        def loop() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:  # closed at the end of the test
                    return
                held.append(conn)
                if reply is not None:
                    conn.recv(64)
                    conn.sendall(reply)

        threading.Thread(target=loop, daemon=True).start()
        return listener.getsockname()[1]

    yield serve
    for conn in held:
        conn.close()


def refused_within(address: str, seconds: float) -> str:
    began = time.monotonic()
    with pytest.raises(ray_run.Unreachable) as caught:
        ray_run.check(address, seconds)
    took = time.monotonic() - began
    assert took < seconds + 1.0, f"{address}: {took:.1f} s"
    assert one_line(caught.value), caught.value
    return str(caught.value)


def test_a_stopped_cluster_is_one_line_at_once():
    port = closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        said = refused_within(address, ray_run.PROBE_SECONDS)
        assert said.startswith(f"no Ray cluster answers at {address} (Connection refused)"), said
        assert "ray start --head" in said


def test_a_port_that_answers_as_something_else_or_never_is_refused_in_bounded_time(server):
    http = server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")  # the dashboard's port, say
    assert "it answers, but not as Ray does" in refused_within(f"127.0.0.1:{http}", 2.0)
    silent = server(None)
    assert "127.0.0.1" in refused_within(f"127.0.0.1:{silent}", 0.5)


def test_a_grpc_server_passes_the_check(server):
    """What Ray's GCS sends first (HTTP/2's SETTINGS frame) passes; a real cluster is checked in
    tests/integration/test_corpus_ray.py."""
    port = server(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
    ray_run.check(f"127.0.0.1:{port}", 2.0)


@pytest.mark.parametrize("address", ["head:abc", "head", "ray://:10001", "head:99999"])
def test_an_address_that_is_not_one_is_one_line(address):
    said = refused_within(address, 1.0)
    assert said == f"{address} is not a Ray address: give auto, HOST:PORT or ray://HOST:PORT"


def test_auto_is_not_checked():
    ray_run.check("auto")
    ray_run.check("local")


def test_a_run_on_a_stopped_cluster_says_so_before_loading_the_model(tmp_path):
    """``run_corpus`` checks the address first: no model is loaded (the id is not even looked up)."""
    corpus = Corpus("t", ["a text"], 0)
    with pytest.raises(ray_run.Unreachable, match="no Ray cluster answers"):
        run_corpus("no-such-model", corpus, folder=tmp_path, ray_address=f"127.0.0.1:{closed_port()}")


# -- the stores' disk limit --------------------------------------------------------------------------


def make_store(folder, name: str, n: int, used: float):
    """A real store of ``n`` texts in ``folder``, last used at ``used``; its path and bytes on disk."""
    path = folder / f"{name}.duckdb"
    texts = [f"text {i}: " + "the rain over the town " * (1 + i % 7) for i in range(n)]
    with Store.open_or_create(path, {"key": path.stem, "top_k": 3, "kind": "self"}, texts):
        pass
    os.utime(path, (used, used))
    return path, size(path)


def size(path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + ".wal")) if p.is_file())


@pytest.fixture
def four(tmp_path):
    """Four stores of different sizes, used an hour, a minute... apart: oldest first."""
    now = time.time()
    return [make_store(tmp_path, f"m-{i}", n, now - age) for i, (n, age) in enumerate(
        [(20_000, 4000), (500, 3000), (40_000, 2000), (100, 1000)]
    )]  # fmt: skip


def on_disk(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_least_recently_used_stores_go_first_until_the_rest_fit(tmp_path, four):
    sizes = [s for _, s in four]
    assert len(set(sizes)) > 1, sizes  # real files of their own sizes
    limit = sum(sizes[2:])  # the two oldest must go, and going is enough
    gone = trim_stores(folder=tmp_path, limit=limit)
    assert [d.name for d in gone] == ["m-0.duckdb", "m-1.duckdb"]
    assert [d.bytes for d in gone] == sizes[:2] and {d.limit for d in gone} == {limit}
    assert on_disk(tmp_path) == ["m-2.duckdb", "m-3.duckdb"]  # lock files removed with their store
    assert trim_stores(folder=tmp_path, limit=limit) == []  # under the limit: nothing more


def test_the_store_in_use_and_one_a_run_fills_are_never_deleted(tmp_path, four):
    (oldest, _), (second, _), (third, _), (newest, newest_size) = four
    with filling(second):  # a run fills it (the run's own lock, as another process would hold it)
        gone = trim_stores(keep=[oldest], folder=tmp_path, limit=newest_size)
    assert [d.name for d in gone] == ["m-2.duckdb", "m-3.duckdb"]  # over the limit still: kept ones stay
    assert oldest.is_file() and second.is_file() and not third.exists() and not newest.exists()


def test_a_used_store_moves_to_the_back_of_the_line(tmp_path, four):
    from attention_atlas.models.corpus.store import used_now

    (oldest, _), *_ = four
    used_now(oldest)
    gone = trim_stores(folder=tmp_path, limit=sum(s for _, s in four) - 1)
    assert [d.name for d in gone] == ["m-1.duckdb"]
    assert oldest.is_file()


def test_the_limit_comes_from_its_own_setting(monkeypatch):
    monkeypatch.delenv("ATLAS_CORPUS_STORES_MAX_MB", raising=False)
    monkeypatch.setenv("ATLAS_CORPUS_MAX_MB", "1")  # the uploaded file's cap: another limit
    assert stores_max_bytes() == STORES_MAX_MB * 2**20
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", " 0.5 ")
    assert stores_max_bytes() == 2**19


@pytest.mark.parametrize("value", ["abc", "-5", "0", "nan", "inf", "1e400"])
def test_a_limit_that_is_not_a_size_is_one_line(monkeypatch, tmp_path, value):
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", value)
    with pytest.raises(StoreError) as caught:
        trim_stores(folder=tmp_path)
    assert (
        str(caught.value)
        == f"ATLAS_CORPUS_STORES_MAX_MB must be a number of megabytes above 0, not {value!r}"
    )
    assert one_line(caught.value)


def test_a_run_trims_before_it_starts_and_after_it_writes(tiny_hf_folders, one_thread, tmp_path, monkeypatch):
    """Before the run the oldest store goes (the two old ones exceed the limit); after it, its own new
    store is what exceeds it, and the other old one goes: never the new store."""
    import torch

    from attention_atlas.models.adapters.hf import HFAdapter

    now = time.time()
    (a, _), (b, b_size) = (
        make_store(tmp_path, "old-a", 20_000, now - 60),
        make_store(tmp_path, "old-b", 100, now - 30),
    )
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", str((b_size + 1000) / 2**20))
    adapter = HFAdapter("tiny-encoder", tiny_hf_folders["encoder"], torch.device("cpu"))
    corpus = Corpus("t", ["The cat sat on the mat.", "A dog.", "Rain fell over the town."], 0)
    new = path_for("tiny-encoder", corpus, _options(), tmp_path)
    said = []

    def dropped(gone) -> None:
        said.append(([d.name for d in gone], new.is_file()))

    with run_corpus(
        "tiny-encoder", corpus, _options(), adapter=adapter, folder=tmp_path, dropped=dropped
    ) as store:
        assert store.complete and store.path == new
    assert said == [(["old-a.duckdb"], False), (["old-b.duckdb"], True)]
    assert (
        on_disk(tmp_path) == [new.name, new.with_suffix(".lock").name] and not a.exists() and not b.exists()
    )


def _options():
    from attention_atlas.models.corpus.extract import Options

    return Options()
