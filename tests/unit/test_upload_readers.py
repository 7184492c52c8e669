"""One reader per upload format, and each family registering its own upload architecture.

The behaviour of every format (accepted, refused, with which message) is in
``test_uploads.py``; these tests pin what the restructuring promised: each format is
claimed by exactly one reader, the zipped Attention Atlas folder loads, the families'
architectures come from their adapter modules and are there before any upload is read,
whichever module a process imports first.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.torch import save

from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.uploads import (
    ARCHITECTURES,
    HF_FAMILIES,
    Limits,
    UploadCache,
    UploadError,
    load_bytes,
    register_architecture,
)
from attention_atlas.models.uploads.incoming import Incoming
from attention_atlas.models.uploads.readers import READERS
from tests.support import cross, folder_zip, torch_bytes, zip_bytes

CPU = torch.device("cpu")


def claimed_by(data: bytes) -> list[str]:
    f = Incoming("x", data, Limits())
    return [type(r).__name__ for r in READERS if r.claims(f)]


@pytest.fixture(scope="module")
def atlas_folder(tiny_rnn, tmp_path_factory):
    folder = tmp_path_factory.mktemp("atlas") / "mine"
    Seq2SeqBundle(tiny_rnn.model, tiny_rnn.vocab, tiny_rnn.vocab, "couplet", "char").save_dir(folder)
    return folder


def test_each_format_is_claimed_by_exactly_one_reader(
    tiny_rnn, tiny_rnn_checkpoint, atlas_folder, tiny_hf_folders
):
    state = tiny_rnn.model.state_dict()
    formats = {
        "AtlasBundle": tiny_rnn_checkpoint.read_bytes(),
        "BareSafetensors": save(
            {k: v.contiguous() for k, v in state.items() if k != "decoder.embedding.weight"}
        ),
        "TorchSave": torch_bytes({"state_dict": state}),
        "AtlasFolderZip": folder_zip(atlas_folder, "mine"),
        "HFFolderZip": folder_zip(tiny_hf_folders["encoder"], "encoder"),
        "BarePickle": pickle.dumps({"w": [1.0]}),
    }
    for reader, data in formats.items():
        assert claimed_by(data) == [reader], reader
    assert claimed_by(b"just some notes\n") == []  # refused as text by read(), no reader wants it


def test_zipped_atlas_folder_loads_like_its_bundle(tiny_rnn_checkpoint, atlas_folder):
    up = load_bytes(folder_zip(atlas_folder, "mine"), "mine.zip", device=CPU, cache=UploadCache(1 << 30))
    ref = load_bytes(
        tiny_rnn_checkpoint.read_bytes(), "tiny.safetensors", device=CPU, cache=UploadCache(1 << 30)
    )
    assert (up.summary.source, up.summary.architecture) == (
        "Attention Atlas bundle folder (zip)",
        "couplet-rnn",
    )
    np.testing.assert_array_equal(cross(up).weights, cross(ref).weights)
    assert not any("config.json" in n or "vocab.json" in n for n in up.summary.notices)  # data files, kept


def test_atlas_folder_without_its_weights_file_is_refused(atlas_folder):
    files = {f"mine/{p.name}": p.read_bytes() for p in atlas_folder.iterdir()}
    files["mine/weights.safetensors"] = files.pop("mine/model.safetensors")
    with pytest.raises(
        UploadError, match=r"^renamed\.zip: an Attention Atlas folder without model\.safetensors$"
    ):
        load_bytes(zip_bytes(files), "renamed.zip", device=CPU, cache=UploadCache(1 << 30))


def test_a_format_or_task_that_is_not_a_string_is_one_refusal_line(tiny_rnn):
    meta = Seq2SeqBundle(tiny_rnn.model, tiny_rnn.vocab, tiny_rnn.vocab, "couplet", "char").meta()
    data = torch_bytes({"state_dict": tiny_rnn.model.state_dict(), **meta, "format": ["attention-atlas"]})
    with pytest.raises(UploadError, match=r"^odd\.pt: no architecture for format \['attention-atlas'\]"):
        load_bytes(data, "odd.pt", device=CPU, cache=UploadCache(1 << 30))


def test_each_family_registers_its_upload_architecture_in_its_adapter_module():
    from attention_atlas.models.adapters.couplet_rnn import CoupletRNNAdapter
    from attention_atlas.models.adapters.couplet_transformer import CoupletTransformerAdapter
    from attention_atlas.models.adapters.hf import HFAdapter
    from attention_atlas.models.adapters.translate_rnn import TranslationAdapter

    adapters = {a.name: a.adapter for a in ARCHITECTURES.values()}
    assert adapters == {
        "couplet-rnn": CoupletRNNAdapter,
        "couplet-transformer": CoupletTransformerAdapter,
        "translation-rnn": TranslationAdapter,
    }
    assert {f.name: f.adapter for f in HF_FAMILIES.values()} == dict.fromkeys(
        ("hf-causal", "hf-encoder", "hf-seq2seq"), HFAdapter
    )
    with pytest.raises(ValueError, match="registered twice"):
        register_architecture(ARCHITECTURES[("attention-atlas/seq2seq-rnn", "couplet")])


FRESH = """
import json, sys
{first}
from attention_atlas.models.uploads import ARCHITECTURES, HF_FAMILIES, load_bytes
up = load_bytes(open(sys.argv[1], "rb").read(), "tiny.safetensors", device="cpu")
print(json.dumps([[a.name for a in ARCHITECTURES.values()], sorted(HF_FAMILIES), up.summary.architecture]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "first",
    ["", "import attention_atlas.models.adapters.translate_rnn", "import attention_atlas.models.adapters.hf"],
)
def test_a_fresh_process_has_every_family_before_reading_whatever_it_imports_first(
    first, tiny_rnn_checkpoint
):
    code = FRESH.format(first=first)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tiny_rnn_checkpoint)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    names, families, arch = json.loads(out.stdout.strip().splitlines()[-1])
    assert names == ["couplet-rnn", "couplet-transformer", "translation-rnn"]  # in order, however discovered
    assert (families, arch) == (["causal", "encoder", "seq2seq"], "couplet-rnn")


def test_importing_the_model_registry_stays_light():
    code = "import sys, attention_atlas.models.registry; bad = {'torch', 'plotly', 'streamlit'} & set(sys.modules); assert not bad, bad"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
