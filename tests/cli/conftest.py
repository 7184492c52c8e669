"""The command-line tier's shared fixture: the tiny GPT-2 uploaded as a zipped folder, built once for
the causal-LM verbs (lens, generate, contributions)."""

import pytest

from tests.support import folder_zip


@pytest.fixture(scope="package")
def gpt2_zip(tiny_hf_folders, tmp_path_factory):
    path = tmp_path_factory.mktemp("causal") / "tiny-gpt2.zip"
    path.write_bytes(folder_zip(tiny_hf_folders["causal"], "tiny-gpt2"))
    return path
