"""``cli.common.json_text``: what every ``--json`` of the command line prints."""

from __future__ import annotations

import json

import numpy as np

from attention_atlas.cli.common import json_text


def test_float32_arrays_read_back_to_the_same_float32_in_fewer_digits():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(64), size=(2, 3, 64)).astype(np.float32)
    text = json_text({"weights": weights})
    back = np.array(json.loads(text)["weights"], dtype=np.float32)
    np.testing.assert_array_equal(back, weights)
    assert len(text) < 0.7 * len(json.dumps({"weights": weights.tolist()}))  # 9 digits, not 17


def test_nan_is_null_and_odd_values_are_written_as_json_would():
    obj = {
        "scores": np.array([1.5, np.nan], dtype=np.float32),
        "every_other": np.arange(6, dtype=np.float32)[::2],  # not C-contiguous: through tolist()
        "tokens": np.array(["两", "cat"]),  # strings: through tolist()
        "count": np.int64(3),
        "gap": float("nan"),
    }
    assert json.loads(json_text(obj)) == {
        "scores": [1.5, None],
        "every_other": [0.0, 2.0, 4.0],
        "tokens": ["两", "cat"],
        "count": 3,
        "gap": None,
    }


def test_a_lone_surrogate_is_written_as_json_writes_it():
    """orjson refuses a str that is not valid UTF-8; ``json`` writes it as before (the command's
    output then fails in one line where it reaches a strict stdout)."""
    assert json_text({"token": "a\ud800", "w": np.ones(2, np.float32)}) == '{"token": "a\ud800", "w": [1.0, 1.0]}'
