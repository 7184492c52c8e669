"""SmolLM2's byte-level tokens read as text everywhere: record, axes, hover, CSV, merged words, the CLI
(issue 17, item 1); minilm's WordPiece labels stay the tokenizer's own."""

import json

import pytest

from attention_atlas.viz_core.derive import merge_words
from attention_atlas.viz_core.export import record_frame, to_csv
from attention_atlas.viz_core.figures import head_view
from attention_atlas.viz_core.tokens import clean_tokens, tick_label
from tests.support import CPU
from tests.support import run_cli as cli

pytestmark = pytest.mark.slow
FRAGMENT = set("()/0123456789")  # the marks of a piece that holds part of a character: 两(1/2)


@pytest.fixture(scope="module")
def smollm2():
    from attention_atlas.models.registry import load

    return load("smollm2", CPU)


@pytest.mark.parametrize(
    ("text", "labels", "words"),
    [
        (
            "两个黄鹂鸣翠柳",
            ["两(1/2)", "两(2/2)", "个", "黄(1/3)", "黄(2/3)", "黄(3/3)", "鹂(1/3)"],
            ["两个黄鹂鸣翠柳"],
        ),
        ("Café au lait", ["C", "af", "é", "au", "la", "it"], ["Café", "au", "lait"]),
        ("I love 😀🙃 emoji", ["I", "love", "😀(1/2)", "😀(2/2)", "🙃(1/3)"], ["I", "love", "😀🙃", "emoji"]),
        ("на столе", ["на", "с", "т", "ол", "е"], ["на", "столе"]),
    ],
)
def test_smollm2_labels_are_the_text_their_bytes_stand_for(smollm2, text, labels, words):
    rec = smollm2.run(text).records["self"]
    shown = clean_tokens(rec.query_tokens)
    assert shown[: len(labels)] == labels
    assert set("".join(shown)) <= set(text) | FRAGMENT  # no Ã©, ä¸, ðŁ, Ð½: only the text's own characters
    assert clean_tokens(merge_words(rec).query_tokens) == words
    fig = head_view(rec, 0, 0)  # axes (a split character upright: 两 〃) and hover (两(1/2))
    assert list(fig.layout.xaxis.ticktext) == [tick_label(t) for t in shown]
    assert set("".join(fig.layout.xaxis.ticktext)) <= set(text) | {"〃"}
    assert fig.data[0].y[0] == f"0 · {shown[0]}"
    frame = record_frame(rec)
    assert set("".join(frame.query_token) + "".join(frame.key_token)) <= set(text) | FRAGMENT
    assert labels[0] in to_csv(frame).decode("utf-8-sig")


def test_cli_extract_json_prints_the_text_of_each_piece():
    done = cli("extract", "--model", "smollm2", "--text", "Café 😀 на", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)["records"][0]["query_tokens"]
    assert tokens[:3] == ["C", "af", "é"] and " 😀(1/2)" in tokens and " на" in tokens


def test_minilm_wordpiece_labels_do_not_change():
    from transformers import AutoTokenizer

    from attention_atlas.models.adapters.minilm import model_folder
    from attention_atlas.models.registry import load

    text = "Café naïve unbelievably"
    rec = load("minilm", CPU).run(text).records["self"]
    tok = AutoTokenizer.from_pretrained(model_folder())
    assert rec.query_tokens == tok.convert_ids_to_tokens(tok(text)["input_ids"])
