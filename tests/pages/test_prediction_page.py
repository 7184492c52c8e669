"""The "Inside a prediction" page (issue 24, item 2: the logit lens) under AppTest, with SmolLM2 and
with tiny random causal LMs registered for the test (one the lens reads, one it refuses): the grid's
top row is the model's own next-token distribution computed here with torch, the followed token's
probability and rank are the model's own at the last block, the settings travel in the URL, and bad
input is a one-line message."""

import base64
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models import registry
from attention_atlas.models.adapters.hf import HFAdapter
from tests.support import PACKAGE, hf_folder, page_runner

PAGE = "app_pages/prediction.py"
run = page_runner(PAGE, 300)
DEFAULT = "The sun rises in the east and sets in the"  # the page's first text
K = "lens_"


def opened(**params) -> AppTest:
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params.update(params)
    return run(at)


def chart(at: AppTest, key: str) -> dict | None:
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}_chart")]
    return json.loads(found[0].proto.spec) if found else None


def values(v) -> np.ndarray:
    """An array as plotly sent it (base64 with its dtype, or a list)."""
    if isinstance(v, dict):
        data = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).astype(float)
        return data.reshape([int(s) for s in str(v["shape"]).split(",")]) if "shape" in v else data
    return np.asarray(v, dtype=float)


@pytest.fixture(scope="module")
def smollm2():
    return registry.load("smollm2", torch.device("cpu"))


def own_probs(adapter, text: str) -> torch.Tensor:
    """The model's own next-token distribution at every position: ``[positions, vocab]``."""
    with torch.no_grad():
        return torch.softmax(adapter.model(input_ids=adapter.encode(text).ids).logits[0].float(), -1)


@pytest.fixture(scope="module")
def first_load():
    return run()


def test_first_load_draws_the_grid_whose_top_row_is_the_models_own_prediction(first_load, smollm2):
    at = first_load
    assert at.text_input(key=K + "text").value == DEFAULT
    grid = chart(at, K + "grid")
    trace = grid["data"][0]
    z = values(trace["z"])
    assert z.shape == (smollm2.n_layers, 10)  # 30 blocks × 10 tokens (SmolLM2 adds no bos)
    own = own_probs(smollm2, DEFAULT)
    top = own.max(-1)
    assert np.allclose(z[-1], top.values.numpy(), rtol=2e-3)
    assert trace["text"][-1][-1] == smollm2.tokenizer.decode([int(top.indices[-1])]) == " west"
    last = grid["data"][1]["customdata"][-1]  # the cells' hover: the clickable layer's last point
    assert last[0] == "9 · the"
    hover = last[1].split("<br>")
    assert len(hover) == 10 and hover[0].startswith("' west' ")
    assert grid["layout"]["xaxis"]["ticktext"][-1] == "the"


def test_the_followed_prediction_climbs_to_rank_one_in_the_last_block(first_load, smollm2):
    fig = chart(first_load, K + "follow")
    probs, ranks = values(fig["data"][0]["y"]), values(fig["data"][1]["y"])
    own = own_probs(smollm2, DEFAULT)[-1]
    west = smollm2.tokenizer(" west", add_special_tokens=False)["input_ids"][0]
    assert np.isclose(probs[-1], own[west].item(), rtol=2e-3) and ranks[-1] == 1
    assert ranks[0] > ranks[-1]  # it climbs through the blocks
    assert "' west'" in fig["layout"]["title"]["text"]


def test_following_a_typed_token_at_another_position_and_the_link_keeps_both(first_load, smollm2):
    at = first_load
    at.slider(key=K + "pos").set_value(2)  # "rises"
    at.text_input(key=K + "follow").set_value(" France")
    at = run(at)
    assert at.query_params["pos"] == "2" and at.query_params["follow"] == " France"
    fig = chart(at, K + "follow")
    own = own_probs(smollm2, DEFAULT)[2]
    france = smollm2.tokenizer(" France", add_special_tokens=False)["input_ids"][0]
    probs, ranks = values(fig["data"][0]["y"]), values(fig["data"][1]["y"])
    assert np.isclose(probs[-1], own[france].item(), rtol=2e-3)
    assert ranks[-1] == 1 + int((own > own[france]).sum())
    table = at.dataframe[0].value
    assert len(table) == smollm2.n_layers and list(table["block"]) == list(range(smollm2.n_layers))

    again = opened(pos="2", follow=" France")  # a link opened afresh shows the same view
    assert at.slider(key=K + "pos").value == again.slider(key=K + "pos").value == 2
    assert chart(again, K + "follow")["data"] == fig["data"]


