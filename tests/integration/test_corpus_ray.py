"""cli.py corpus --ray: a local Ray (2 CPUs) with a pool of actors gives the rows of the local run,
whether the actors run the driver's traced graph (a Hugging Face model on the CPU) or load the model."""

import pytest

from attention_atlas.models.corpus import ray_run
from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.inputs import sample
from attention_atlas.models.corpus.run import run_corpus

pytestmark = pytest.mark.slow  # starting Ray and two actors, twice: ~30-60 s here

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
