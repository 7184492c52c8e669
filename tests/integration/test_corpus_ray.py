"""cli.py corpus --ray: a local Ray (2 CPUs) with a pool of actors gives the rows of the local run."""

import pytest

from models.corpus.extract import Options
from models.corpus.inputs import sample
from models.corpus.run import run_corpus

pytestmark = pytest.mark.slow  # starting Ray and two actors that load minilm: ~30-60 s here

ray = pytest.importorskip("ray")


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_rows_equal_the_local_rows(local_ray, tmp_path):
    corpus = sample("english", 60)
    options = Options(batch_size=16)  # four batches: both actors get work
    with run_corpus("minilm", corpus, options, folder=tmp_path / "local") as local:
        seen = []
        with run_corpus("minilm", corpus, options, folder=tmp_path / "ray", ray_address="auto",
                        progress=seen.append) as scaled:  # fmt: skip
            assert scaled.complete and seen[-1].done == 60
            assert scaled.stats_frame().equals(local.stats_frame())
            order = "SELECT * FROM links ORDER BY text_id, pos, layer, head"
            assert scaled.frame(order).equals(local.frame(order))
            tokens = "SELECT * FROM tokens ORDER BY text_id, pos"
            assert scaled.frame(tokens).equals(local.frame(tokens))