@pytest.mark.slow  # three page runs of SmolLM2's lens: 3.8 s here
def test_a_new_prompt_starts_at_its_last_position():
    """Issue 40, item 5: the position stayed where the old prompt had it (the default's last after an
    11-token prompt; 2 of a 3-token prompt after it grew to 21): a new prompt is followed at its end."""
    at = run()
    assert at.slider(key=K + "pos").value == 9  # the default's last token, "the"
    at.text_input(key=K + "text").set_value("The capital of France is Paris and the capital of Italy is")
    at = run(at)
    pos = at.slider(key=K + "pos")
    assert pos.proto.max == pos.value == 11 and "pos" not in at.query_params
    assert "11 · is" in chart(at, K + "follow")["layout"]["title"]["text"]
    at = run(pos.set_value(3))  # a position the visitor chose stays while the prompt does
    assert at.slider(key=K + "pos").value == 3 and at.query_params["pos"] == "3"
    at.text_input(key=K + "text").set_value("One two three")
    at = run(at)
    assert at.slider(key=K + "pos").value == 2
    at.text_input(key=K + "text").set_value("One two three four five six seven")
    assert run(at).slider(key=K + "pos").value == 6


@pytest.mark.slow  # about 3 s
def test_a_window_of_a_longer_text_from_the_link():
    text = " ".join(["one two three four five six seven eight nine ten"] * 4)  # 40 tokens
    at = opened(text=text, width="16", **{"from": "8"})
    grid = chart(at, K + "grid")
    x = grid["data"][0]["x"]
    assert len(x) == 16 and x[0].startswith("8 · ") and x[-1].startswith("23 · ")
    assert at.radio(key=K + "width").value == "16"


@pytest.mark.slow
def test_bad_input_is_one_line():
    at = opened(text="   ")
    assert [i.value for i in at.info] == ["Type a text to see what the model predicts after each block."]
    assert not at.get("plotly_chart")

    at = run()
    at.text_input(key=K + "text").set_value("word " * 1200)  # 6,000 characters: cut to 4,000
    at = run(at)
    assert any("keeps the first 4,000" in w.value for w in at.warning)
    assert any(
        "first 512" in str(getattr(c, "value", ""))
        for c in [*at.caption, *at.info, *at.warning, *at.markdown]
    )
    assert len(chart(at, K + "grid")["data"][0]["x"]) == 64

    at = opened(text="两个黄鹂鸣翠柳 🙃 Ωmega", follow="\u200b")
    ticks = chart(at, K + "grid")["layout"]["xaxis"]["ticktext"]
    assert "〃" in ticks and "两" in ticks
    assert any("gives no token" in w.value for w in at.warning) or chart(at, K + "follow")


# -- models registered for the test: any causal LM, and one the lens refuses -------------------------


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory, tiny_hf_folders):
    from transformers import AutoModelForCausalLM, CohereConfig

    torch.manual_seed(0)
    cohere = CohereConfig(
        vocab_size=30522,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
        logit_scale=0.5,  # the logits are scaled after the head: the lens cannot read the blocks alike
        pad_token_id=0,
    )
    folders = {
        "tiny-gpt2-lens": tiny_hf_folders["causal"],
        "tiny-cohere-lens": hf_folder(
            AutoModelForCausalLM.from_config(cohere), tmp_path_factory.mktemp("cohere")
        ),
    }
    for model_id, folder in folders.items():
        registry.register(
            model_id, "causal", "a tiny test model", layers=2, heads=2, kinds=("self",), example="a"
        )(lambda device, m=model_id, f=folder: HFAdapter(m, f, torch.device("cpu")))
    yield list(folders)
    for model_id in folders:
        registry._REGISTRY.pop(model_id)


@pytest.mark.slow
def test_every_causal_model_is_offered_and_a_refused_one_is_one_line(tiny_models):
    at = run()
    assert {"smollm2", *tiny_models} <= set(at.selectbox(key=K + "model").options)
    assert "minilm" not in at.selectbox(key=K + "model").options

    at = opened(model="tiny-gpt2-lens", text="the cat sat on the mat")
    z = values(chart(at, K + "grid")["data"][0]["z"])
    assert z.shape == (2, 7)  # 2 blocks × [CLS] the cat sat on the mat (no [SEP] appended to a causal LM's text)

    at = opened(model="tiny-cohere-lens")
    assert not at.get("plotly_chart")
    (warning,) = at.warning
    assert "its logits are not its output head applied to its final norm" in warning.value
    assert "\n" not in warning.value


def test_the_page_speaks_chinese():
    """In Chinese (the session's language): the title, the tabs, the grid's and the follow chart's
    titles and axes, the captions with their counts; the tab is still named in English in the URL."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.session_state["lang"] = "zh"
    at = run(at)
    assert at.title[0].value == "🔬 预测的内部"
    assert [t.label for t in at.tabs] == ["Logit lens", "生成", "贡献", "激活修补"]
    grid = chart(at, K + "grid")
    assert grid["layout"]["title"]["text"] == "每个块之后的首位词元，位置 0–9"
    assert grid["layout"]["yaxis"]["title"]["text"] == "块之后"
    assert "第 %{y} 块之后" in grid["data"][1]["hovertemplate"]
    follow = chart(at, K + "follow")
    assert (
        follow["data"][0]["name"] == "概率" and follow["layout"]["title"]["text"] == "' west' 在位置 9 · the"
    )
    assert any(c.value.startswith("10 个词元 × 30 个块；") for c in at.caption)
    assert at.text_input(key=K + "follow").label.startswith("要追踪的词元")
    assert "**logit lens**（逻辑透镜）" in at.markdown[0].value
