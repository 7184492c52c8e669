"""Does attention explain? for an upload, in its folded panel of the Checkpoint inspector (issue 38): a
tiny GPT-2 and a tiny BART uploaded as zipped folders, and a tiny couplet RNN checkpoint, each has its
attribution rows drawn from its own weights, equal to ``models.analysis.attribution``'s answer here; an
encoder, a position out of range and a causal LM given both a token and a position are one line each."""

from __future__ import annotations

import json

import numpy as np
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models.analysis import attribution as at
from attention_atlas.ui import attribution_views as views
from tests.support import folder_zip, one_line, page_runner, z_of

run = page_runner("app_pages/checkpoint.py", 180)
K = "ckpt_"
A = K + "attr_"  # the panel's widget keys
PANEL = "Does attention explain? Attention beside gradients and occlusion for one output"


def upload(name: str, data: bytes) -> AppTest:
    page = run()
    page.file_uploader(key=K + "file").set_value((name, data, "application/octet-stream"))
    return run(page)


def opened(page: AppTest) -> AppTest:
    assert PANEL in [e.label for e in page.expander]
    assert heatmap(page) is None  # folded: nothing runs until it is opened
    page.session_state[A + "open"] = True  # what a click on the panel sets
    return run(page)


def heatmap(page: AppTest) -> dict | None:
    found = [c for c in page.get("plotly_chart") if c.proto.id.endswith(f"-{A}heat_chart")]
    return json.loads(found[0].proto.spec)["data"][0] if found else None


def page_text(page: AppTest) -> str:
    return next(w for w in [*page.text_area, *page.text_input] if (w.key or "").startswith(K + "text_")).value


def said(page: AppTest) -> list[str]:
    return [m.value for m in [*page.info, *page.caption, *page.markdown, *page.error]]


def check_rows(page: AppTest, want: at.Attribution) -> None:
    """The panel's heatmap and faithfulness table are ``want``'s: its methods named, its scores."""
    heat = heatmap(page)
    assert [y.removesuffix(" ±") for y in heat["y"]] == [views.named(m) for m in want.methods]
    assert [x.split(" · ", 1)[1] for x in heat["x"]] == want.tokens
    np.testing.assert_allclose(
        z_of({"z": heat["customdata"]}), np.stack([want.scores[m] for m in want.methods]), atol=1e-4
    )
    (table,) = [d.value for d in page.dataframe if "AOPC" in d.value]
    np.testing.assert_allclose(table["AOPC"].to_numpy(), want.aopc, atol=1e-4)
    assert not page.exception and not page.error
    assert not {"position", "steps", "method", "rank", "layer", "head"} & set(page.query_params)  # no link


def hf(tiny_hf_folders, family: str):
    from attention_atlas.models.adapters.hf import HFAdapter

    return HFAdapter("own", tiny_hf_folders[family], torch.device("cpu"))


def test_an_uploaded_decoder_explains_its_next_token_and_a_forced_one(tiny_hf_folders):
    page = opened(upload("tiny-gpt2.zip", folder_zip(tiny_hf_folders["causal"], "tiny-gpt2")))
    own, text = hf(tiny_hf_folders, "causal"), page_text(page)
    check_rows(page, at.attribute(at.subject_of(own, text), steps=32, points=views.POINTS))
    page.text_input(key=A + "target").set_value(" dog")
    page = run(page)
    forced = at.attribute(at.subject_of(own, text, " dog"), steps=32, points=views.POINTS)
    check_rows(page, forced)
    assert any(f"**{forced.target}**" in m for m in said(page))  # the headline names the token forced
    page.number_input(key=A + "position").set_value(2)  # a token and a position: the module refuses both
    page = run(page)
    (line,) = [m.value for m in page.info if "not both" in m.value]
    assert one_line(line) and heatmap(page) is None and not page.exception


def test_an_uploaded_seq2seq_model_explains_a_forced_output_at_a_position(tiny_hf_folders):
    page = upload("tiny-bart.zip", folder_zip(tiny_hf_folders["seq2seq"], "tiny-bart"))
    page.text_input(key=K + "target").set_value("le chat")  # the page's forced output, above the panel
    page = opened(run(page))
    page.number_input(key=A + "position").set_value(1)
    page = run(page)
    own, text = hf(tiny_hf_folders, "seq2seq"), page_text(page)
    subject = at.subject_of(own, text, "le chat", 1)
    check_rows(page, at.attribute(subject, steps=32, points=views.POINTS))
    assert "rollout" in heatmap(page)["y"]  # an encoder-decoder's cross row times its encoder's rollout
    (layer,) = [s for s in page.selectbox if (s.key or "").startswith(A + "layer_")]
    (head,) = [s for s in page.selectbox if (s.key or "").startswith(A + "head_")]
    layer.set_value(0)
    head.set_value(1)
    page = run(page)
    row = [y.removesuffix(" ±") for y in heatmap(page)["y"]].index("attention")
    want = at.at_head(subject, 0, 1).attention
    np.testing.assert_allclose(z_of({"z": heatmap(page)["customdata"]})[row], want, atol=1e-4)
    page.number_input(key=A + "position").set_value(9)
    page = run(page)
    (line,) = [m.value for m in page.info if "--target-position 9 is out of range" in m.value]
    assert one_line(line) and not page.exception


def test_an_uploaded_couplet_rnn_explains_its_own_lower_line(tiny_rnn_checkpoint):
    from attention_atlas.models.adapters.couplet_rnn import CoupletRNNAdapter

    page = opened(upload("tiny.safetensors", tiny_rnn_checkpoint.read_bytes()))
    own = CoupletRNNAdapter.from_checkpoint(tiny_rnn_checkpoint, "cpu")
    check_rows(page, at.attribute(at.subject_of(own, page_text(page)), steps=32, points=views.POINTS))
    assert not [s for s in page.selectbox if (s.key or "").startswith(A + "layer_")]  # one attention
    assert any("rollout is not shown" in m for m in said(page))


def test_an_uploaded_encoder_is_one_line(tiny_hf_folders):
    page = upload("tiny-bert.zip", folder_zip(tiny_hf_folders["encoder"], "tiny-bert"))
    assert PANEL not in [e.label for e in page.expander] and not page.exception
    (line,) = [m for m in said(page) if "writes no output token" in m]
    assert one_line(line) and "is an encoder" in line
