"""cli.py corpus --ray: a local Ray (2 CPUs) with a pool of actors gives the rows of the local run,
whether the actors run the driver's traced graph (a Hugging Face model on the CPU) or load the model;
a Ray that a run's thread started outlives that thread; and a running cluster's own address passes
the check that refuses a stopped one (``ray_run.check``)."""

import threading
import time

import pytest

from attention_atlas.models.corpus import ray_run
from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.inputs import sample
from attention_atlas.models.corpus.run import run_corpus
from tests.support import ray_running

# Starting Ray and two pools of actors: ~60 s here. One Ray at a time on the machine: these run on the
# browser tier's worker (tests/conftest.py: group_of), beside the browser test that starts one.
pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


QUERIES = {
    "links": "SELECT * FROM links ORDER BY text_id, pos, layer, head",
    "tokens": "SELECT * FROM tokens ORDER BY text_id, pos",
    "facts": "SELECT * FROM facts ORDER BY text_id",
}


def rows(store) -> dict:
    """A corpus store's tables, each in one order, and its per-head statistics."""
    return {"stats": store.stats_frame()} | {name: store.frame(sql) for name, sql in QUERIES.items()}


def same_rows(scaled, expected: dict) -> None:
    for name, frame in rows(scaled).items():
        assert frame.equals(expected[name]), name


def in_thread(work, seconds: float) -> None:
    """``work()`` in a thread of its own that ends afterwards, as a page run or a ``Job`` does."""
    failed = []

    def main():
        try:
            work()
        except BaseException as err:
            failed.append(err)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the run did not end within {seconds:.0f} s"
    if failed:
        raise failed[0]


def dead_ray_processes() -> list[str]:
    node = ray._private.worker._global_node
    return [name for name, infos in node.all_processes.items() for i in infos if i.process.poll() is not None]


@pytest.mark.timeout(900)  # Ray's start and two pools of actors on a busy 2-core machine: 2 to 6 minutes
def test_ray_rows_equal_the_local_rows_and_a_ray_started_by_a_run_thread_outlives_it(tmp_path, monkeypatch):
    """``auto`` with no Ray running starts one. The first run, in a thread of its own as the Corpus
    page's runs are (a page run, a ``Job``), has its actors run the driver's traced graph; the second,
    in another thread, has them load the model. Both give the local run's rows. A Ray started by a
    run's thread used to die with it (its processes have Linux's parent-death signal): the next run
    then waited at 0 texts (issue 27, item 10)."""
    if ray.is_initialized() or ray_running():
        pytest.skip("a Ray is running already: this test needs to start its own")
    corpus = sample("english", 60)
    options = Options(batch_size=16)  # four batches: both actors get work
    graphs, real = [], ray_run.traced

    def traced(*args):
        graphs.append(real(*args))
        return graphs[-1]

    def scaled(folder: str, progress=None):
        return run_corpus("minilm", corpus, options, folder=tmp_path / folder, ray_address="auto", progress=progress)

    def traced_run():
        seen = []
        with scaled("ray", seen.append) as store:
            assert store.complete and seen[-1].done == 60
            assert len(graphs) == 1 and graphs[0]  # the actors ran minilm's traced graph
            same_rows(store, expected)

    def loaded_run():  # by the running cluster's address: it passes the check
        gcs = ray.get_runtime_context().gcs_address
        ray_run.check(gcs)
        loaded = run_corpus("minilm", corpus, options, folder=tmp_path / "loaded", ray_address=gcs)
        with loaded as store:
            assert store.complete
            same_rows(store, expected)

    with run_corpus("minilm", corpus, options, folder=tmp_path / "local") as local:
        expected = rows(local)
    monkeypatch.setattr(ray_run, "traced", traced)
    try:
        in_thread(traced_run, 400)
        time.sleep(2)  # the kernel's SIGKILL, if any, has landed
        dead = dead_ray_processes()
        assert not dead, f"Ray's {', '.join(dead)} died with the thread that started them"
        monkeypatch.setattr(ray_run, "traced", lambda *a: None)  # as for a model that does not trace
        in_thread(loaded_run, 300)
    finally:
        ray.shutdown()
