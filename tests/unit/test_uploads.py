"""Uploaded checkpoints: every hostile file refused without running anything, every honest one loads.

Malicious payloads try to create a marker file; each test checks the marker does not exist.
Models are tiny (built from configs); the round trips with real models are in
tests/integration/test_uploads_bundled.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import stat
import struct
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_atlas import cli
from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.uploads import (
    Limits,
    NeedsAnswers,
    UploadCache,
    UploadError,
    load_bytes,
    parse_vocab,
)
from attention_atlas.models.uploads.safety import scan_pickle, sniff
from tests.support import (
    CPU,
    LOWER,
    UPPER,
    SystemCall,
    cross,
    folder_zip,
    qk_weights,
    tiny_rnn_couplet,
    tiny_vocab,
    torch_bytes,
    zip_bytes,
)

# -- payloads: each would create ``marker`` if anything ran it (``SystemCall``: tests/support.py) -----


class ExecCall:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


def refused(data: bytes, name: str, match: str, **kw) -> UploadError:
    with pytest.raises(UploadError, match=match) as info:
        load_bytes(data, name, device=CPU, cache=UploadCache(1 << 30), **kw)
    message = str(info.value)
    assert "\n" not in message and name in message, message
    return info.value


def safetensors_bytes(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


@pytest.fixture(scope="module")
def rnn(tiny_rnn, tiny_rnn_checkpoint):
    """(bundle bytes, couplet model) of the tiny couplet RNN, as ``cli.py export`` writes one."""
    return tiny_rnn_checkpoint.read_bytes(), tiny_rnn


@pytest.fixture(scope="module")
def transformer(tiny_transformer, tiny_transformer_checkpoint):
    return tiny_transformer_checkpoint.read_bytes(), tiny_transformer


# -- refused, and nothing ran ---------------------------------------------------------------------


def test_torch_save_whose_pickle_calls_os_system_is_refused(marker):
    data = torch_bytes({"w": torch.zeros(2), "x": SystemCall(marker)})
    assert sniff(data) == "zip"
    refused(data, "evil.pt", r"posix\.system|os\.system")


def test_raw_pickle_is_refused(marker):
    refused(pickle.dumps(SystemCall(marker)), "evil.pkl", r"posix\.system|os\.system")
    refused(pickle.dumps({"w": [1.0, 2.0]}), "plain.pkl", "bare pickle")


def test_exec_payload_through_stack_global_is_refused(marker):
    data = torch_bytes({"w": torch.zeros(2), "x": ExecCall(marker)}, pickle_protocol=4)
    refused(data, "exec.pth", r"builtins\.exec")
    with pytest.raises(UploadError, match=r"builtins\.exec"):  # the scanner follows STACK_GLOBAL's names
        scan_pickle(pickle.dumps(ExecCall(marker), protocol=4), "exec.pkl")


def test_torchscript_and_a_smuggled_second_pickle_are_refused(marker):
    scripted = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), scripted)
    refused(scripted.getvalue(), "scripted.pt", "TorchScript")
    honest = zipfile.ZipFile(io.BytesIO(torch_bytes({"w": torch.zeros(2)})))
    root = honest.namelist()[0].split("/")[0]
    smuggled = {i.filename: honest.read(i) for i in honest.infolist()}
    smuggled[f"{root}/extra.pkl"] = pickle.dumps(SystemCall(marker))
    refused(zip_bytes(smuggled), "smuggled.pt", r"posix\.system|os\.system")
    two_roots = {"other/version": b"3", **{k: v for k, v in smuggled.items() if not k.endswith("extra.pkl")}}
    refused(zip_bytes(two_roots), "roots.pt", "one record folder")


def test_zip_with_parent_absolute_or_link_members_is_refused(tmp_path):
    refused(zip_bytes({"../evil.txt": b"x", "config.json": b"{}"}), "climb.zip", r"'\.\.'")
    refused(zip_bytes({"model/../../evil.txt": b"x"}), "climb2.zip", r"'\.\.'")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("/etc/evil"), b"x")  # zipfile keeps the leading slash in the name
    refused(buf.getvalue(), "abs.zip", "absolute path")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        link = zipfile.ZipInfo("model/config.json")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/passwd")
    refused(buf.getvalue(), "link.zip", "symbolic link")
    assert not (tmp_path / "evil.txt").exists()


def test_zip_bomb_is_refused_before_inflating():
    # 64 MB of zeros deflate to ~64 kB: over a 16 MB inflated cap, refused from the declared size.
    bomb = zip_bytes(
        {"model/config.json": b"{}", "model/model.safetensors": bytes(64 << 20)}, zipfile.ZIP_DEFLATED
    )
    assert len(bomb) < 200_000
    refused(bomb, "bomb.zip", "zip bomb", limits=Limits(max_inflated=16 << 20))
    # The default cap (1 GB) against a member whose header claims 3 GB: nothing is inflated.
    small = zip_bytes(
        {"model/config.json": b"{}", "model/model.safetensors": bytes(1000)}, zipfile.ZIP_DEFLATED
    )
    patched = bytearray(small)
    cd = patched.rfind(b"PK\x01\x02")  # the last central-directory entry: model.safetensors
    patched[cd + 24 : cd + 28] = struct.pack("<I", 3_000_000_000)  # its uncompressed size
    refused(bytes(patched), "liar.zip", "zip bomb")
    many = zip_bytes({f"f{i}.txt": b"" for i in range(300)})
    refused(many, "many.zip", "300 members")


def test_truncated_safetensors_and_lying_header_are_refused(rnn):
    data, _ = rnn
    refused(data[: len(data) - 100], "cut.safetensors", "truncated")
    refused(data[:20], "stub.safetensors", "truncated")
    lying = safetensors_header_lies()
    refused(lying, "lies.safetensors", r"declared F32 \[3, 4\] \(48 bytes\) but its data is 40 bytes")
    gap = safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, bytes(16))
    refused(gap, "gap.safetensors", "gap")


def safetensors_header_lies() -> bytes:
    return safetensors_bytes({"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 40]}}, bytes(40))


def test_empty_text_and_unknown_files_are_refused():
    refused(b"", "empty.pt", "empty")
    refused(b"hello, I am not a model\nreally\n", "notes.pt", "text file")
    refused(bytes(range(256)) * 4, "noise.pth", "not a checkpoint")


def test_state_dict_of_the_wrong_architecture_is_refused(rnn, transformer):
    _, rnn_cm = rnn
    _, tf_cm = transformer
    rnn_meta = Seq2SeqBundle(rnn_cm.model, rnn_cm.vocab, rnn_cm.vocab, "couplet", "char").meta()
    # Transformer tensors under an RNN's config and vocabulary.
    wrong = torch_bytes({"state_dict": tf_cm.model.state_dict(), **rnn_meta})
    refused(wrong, "wrong.pt", "do not fit a couplet RNN")
    # A bare Transformer state dict said to be an RNN.
    bare = torch_bytes(tf_cm.model.state_dict())
    refused(bare, "bare.pt", "not a couplet RNN", answers={"architecture": "couplet-rnn"})
    # The RNN's own tensors under a config with another hidden size.
    meta = dict(rnn_meta, config={**rnn_meta["config"], "hidden_size": 32})
    refused(
        torch_bytes({"state_dict": rnn_cm.model.state_dict(), **meta}),
        "resized.pt",
        r"tensor 'encoder\.rnn\.weight_ih_l0' is \[64, 12\]; the couplet RNN config needs \[128, 12\]",
    )


def test_config_values_outside_sane_ranges_are_refused(rnn):
    _, cm = rnn
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    for key, value, match in [
        ("hidden_size", 10**9, "outside the sane range"),
        ("num_layers", 0, "outside the sane range"),
        ("rnn", "transformer-xl", "accepted: lstm, gru"),
        ("attention", "__import__('os')", "accepted"),
    ]:
        bad = dict(meta, config={**meta["config"], key: value})
        refused(torch_bytes({"state_dict": cm.model.state_dict(), **bad}), "cfg.pt", match)


def test_size_cap_is_enforced_on_the_bytes_and_configurable(rnn, monkeypatch):
    data, _ = rnn
    refused(data, "big.safetensors", "limited to", limits=Limits(max_bytes=len(data) - 1))
    monkeypatch.setenv("ATLAS_UPLOAD_MAX_MB", "0.01")
    assert Limits.from_env().max_bytes == int(0.01 * 2**20) < len(data)
    refused(data, "big.safetensors", "ATLAS_UPLOAD_MAX_MB")


def test_cli_prints_one_line_for_a_refused_file(tmp_path, marker, capsys):
    path = tmp_path / "evil.pt"
    path.write_bytes(torch_bytes({"x": SystemCall(marker)}))
    assert cli.main(["extract", "--checkpoint", str(path), "--text", UPPER, "--json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: evil.pt") and len(err.strip().splitlines()) == 1 and "system" in err


# -- honest files load ------------------------------------------------------------------------------


def test_bundle_round_trip_gives_identical_attention_and_a_summary(rnn):
    data, cm = rnn
    up = load_bytes(data, "tiny.safetensors", device=CPU, cache=UploadCache(1 << 30))
    s = up.summary
    assert (s.architecture, s.layers, s.heads, s.view) == ("couplet-rnn", "1", 1, "alignment")
    assert s.sha256 == hashlib.sha256(data).hexdigest() and s.model_id == f"upload:{s.sha256[:12]}"
    assert s.parameters == cm.model.n_parameters() and s.vocab_size == len(cm.vocab)
    assert s.compare[0] == "couplet-rnn-additive" and not s.nonfinite
    rec = cross(up)
    mine = cm.force([list(UPPER)], [list(LOWER)])[0].weights.numpy()
    np.testing.assert_array_equal(rec.head(), mine)
    assert rec.model_id == s.model_id and rec.meta["checkpoint_sha256"] == s.sha256


def test_torch_state_dict_with_config_loads_like_the_bundle(rnn):
    data, cm = rnn
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    pt = torch_bytes({"state_dict": cm.model.state_dict(), **meta})  # shared table saved twice: deduplicated
    up = load_bytes(pt, "mine.pt", device=CPU, cache=UploadCache(1 << 30))
    assert up.summary.source == "PyTorch state dict + config"
    ref = load_bytes(data, "tiny.safetensors", device=CPU, cache=UploadCache(1 << 30))
    np.testing.assert_array_equal(cross(up).weights, cross(ref).weights)


def test_bare_state_dict_asks_for_what_shapes_cannot_tell(rnn, transformer):
    _, cm = rnn
    bare = torch_bytes({f"module.{k}": v for k, v in cm.model.state_dict().items()})  # DataParallel names
    cache = UploadCache(1 << 30)
    with pytest.raises(NeedsAnswers) as need:
        load_bytes(bare, "bare.pt", device=CPU, cache=cache)
    assert [m.field for m in need.value.missing] == ["architecture"]
    with pytest.raises(NeedsAnswers) as need:
        load_bytes(bare, "bare.pt", {"architecture": "couplet-rnn"}, device=CPU, cache=cache)
    assert [m.field for m in need.value.missing] == ["key_activation", "vocabulary"]
    assert need.value.inferred["hidden_size"] == 16 and need.value.inferred["attention"] == "additive"
    answers = {"architecture": "couplet-rnn", "key_activation": "tanh", "vocabulary": tiny_vocab().tokens}
    up = load_bytes(bare, "bare.pt", answers, device=CPU, cache=cache)
    np.testing.assert_array_equal(cross(up).head(), cm.force([list(UPPER)], [list(LOWER)])[0].weights.numpy())

    tf_data, tf_cm = transformer
    bare_tf = torch_bytes(tf_cm.model.state_dict())
    with pytest.raises(NeedsAnswers) as need:
        load_bytes(bare_tf, "tf.pt", {"architecture": "couplet-transformer"}, device=CPU, cache=cache)
    missing = {m.field: m for m in need.value.missing}
    assert set(missing) == {"num_heads", "vocabulary"} and 4 in missing["num_heads"].choices
    assert (need.value.inferred["encoder_layers"], need.value.inferred["ffn_size"]) == (3, 32)
    answers = {"architecture": "couplet-transformer", "num_heads": 4, "vocabulary": tiny_vocab().tokens}
    up = load_bytes(bare_tf, "tf.pt", answers, device=CPU, cache=cache)
    ref = load_bytes(tf_data, "tf.safetensors", device=CPU, cache=cache)
    np.testing.assert_array_equal(cross(up).weights, cross(ref).weights)


def test_transformer_bundle_gives_every_kind_and_layers_by_heads(transformer):
    data, _ = transformer
    up = load_bytes(data, "tf.safetensors", device=CPU, cache=UploadCache(1 << 30))
    s = up.summary
    assert (s.architecture, s.layers, s.heads, s.view) == ("couplet-transformer", "3 + 3", 4, "heads")
    records = up.adapter.run(UPPER).records
    assert set(records) == {"encoder_self", "decoder_self", "cross"}
    assert records["cross"].weights.shape == (3, 4, 7, 7)


def test_nan_weights_load_but_are_flagged(rnn):
    _, cm = rnn
    state = {k: v.clone() for k, v in cm.model.state_dict().items()}
    state["decoder.out.bias"][3] = float("nan")
    state["decoder.out.bias"][4] = float("inf")
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    up = load_bytes(
        torch_bytes({"state_dict": state, **meta}), "nan.pt", device=CPU, cache=UploadCache(1 << 30)
    )
    assert up.summary.nonfinite == ("decoder.out.bias",)
    assert np.isfinite(cross(up).weights).all()  # the output layer does not feed the attention


def test_same_file_twice_loads_once_and_the_cache_evicts_least_recently_used(rnn, tmp_path):
    cache = UploadCache(1 << 30)
    a = load_bytes(rnn[0], "a.safetensors", device=CPU, cache=cache)
    again = load_bytes(rnn[0], "renamed.safetensors", device=CPU, cache=cache)
    assert again.adapter is a.adapter and cache.loads == 1  # one model, loaded once
    assert (a.summary.file_name, again.summary.file_name) == ("a.safetensors", "renamed.safetensors")
    assert replace(again.summary, file_name="a.safetensors") == a.summary  # the rest is the same

    def dot_bundle(seed: int) -> bytes:
        cm = tiny_rnn_couplet("scaled_dot", seed)
        bundle = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char")
        return bundle.save(tmp_path / f"dot{seed}.safetensors").read_bytes()

    b_data, c_data = dot_bundle(0), dot_bundle(1)
    b = load_bytes(b_data, "b", device=CPU, cache=UploadCache(1 << 30))
    lru = UploadCache(a.nbytes + b.nbytes)  # room for two
    for data in (rnn[0], b_data, rnn[0], c_data):  # a is used after b, so b goes when c comes
        load_bytes(data, "x", device=CPU, cache=lru)
    assert (lru.loads, len(lru)) == (3, 2) and lru.total <= lru.max_bytes
    load_bytes(rnn[0], "x", device=CPU, cache=lru)
    assert lru.loads == 3  # a stayed
    load_bytes(b_data, "x", device=CPU, cache=lru)
    assert lru.loads == 4  # b was evicted, so it loaded again
    tiny = UploadCache(1)  # smaller than any model: returned, never kept
    load_bytes(rnn[0], "x", device=CPU, cache=tiny)
    assert (tiny.loads, len(tiny)) == (1, 0)


def test_the_same_bytes_under_another_name_show_that_name_and_nothing_of_the_first(tiny_rnn):
    """The cache, shared by every session of a server, carries no file name (nor anything else a
    caller gave) from one caller to the next."""
    cm = tiny_rnn
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    data = torch_bytes({"state_dict": cm.model.state_dict(), **meta})  # rebuilt into a bundle on load
    cache = UploadCache(1 << 30)
    first = load_bytes(data, "couplet_of_alice.pt", device=CPU, cache=cache)
    second = load_bytes(data, "my_run_v2.pt", device=CPU, cache=cache)
    assert cache.loads == 1 and second.adapter is first.adapter  # the model is loaded once
    assert (first.summary.file_name, second.summary.file_name) == ("couplet_of_alice.pt", "my_run_v2.pt")
    shared = [repr(second.summary), repr(second.adapter.bundle.info), repr(second.adapter.bundle.meta())]
    assert not any("alice" in text for text in shared), shared
    assert "alice" not in repr(list(cache._items.values()))  # what the cache keeps names no one


def test_vocab_files_in_each_written_shape(tmp_path):
    tokens = tiny_vocab().tokens
    for raw in (
        json.dumps({"src": tokens, "tgt": None}),
        tiny_vocab().to_json(),
        json.dumps(tokens),
    ):
        assert parse_vocab(raw.encode(), "vocab.json") == {"src": tokens, "tgt": None}
    pair = json.dumps({"src": tokens, "tgt": tokens[:5]}).encode()
    assert parse_vocab(pair, "vocab.json") == {"src": tokens, "tgt": tokens[:5]}
    with pytest.raises(UploadError, match=r"vocab\.json"):
        parse_vocab(b'{"src": [1, 2]}', "vocab.json")


@pytest.fixture(scope="module")
def hf_tiny(tiny_hf_folders):
    """(folder, zip of it) of the tiny random BERT / GPT-2 / BART models, by family."""
    return {family: (folder, folder_zip(folder, family)) for family, folder in tiny_hf_folders.items()}


def test_hf_encoder_causal_and_encoder_decoder_zips_load(hf_tiny):
    kinds = {"encoder": {"self"}, "causal": {"self"}, "seq2seq": {"encoder_self", "decoder_self", "cross"}}
    layers = {"encoder": "2", "causal": "2", "seq2seq": "2 + 2"}
    for family, (_, data) in hf_tiny.items():
        up = load_bytes(data, f"{family}.zip", device=CPU, cache=UploadCache(1 << 30))
        s = up.summary
        assert (s.architecture, s.layers, s.heads, s.seq2seq) == (
            f"hf-{family}",
            layers[family],
            2,
            family == "seq2seq",
        )
        result = up.adapter.run("a short sentence", target="une phrase" if family == "seq2seq" else None)
        assert set(result.records) == kinds[family]
        assert all(r.model_id == s.model_id for r in result.records.values())


def test_an_uploaded_encoder_or_causal_model_gives_queries_and_keys_that_make_its_weights(hf_tiny):
    """Long-context capture reaches uploads: an uploaded BERT or GPT-2 hands over each head's queries
    and keys, whose softmax (causal mask for GPT-2) is the head it returns; a BART is refused in a line."""
    text = "a short sentence about rivers"
    for family in ("encoder", "causal"):
        adapter = load_bytes(hf_tiny[family][1], f"{family}.zip", device=CPU, cache=UploadCache(1 << 30)).adapter
        record = adapter.run(text).records["self"]
        for layer, head in [(0, 0), (1, 1)]:
            q, k, tokens = adapter.queries_keys(text, layer, head)
            assert tokens == list(record.query_tokens)
            weights = qk_weights(q, k, causal=family == "causal")
            np.testing.assert_allclose(weights, record.head(layer, head), atol=1e-5)
    bart = load_bytes(hf_tiny["seq2seq"][1], "seq2seq.zip", device=CPU, cache=UploadCache(1 << 30)).adapter
    with pytest.raises(ValueError, match="an encoder–decoder"):
        bart.queries_keys(text, 0, 0)


def test_an_hf_zip_whose_tokenizer_is_not_its_model_types_says_so_in_one_line(hf_tiny):
    """The tiny GPT-2 ships BERT's WordPiece tokenizer (tests/support.hf_folder): said, in one line;
    BERT's own, slow or fast, says nothing."""

    def tokenizer_notes(data: bytes, name: str) -> list[str]:
        notices = load_bytes(data, name, device=CPU, cache=UploadCache(1 << 30)).summary.notices
        return [n for n in notices if "tokenizer" in n]

    gpt2 = tokenizer_notes(hf_tiny["causal"][1], "causal.zip")
    assert len(gpt2) == 1 and "\n" not in gpt2[0]
    assert "BertTokenizer" in gpt2[0] and "GPT2Tokenizer" in gpt2[0] and "gpt2" in gpt2[0]
    assert tokenizer_notes(hf_tiny["encoder"][1], "encoder.zip") == []
    folder, _ = hf_tiny["encoder"]
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    fast = dict(json.loads(files["tokenizer_config.json"]), tokenizer_class="BertTokenizerFast")
    assert (
        tokenizer_notes(zip_bytes({**files, "tokenizer_config.json": json.dumps(fast).encode()}), "f.zip")
        == []
    )


