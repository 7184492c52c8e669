"""Test-wide settings, and the fixtures that build each tiny model once (builders: tests/support.py)."""

import os

import pytest
import torch
from hypothesis import settings

from attention_atlas.paths import WEIGHTS
from tests import support

# Every hypothesis stream is a fixed one: the same inputs on every run, machine and worker (a failure
# is reproduced by running the test again), and nothing written to a .hypothesis folder.
settings.register_profile("atlas", derandomize=True, database=None)
settings.load_profile("atlas")

# The suite shares two cores with the streamlit servers and chromium it starts; one torch
# thread per process avoids oversubscription, which slowed model runs up to eightfold here.
torch.set_num_threads(int(os.environ.get("ATLAS_TEST_THREADS", "1")))
os.environ.setdefault("ATLAS_THREADS", os.environ.get("ATLAS_TEST_THREADS", "1"))


def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs two pytest-xdist workers; each takes whole groups (``group_of``), so that what
    a group shares is made once. (pytest-xdist's own ``loadgroup`` marks do nothing under pytest 9,
    which no longer reads an item's ``_nodeid``: the groups are made here, from the node ids.)"""
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return Groups(config, log)


# The browser tier shares one app server and one chromium (tests/browser/conftest.py); the Ray tests
# start a Ray of their own, and two at once on one machine took each other's for "auto".
ONE_WORKER = {"tests/browser/": "browser", "tests/integration/test_corpus_ray.py": "browser"}


def group_of(nodeid: str) -> str:
    """The group a test runs in: the browser tier (and Ray's tests) together, scheduled first since it
    is the longest; any other module whole, so its module-scoped models are built once."""
    module = nodeid.split("::")[0]
    return next((group for prefix, group in ONE_WORKER.items() if module.startswith(prefix)), module)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one thread is fastest, and it spares a CPU that other jobs share."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def marker(tmp_path):
    """A path that a hostile payload would create if anything ran it; checked after the test."""
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "a payload ran"


# -- tiny models: random weights, deterministic, shared read-only -----------------------------------


@pytest.fixture(scope="session")
def tiny_rnn():
    """The tiny couplet RNN (additive scoring, seed 0) as a ``CoupletModel``."""
    return support.tiny_rnn_couplet("additive")


@pytest.fixture(scope="session")
def tiny_rnn_checkpoint(tiny_rnn, tmp_path_factory):
    """``tiny_rnn`` saved as ``cli.py export`` writes a checkpoint."""
    return support.save_rnn_checkpoint(tiny_rnn, tmp_path_factory.mktemp("rnn") / "tiny.safetensors")


@pytest.fixture(scope="session")
def tiny_transformer():
    """The tiny couplet Transformer (3 + 3 layers × 4 heads, seed 3) as a ``CoupletTransformer``."""
    return support.tiny_transformer_couplet(seed=3)


@pytest.fixture(scope="session")
def tiny_transformer_checkpoint(tiny_transformer, tmp_path_factory):
    """``tiny_transformer`` saved as a bundle whose first layer to show is layer 1."""
    path = tmp_path_factory.mktemp("tf") / "tiny.safetensors"
    return support.save_transformer_checkpoint(tiny_transformer, path)


@pytest.fixture(scope="session")
def tiny_hf_folders(tmp_path_factory):
    """Folders of tiny random BERT / GPT-2 / BART models with minilm's tokenizer, by family."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return {
        family: support.hf_folder(model, tmp_path_factory.mktemp(family))
        for family, model in support.tiny_hf_models().items()
    }


# -- a bundled model that two layers use ------------------------------------------------------------


@pytest.fixture(scope="session")
def bundled_couplet_transformer():
    if not (WEIGHTS / "couplet-transformer" / "model.safetensors").is_file():
        pytest.skip("no bundled couplet-transformer weights")
    from attention_atlas.models.registry import load

    return load("couplet-transformer", "cpu")
