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


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups off the items
def pytest_collection_modifyitems(items):
    """The groups ``make test`` hands to its workers whole (``-n 2 --dist loadgroup``): the tests that
    use the shared app server (tests/browser) on one worker, so one server and one chromium serve
    them all; every other module on one worker, so its module-scoped models are built once."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group_of(item)))


def group_of(item) -> str:
    if "app_url" in item.fixturenames:
        return "app-server"
    return item.nodeid.split("::")[0]


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
