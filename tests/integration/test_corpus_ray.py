"""cli.py corpus --ray: a local Ray (2 CPUs) with a pool of actors gives the rows of the local run,
whether the actors run the driver's traced graph (a Hugging Face model on the CPU) or load the model."""

import threading
import time

import pytest

from attention_atlas.models.corpus import ray_run
from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.inputs import sample
from attention_atlas.models.corpus.run import run_corpus

# Starting Ray and two actors, twice: ~30-60 s here. One Ray at a time on the machine: these run on the
# browser tier's worker (tests/conftest.py: group_of), beside the browser test that starts one.
pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def same_rows(scaled, local) -> None:
    assert scaled.stats_frame().equals(local.stats_frame())
    order = "SELECT * FROM links ORDER BY text_id, pos, layer, head"
    assert scaled.frame(order).equals(local.frame(order))
    tokens = "SELECT * FROM tokens ORDER BY text_id, pos"
    assert scaled.frame(tokens).equals(local.frame(tokens))
    facts = "SELECT * FROM facts ORDER BY text_id"
    assert scaled.frame(facts).equals(local.frame(facts))


def test_ray_rows_equal_the_local_rows(local_ray, tmp_path, monkeypatch):
    corpus = sample("english", 60)
    options = Options(batch_size=16)  # four batches: both actors get work
    graphs, real = [], ray_run.traced

    def traced(*args):
        graphs.append(real(*args))
        return graphs[-1]

    monkeypatch.setattr(ray_run, "traced", traced)
    with run_corpus("minilm", corpus, options, folder=tmp_path / "local") as local:
        seen = []
        with run_corpus("minilm", corpus, options, folder=tmp_path / "ray", ray_address="auto",
                        progress=seen.append) as scaled:  # fmt: skip
            assert scaled.complete and seen[-1].done == 60
            assert len(graphs) == 1 and graphs[0]  # the actors ran minilm's traced graph
            same_rows(scaled, local)
        monkeypatch.setattr(ray_run, "traced", lambda *a: None)  # as for a model that does not trace
        with run_corpus("minilm", corpus, options, folder=tmp_path / "loaded", ray_address="auto") as loaded:
            assert loaded.complete
            same_rows(loaded, local)


def ray_running() -> bool:
    """Whether a Ray is running on this machine (``auto`` would join it instead of starting one)."""
    from ray._private.services import find_gcs_addresses

    return bool(find_gcs_addresses())


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


@pytest.mark.timeout(900)  # Ray's start and two pools of actors on a busy 2-core machine: 2 to 6 minutes
def test_a_ray_started_by_a_run_thread_outlives_it(tmp_path):
    """``auto`` with no Ray running starts one; the Corpus page's runs are threads (a page run, a
    ``Job``), and a Ray started by one of them used to die with it (its processes have Linux's
    parent-death signal): the next run then waited at 0 texts (issue 27, item 10)."""
    if ray.is_initialized() or ray_running():
        pytest.skip("a Ray is running already: this test needs to start its own")
    corpus, options = sample("english", 40), Options(batch_size=16)
    try:
        in_thread(
            lambda: run_corpus("minilm", corpus, options, folder=tmp_path / "a", ray_address="auto").close(),
            400,
        )
        time.sleep(2)  # the kernel's SIGKILL, if any, has landed
        node = ray._private.worker._global_node
        dead = [
            name for name, infos in node.all_processes.items() for i in infos if i.process.poll() is not None
        ]
        assert not dead, f"Ray's {', '.join(dead)} died with the thread that started them"
        seen = []
        work = lambda: run_corpus(  # noqa: E731
            "minilm", corpus, options, folder=tmp_path / "b", ray_address="auto", progress=seen.append
        ).close()
        in_thread(work, 300)
        assert seen[-1].done == 40
    finally:
        ray.shutdown()
