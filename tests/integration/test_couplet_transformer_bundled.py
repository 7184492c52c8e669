"""The bundled couplet Transformer (slow: loads the weights and the data): its card, its couplets."""

from __future__ import annotations

import json

import pytest

from attention_atlas.paths import WEIGHTS

pytestmark = pytest.mark.usefixtures("one_thread")
BUNDLED = WEIGHTS / "couplet-transformer"


@pytest.mark.slow
def test_bundled_model_reaches_its_card_alignment_on_the_check_sample(bundled_couplet_transformer):
    from attention_atlas.models.tasks.couplet import CHECK_SIZE, load_split
    from attention_atlas.models.tasks.couplet_heads import forced_layer_metrics

    bundled = bundled_couplet_transformer
    _, valid = load_split()
    sample = valid[:CHECK_SIZE]
    got = forced_layer_metrics(bundled.runner, sample)
    card = json.loads((BUNDLED / "metrics.json").read_text(encoding="utf-8"))["metrics"]
    assert got["alignment_best"] >= 0.85
    assert got["best_layer"] == card["best_layer"] == bundled.best_layer
    assert got["alignment_layers"][card["best_layer"]] == pytest.approx(card[f"alignment_first_{CHECK_SIZE}"])


@pytest.mark.slow
def test_bundled_model_writes_a_couplet_for_the_example(bundled_couplet_transformer):
    bundled = bundled_couplet_transformer
    for beam in (1, 4):
        result = bundled.run("两个黄鹂鸣翠柳", beam=beam)
        lower = result.output
        assert len(lower) == 7 and not set(lower) & set("两个黄鹂鸣翠柳")
        assert all(ch in bundled.vocab and bundled.vocab.index[ch] >= 4 for ch in lower)
        assert result.records["cross"].meta["alignment"] >= 5 / 7
    punct = bundled.run("春风又绿江南岸，明月何时照我还？").output
    assert punct[7] == "，" and punct[-1] == "？" and len(punct) == 16
