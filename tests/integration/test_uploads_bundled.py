"""Uploads of real models, the round trips the issue names: the bundled couplet models through
``cli.py export`` (and a bare safetensors file of one), and minilm's folder as a zip."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from attention_atlas import cli
from attention_atlas.models.uploads import NeedsAnswers, UploadCache, load_bytes, load_path
from attention_atlas.paths import WEIGHTS
from tests.support import CPU, LOWER, UPPER, SystemCall, cross, torch_bytes


def test_bare_safetensors_of_a_bundled_model_takes_its_vocabulary_and_a_scorer_by_name():
    from safetensors.torch import save

    from attention_atlas.models.registry import load

    weights = WEIGHTS / "couplet-rnn-dot" / "model.safetensors"
    if not weights.is_file():
        pytest.skip("the bundled couplet-rnn-dot weights are not installed")
    from attention_atlas.models.storage.checkpoint import load_checkpoint

    tensors, _ = load_checkpoint(weights)
    bare = save(tensors)  # no metadata: no format, config or vocabulary
    cache = UploadCache(1 << 30)
    with pytest.raises(NeedsAnswers) as need:
        load_bytes(bare, "dot.safetensors", {"architecture": "couplet-rnn"}, device=CPU, cache=cache)
    missing = {m.field: m.choices for m in need.value.missing}
    assert missing["attention"][0] == "scaled_dot" and "couplet-rnn-dot" in missing["vocabulary"]
    assert missing["key_activation"] == ("tanh", "linear")
    keys = json.loads((weights.parent / "config.json").read_text())["config"]["key_activation"]
    answers = {
        "architecture": "couplet-rnn",
        "attention": "scaled_dot",
        "key_activation": keys,
        "vocabulary": "couplet-rnn-dot",
    }
    up = load_bytes(bare, "dot.safetensors", answers, device=CPU, cache=cache)
    assert up.summary.source == "bare state dict (safetensors)"
    mine, theirs = cross(up), load("couplet-rnn-dot", CPU).run(UPPER, target=LOWER).records["cross"]
    np.testing.assert_array_equal(mine.weights, theirs.weights)


@pytest.mark.parametrize("model_id", ["couplet-rnn-additive", "couplet-transformer"])
def test_exported_bundled_model_loads_back_with_identical_attention(model_id, tmp_path, capsys):
    from attention_atlas.models.registry import load

    if not (WEIGHTS / model_id / "model.safetensors").is_file():
        pytest.skip(f"the bundled {model_id} weights are not installed")
    out = tmp_path / "exported.safetensors"
    assert cli.main(["export", "--model", model_id, "--out", str(out)]) == 0
    up = load_path(out, device=CPU)
    bundled = load(model_id, CPU)
    for target in (None, LOWER):
        mine, theirs = up.adapter.run(UPPER, target=target), bundled.run(UPPER, target=target)
        assert mine.output == theirs.output and mine.records.keys() == theirs.records.keys()
        for kind, rec in mine.records.items():
            np.testing.assert_array_equal(rec.weights, theirs.records[kind].weights)
    # and through the command line's contract, as --model gives it
    capsys.readouterr()
    assert cli.main(["extract", "--checkpoint", str(out), "--text", UPPER, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    theirs = bundled.run(UPPER)
    assert obj["model"] == up.summary.model_id and obj["output"] == theirs.output
    assert [r["kind"] for r in obj["records"]] == list(theirs.records)
    for rec in obj["records"]:
        np.testing.assert_array_equal(
            np.array(rec["weights"], np.float32), theirs.records[rec["kind"]].weights
        )
    fig = tmp_path / "fig.json"
    args = ["figure", "--checkpoint", str(out), "--text", UPPER, "--view", "head", "--out", str(fig)]
    assert cli.main(args) == 0
    assert json.loads(fig.read_text())["data"][0]["type"] == "heatmap"


def minilm_zip(extra: dict[str, bytes] | None = None) -> bytes:
    from attention_atlas.models.adapters.minilm import model_folder

    folder = model_folder()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, f"all-MiniLM-L6-v2/{p.relative_to(folder)}")
        for name, data in (extra or {}).items():
            z.writestr(f"all-MiniLM-L6-v2/{name}", data)
    return buf.getvalue()


def test_zipped_minilm_folder_gives_minilm_attention(tmp_path, marker):
    from attention_atlas.models.registry import load

    code = f"open({str(marker)!r}, 'w').write('ran')\n".encode()
    data = minilm_zip({"modeling_evil.py": code, "pytorch_model.bin": torch_bytes({"x": SystemCall(marker)})})
    up = load_bytes(data, "minilm.zip", device=CPU, cache=UploadCache(1 << 30))
    s = up.summary
    assert (s.architecture, s.layers, s.heads, s.vocab_size) == ("hf-encoder", "6", 12, 30522)
    assert any("modeling_evil.py" in n and "pytorch_model.bin" in n for n in s.notices)
    text = "The cat sat on the mat because it was tired."
    mine, theirs = up.adapter.run(text).records["self"], load("minilm", CPU).run(text).records["self"]
    assert mine.query_tokens == theirs.query_tokens
    np.testing.assert_allclose(mine.weights, theirs.weights, atol=1e-6)