def test_hf_zip_with_custom_code_or_wrong_weights_is_refused(hf_tiny, marker):
    folder, _ = hf_tiny["encoder"]
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    config = json.loads(files["config.json"])
    custom = dict(config, model_type="evil_model", auto_map={"AutoModel": "modeling_evil.EvilModel"})
    code = f"open({str(marker)!r}, 'w').write('ran')\n".encode()
    refused(
        zip_bytes({**files, "config.json": json.dumps(custom).encode(), "modeling_evil.py": code}),
        "custom.zip",
        "not one built into transformers",
    )
    deeper = dict(config, num_hidden_layers=4)  # the weights hold 2 layers
    refused(zip_bytes({**files, "config.json": json.dumps(deeper).encode()}), "deeper.zip", "missing")
    wider = dict(config, intermediate_size=24)
    refused(zip_bytes({**files, "config.json": json.dumps(wider).encode()}), "wider.zip", "needs")
    huge = dict(config, num_hidden_layers=100_000)
    refused(zip_bytes({**files, "config.json": json.dumps(huge).encode()}), "huge.zip", "sane range")
    s2s_folder, _ = hf_tiny["seq2seq"]
    s2s = {p.name: p.read_bytes() for p in s2s_folder.iterdir()}
    shallow = dict(json.loads(s2s["config.json"]), decoder_layers=1)
    refused(zip_bytes({**s2s, "config.json": json.dumps(shallow).encode()}), "shallow.zip", "equal depths")
    no_weights = {k: v for k, v in files.items() if not k.endswith(".safetensors")}
    refused(zip_bytes(no_weights), "bin.zip", "no .safetensors")


def test_hf_weights_file_alone_asks_for_an_architecture_and_points_to_the_zip(hf_tiny):
    folder, _ = hf_tiny["encoder"]
    data = (folder / "model.safetensors").read_bytes()  # Hugging Face's metadata: {"format": "pt"}
    with pytest.raises(NeedsAnswers, match="architecture") as need:
        load_bytes(data, "model.safetensors", device=CPU, cache=UploadCache(1 << 30))
    assert ".zip of its folder" in need.value.missing[0].why
    refused(data, "model.safetensors", "not a couplet RNN", answers={"architecture": "couplet-rnn"})
