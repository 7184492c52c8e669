"""The Checkpoint inspector under AppTest: empty state and demo, uploads of each kind, refusals.

AppTest's ``file_uploader(key="ckpt_file").set_value((name, bytes, mime))`` stands in for
the browser's upload; ``tests/browser/test_checkpoint_browser.py`` does one real upload.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.uploads import Limits
from attention_atlas.paths import WEIGHTS
from attention_atlas.ui.widgets import plain
from tests.support import (
    PACKAGE,
    SystemCall,
    axis_tokens,
    charts,
    folder_zip,
    page_runner,
    qk_weights,
    tiny_vocab,
    torch_bytes,
    values,
    z_of,
)

PAGE = "app_pages/checkpoint.py"
K = "ckpt_"
BUNDLED = WEIGHTS / "couplet-rnn-additive" / "model.safetensors"
UPPER = "两个黄鹂鸣翠柳"


run = page_runner(PAGE, 120)


def upload(at: AppTest, name: str, data: bytes, key: str = K + "file") -> AppTest:
    at.file_uploader(key=key).set_value((name, data, "application/octet-stream"))
    return run(at)


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture(scope="module")
def rnn_bytes(tiny_rnn_checkpoint) -> bytes:
    return tiny_rnn_checkpoint.read_bytes()


def test_empty_state_explains_and_the_demo_loads_the_exported_bundled_model():
    at = run()
    assert any("`atlas export --model" in i.value for i in at.info)
    # issue 40, item 13: a wheel user has the atlas script, not cli.py
    hints = [m.value for m in (*at.info, *at.markdown)]
    assert any("atlas export --model" in h and "atlas train" in h for h in hints)
    assert not any("cli.py" in h for h in hints)
    assert not at.get("plotly_chart")
    if not BUNDLED.is_file():
        pytest.skip("the bundled couplet-rnn-additive weights are not installed")
    at.button(key=K + "demo").click()
    at = run(at)
    assert metrics(at) == {
        "architecture": "couplet-rnn",
        "parameters": "5,181,808",
        "vocabulary": "6,000",
        "layers × heads": "1 × 1",
    }
    assert hashlib.sha256(BUNDLED.read_bytes()).hexdigest() in at.code[0].value
    heat, mine, theirs = (f["data"][0] for f in charts(at)[:3])
    assert [x.split(" · ")[1] for x in heat["x"]] == list(UPPER)
    assert mine["z"] == theirs["z"]  # the exported file is the bundled model: identical attention
    assert [f["layout"]["title"]["text"] for f in charts(at)[1:3]][1] == "couplet-rnn-additive"


def test_upload_of_a_couplet_rnn_shows_its_alignment_and_summary(rnn_bytes):
    at = upload(run(), "tiny.safetensors", rnn_bytes)
    assert metrics(at)["architecture"] == "couplet-rnn"
    assert metrics(at)["vocabulary"] == f"{len(tiny_vocab()):,}"
    assert hashlib.sha256(rnn_bytes).hexdigest() in at.code[0].value
    heat = charts(at)[0]["data"][0]
    assert heat["type"] == "heatmap" and len(heat["x"]) == len(UPPER)
    at.text_input(key=K + "target").set_value("一行白鹭上青天")
    at = run(at)
    assert [y.split(" · ")[1] for y in charts(at)[0]["data"][0]["y"]] == list("一行白鹭上青天")


def test_upload_of_an_exported_translation_model_matches_the_bundled_one():
    path = WEIGHTS / "translate-gru-additive" / "model.safetensors"
    if not path.is_file():
        pytest.skip("the bundled translate-gru-additive weights are not installed")
    at = upload(run(), "mine.safetensors", path.read_bytes())
    assert metrics(at)["architecture"] == "translation-rnn"
    figs = charts(at)
    mine, theirs = figs[0]["data"][0], figs[-1]["data"][0]
    assert axis_tokens(mine["x"]) == ["i'm", "home", ".", "<eos>"]
    assert theirs["x"] == mine["x"] and theirs["y"] == mine["y"] and theirs["z"] == mine["z"]
    assert figs[-1]["layout"]["title"]["text"] == "translate-gru-additive"
    at.text_input(key=K + "target").set_value("Je suis chez moi.")
    at = run(at)
    assert axis_tokens(charts(at)[0]["data"][0]["y"]) == [
        "je",
        "suis",
        "chez",
        "moi",
        ".",
        "<eos>",
    ]


def test_upload_of_a_couplet_transformer_shows_model_and_head_views(tiny_transformer_checkpoint):
    at = upload(run(), "tf.safetensors", tiny_transformer_checkpoint.read_bytes())
    assert metrics(at)["layers × heads"] == "(3 + 3) × 4"
    assert at.radio(key=K + "kind").value == "cross"
    figs = charts(at)
    assert figs[1]["layout"]["title"]["text"] == "layer 2, head 0"  # the head view, last layer first
    model_view = json.loads(at.get("bidi_component")[0].proto.json)
    assert model_view["heads"]["shape"][:2] == [3, 4]  # a click on a tile redraws the head in the browser
    at.radio(key=K + "kind").set_value("encoder_self")
    next(box for box in at.selectbox if box.label == "head").set_value("average")
    at = run(at)
    assert charts(at)[1]["layout"]["title"]["text"] == "layer 2, heads averaged"
    beside = [i.value for i in at.info] + [s.value for s in at.subheader]
    assert any("Beside" in b for b in beside)


def test_a_refused_upload_is_one_error_and_the_page_keeps_serving(tmp_path, rnn_bytes):
    marker = tmp_path / "pwned"
    at = upload(run(), "evil.pt", torch_bytes({"w": torch.zeros(2), "x": SystemCall(marker)}))
    (error,) = at.error
    assert error.value.startswith("Refused: evil.pt") and "system" in error.value
    assert not marker.exists() and not at.get("plotly_chart")
    for name, data, words in [
        ("empty.pt", b"", "empty"),
        ("notes.pt", b"just some notes\n", "text file"),
    ]:
        at = upload(at, name, data)
        assert words in at.error[0].value
    at = upload(at, "tiny.safetensors", rnn_bytes)  # the same session goes on
    assert not at.error and metrics(at)["architecture"] == "couplet-rnn"


def test_bare_state_dict_asks_for_the_architecture_then_the_vocabulary(tiny_rnn):
    cm = tiny_rnn
    at = upload(run(), "bare.pt", torch_bytes(cm.model.state_dict()))
    assert "missing: architecture" in at.warning[0].value
    assert at.selectbox(key=K + "architecture").value is None and not at.metric
    at.selectbox(key=K + "architecture").set_value("couplet-rnn")
    at = run(at)
    assert any("vocabulary" in w.value and "key_activation" in w.value for w in at.warning)
    assert any("hidden_size = 16" in c.value for c in at.caption)
    assert at.selectbox(key=K + "key_activation").value == "tanh"  # the couplet tutorial's, offered first
    vocab = json.dumps({"src": tiny_vocab().tokens, "tgt": None}).encode()
    at = upload(at, "vocab.json", vocab, key=K + "vocab")
    assert metrics(at)["architecture"] == "couplet-rnn" and charts(at)


def test_nan_weights_are_flagged_on_the_page(tiny_rnn):
    cm = tiny_rnn
    state = {k: v.clone() for k, v in cm.model.state_dict().items()}
    state["decoder.out.bias"][5] = float("nan")
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    at = upload(run(), "nan.pt", torch_bytes({"state_dict": state, **meta}))
    assert any("NaN" in w.value and "decoder.out.bias" in w.value for w in at.warning)


def test_hf_zip_shows_heads_and_minilm_beside(tiny_hf_folders):
    at = upload(run(), "tiny-bert.zip", folder_zip(tiny_hf_folders["encoder"], "tiny-bert"))
    assert metrics(at)["architecture"] == "hf-encoder" and metrics(at)["layers × heads"] == "2 × 2"
    titles = [f["layout"].get("title", {}).get("text", "") for f in charts(at)]
    assert titles[1] == "layer 1, head 0"
    # the upload is named by its file (issue 40 item 23: not "upload:72848b9c7df9"), its id in the hover
    assert titles[2] == "tiny-bert.zip: layer 1, head 0" and titles[3] == "minilm: layer 1, head 0"
    (named,) = [m for m in at.markdown if m.value == "**tiny-bert.zip**"]
    assert named.proto.help.startswith("upload:") and len(named.proto.help) == len("upload:") + 12


def test_local_path_box_only_where_the_server_allows_it(monkeypatch, tiny_hf_folders):
    monkeypatch.delenv("ATLAS_LOCAL_PATHS", raising=False)
    assert all(t.key != K + "path" for t in run().text_input)
    monkeypatch.setenv("ATLAS_LOCAL_PATHS", "1")
    at = run()
    at.text_input(key=K + "path").set_value(str(tiny_hf_folders["encoder"]))
    at = run(at)
    assert not at.exception
    assert metrics(at)["architecture"] == "hf-encoder" and metrics(at)["layers × heads"] == "2 × 2"
    at.text_input(key=K + "path").set_value("/no/such/folder")
    at = run(at)
    assert [e.value for e in at.error] == ["Refused: there is no file or folder at /no/such/folder"]


# -- what the page says of an upload: this session's own file name, as text; a refused type; sizes ---


def bodies(at: AppTest) -> list[str]:
    """Every element body that Streamlit renders as Markdown."""
    kinds = ("markdown", "subheader", "caption", "info", "warning", "error", "success")
    return [e.value for kind in kinds for e in at.get(kind)]


def test_the_same_bytes_in_a_second_session_show_that_sessions_file_name(rnn_bytes):
    first = upload(run(), "couplet.safetensors", rnn_bytes)
    assert first.subheader[0].value == plain("couplet.safetensors")
    second = upload(run(), "my_run_v2.safetensors", rnn_bytes)  # another browser session, same server
    assert second.subheader[0].value == plain("my_run_v2.safetensors")
    assert not any("couplet.safetensors" in b for b in bodies(second))


def test_an_uploaded_file_name_is_shown_as_text(tiny_transformer_checkpoint):
    name = "**bold** [x](#top) $x^2$ :smile: www.example.com.safetensors"  # a file name has no /
    at = upload(run(), name, tiny_transformer_checkpoint.read_bytes())
    assert at.subheader[0].value == plain(name)
    assert not any(raw in b for b in bodies(at) for raw in ("**bold**", "[x](", "$x^2$", ":smile:", "www."))


def test_a_refused_file_type_is_said_on_the_page_with_the_accepted_types():
    at = run()
    assert not at.file_uploader(key=K + "file").proto.type  # the browser would refuse it silently
    at = upload(at, "notes.txt", b"just some notes\n")
    (error,) = at.error
    assert error.value.startswith("Refused: notes.txt") and ".safetensors" in error.value
    assert ".zip" in error.value and not any("No checkpoint yet" in i.value for i in at.info)


def test_sizes_and_the_limit_are_in_the_uploaders_megabytes(rnn_bytes):
    import streamlit as st

    at = upload(run(), "tiny.safetensors", rnn_bytes)
    uploader = at.file_uploader(key=K + "file").proto
    server = int(st.get_option("server.maxUploadSize"))  # Streamlit refuses larger files itself
    cap = min(Limits.from_env().max_bytes // 1_000_000, server)  # the uploader's MB: 10⁶ bytes
    assert cap <= server
    assert uploader.max_upload_size_mb == cap and f"up to {cap:,} MB" in uploader.label
    assert any(f"{len(rnn_bytes) / 1000:,.1f} kB" in c.value for c in at.caption)  # as the uploader shows it


NEURON_PANEL = "Neuron view: how q and k make one head's weights"


def test_an_uploaded_transformer_gets_the_neuron_view_when_its_panel_opens(tiny_hf_folders):
    at = upload(run(), "tiny-bert.zip", folder_zip(tiny_hf_folders["encoder"], "tiny-bert"))
    assert NEURON_PANEL in [e.label for e in at.expander]
    assert not at.get("button_group")  # folded: nothing captured until a visitor opens it
    at.session_state["ckpt_neuron"] = True  # what a click on the panel sets
    at = run(at)
    pills = next(b for b in at.get("button_group") if b.key == "ckpt_neuron_query_self")
    pills.set_value(1)  # the first word after [CLS]
    at = run(at)
    spec = next(
        c.proto.spec for c in at.get("plotly_chart") if c.proto.id.endswith("-ckpt_neuron_chart_chart")
    )
    fig = json.loads(spec)
    q, k = z_of(fig["data"][0]), z_of(fig["data"][1])
    assert np.allclose(values(fig["data"][4]["x"]), qk_weights(q, k, causal=False)[0], atol=2e-2)
    gap = re.search(r"by at most ([0-9.e+-]+)\.", " ".join(c.value for c in at.caption))
    assert gap and float(gap.group(1)) < 1e-4  # the view's weights are the upload's own record


def test_an_uploaded_rnn_offers_no_neuron_view(rnn_bytes):
    at = upload(run(), "tiny.safetensors", rnn_bytes)
    assert NEURON_PANEL not in [e.label for e in at.expander]


INSIDE_PANEL = "Inside a prediction: the logit lens, generation and contributions"


def page_text(at: AppTest) -> str:
    boxes = [w for w in [*at.text_area, *at.text_input] if (w.key or "").startswith(K + "text_")]
    return boxes[0].value


def page_chart(at: AppTest, key: str) -> dict | None:
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}_chart")]
    return json.loads(found[0].proto.spec) if found else None


@pytest.fixture(scope="module")
def uploaded_decoder(tiny_hf_folders):
    """The Checkpoint inspector with a tiny GPT-2 uploaded, its Inside a prediction panel opened."""
    at = upload(run(), "tiny-gpt2.zip", folder_zip(tiny_hf_folders["causal"], "tiny-gpt2"))
    assert INSIDE_PANEL in [e.label for e in at.expander]
    assert page_chart(at, "lens_grid") is None  # folded: the model does not run again until opened
    at.session_state[K + "inside"] = True  # what a click on the panel sets
    return run(at)


def test_an_uploaded_decoder_gets_the_logit_lens_of_its_own_weights(uploaded_decoder, tiny_hf_folders):
    from attention_atlas.models.adapters.hf import HFAdapter

    at = uploaded_decoder
    own = HFAdapter("own", tiny_hf_folders["causal"], torch.device("cpu"))
    with torch.no_grad():
        probs = torch.softmax(own.model(input_ids=own.encode(page_text(at)).ids).logits[0], -1)
    trace = page_chart(at, "lens_grid")["data"][0]
    z = z_of(trace)
    assert z.shape[0] == own.n_layers and np.allclose(z[-1], probs.max(-1).values[-z.shape[1] :], rtol=1e-3)
    assert not at.error and not at.exception
    assert "tab" not in at.query_params and "pos" not in at.query_params  # an upload travels in no link


def test_an_uploaded_decoder_generates_and_traces_its_contributions(uploaded_decoder, tiny_hf_folders):
    from attention_atlas.models.adapters.hf import HFAdapter
    from attention_atlas.models.analysis.generate import generate

    at = uploaded_decoder
    at.session_state[K + "inside_tab"] = "Generate"
    at = run(at)
    at.session_state["gen_max"] = 4
    at.button(key="gen_go").click()
    at = run(at)
    own = HFAdapter("own", tiny_hf_folders["causal"], torch.device("cpu"))
    expected = generate(own, page_text(at), 4)
    assert expected.text in [c.value for c in at.code]
    at.session_state[K + "inside_tab"] = "Contributions"
    at = run(at)
    assert page_chart(at, "contrib_routes") is not None and not at.exception


def test_an_uploaded_encoder_offers_no_prediction_panel(tiny_hf_folders):
    at = upload(run(), "tiny-bert.zip", folder_zip(tiny_hf_folders["encoder"], "tiny-bert"))
    assert INSIDE_PANEL not in [e.label for e in at.expander] and not at.exception


def test_the_page_speaks_chinese(rnn_bytes):
    """In Chinese (the session's language): the empty state and its demo button, a refusal (the
    reason from models.uploads too), the summary's metrics and the alignment's axes."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=120)
    at.session_state["lang"] = "zh"
    at = run(at)
    assert at.title[0].value == "🧳 检查点检查器"
    assert any(i.value.startswith("还没有检查点。") for i in at.info)
    assert at.button(key=K + "demo").label == "加载导出的 couplet-rnn-additive 作为演示"
    at = upload(at, "notes.pt", b"just some notes\n")
    assert at.error[0].value == "已拒绝：notes.pt 是文本文件（开头为 'just some notes'），不是检查点"
    at = upload(at, "tiny.safetensors", rnn_bytes)
    assert not at.error and metrics(at)["架构"] == "couplet-rnn" and "层 × 头" in metrics(at)
    assert any("Attention Atlas 模型包" in c.value and "模型 id `upload:" in c.value for c in at.caption)
    layout = charts(at)[0]["layout"]
    assert (
        layout["xaxis"]["title"]["text"] == "输入（键）"
        and layout["yaxis"]["title"]["text"] == "输出（查询）"
    )


def test_an_upload_read_in_english_is_described_in_chinese_after_the_switch(rnn_bytes):
    """The summary is made once, when the file is read: switching the language afterwards turns its
    description (architecture, attention, sizes) into Chinese with the rest of the page."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = upload(run(), "tiny.safetensors", rnn_bytes)
    assert any("encoder–decoder, additive attention" in c.value for c in at.caption)
    at.session_state["lang"] = "zh"
    captions = [c.value for c in run(at).caption]
    assert any("编码器–解码器，加性注意力" in c for c in captions), captions
    assert not any("encoder–decoder" in c for c in captions), captions
