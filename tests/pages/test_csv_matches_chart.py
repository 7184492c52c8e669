"""Each chart's CSV holds the numbers the chart shows, with tokens where the chart has tokens
(issue 17, item 9), read back from the download buttons as a browser would get them."""

import io

import numpy as np
import pandas as pd
import pytest
import streamlit.testing.v1.app_test as app_test
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from tests.support import PACKAGE, charts, page_runner, z_of


class KeptStorage(MemoryMediaFileStorage):
    """AppTest's in-memory media store, kept reachable after the run (the downloads live there)."""

    last = None

    def __init__(self, *args):
        super().__init__(*args)
        KeptStorage.last = self


class KeptManager(MediaFileManager):
    """AppTest's media file manager, kept reachable after the run (it runs deferred downloads)."""

    last = None

    def __init__(self, *args):
        super().__init__(*args)
        KeptManager.last = self


@pytest.fixture(scope="module", autouse=True)
def kept_downloads():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app_test, "MemoryMediaFileStorage", KeptStorage)
        patch.setattr(app_test, "MediaFileManager", KeptManager)
        yield


def download(at, key: str) -> pd.DataFrame:
    """The button's file as a press would make it (the CSVs are written on the press)."""
    button = next(b for b in at.get("download_button") if b.proto.id.endswith(key))
    assert button.proto.deferred_file_id and not button.proto.url  # nothing written before the press
    url = KeptManager.last.execute_deferred(button.proto.deferred_file_id)
    data = KeptStorage.last.get_file(url.rsplit("/", 1)[1]).content
    return pd.read_csv(io.BytesIO(data), encoding="utf-8-sig")


def test_learned_positions_csv_holds_both_whole_matrices():
    run = page_runner("app_pages/positional.py", 300)
    at = run()
    at.toggle(key="pe_learned").set_value(True)
    at = run(at)
    fig = charts(at)[-1]
    shown = [z_of(t) for t in fig["data"]]
    n = shown[0].shape[0]
    frame = download(at, "pe_learned_sim_csv")
    assert len(frame) == n * n  # every cell of each matrix, not row 0 alone
    values = [c for c in frame.columns if c not in ("position_a", "position_b")]
    assert len(values) == 2
    for column, matrix in zip(values, shown, strict=True):
        grid = frame.pivot(index="position_a", columns="position_b", values=column).to_numpy()
        np.testing.assert_allclose(grid, matrix, atol=2e-3)  # the chart sends 3 significant digits


@pytest.fixture(scope="module")
def transformer():
    return page_runner("app_pages/transformer.py", 300)()


def test_head_view_csv_has_tokens_and_the_heads_numbers(transformer):
    head = charts(transformer)[1]
    frame = download(transformer, "tf_head_csv")
    assert {"query_pos", "query_token", "key_pos", "key_token", "weight"} <= set(frame.columns)
    shown = [label.split(" · ", 1)[1] for label in head["data"][0]["x"]]
    assert frame.drop_duplicates("key_pos")["key_token"].str.strip().tolist() == shown
    grid = frame.pivot(index="query_pos", columns="key_pos", values="weight").to_numpy()
    np.testing.assert_allclose(grid, z_of(head["data"][0]), atol=2e-3)


def test_the_model_views_and_the_line_views_csvs_hold_their_heads(transformer):
    """Issue 40 item 25: the README says every chart has a CSV; the model view and the line view had
    none. The model view's holds every layer and head, equal to the head view's for the open head;
    the line view's holds the heads it draws (the open one: head 0). Right after the head view's test:
    the downloads are read from the last run's media store, the fixture's."""
    head = download(transformer, "tf_head_csv")
    n = head["query_pos"].nunique()
    every = download(transformer, "tf_heads_model_csv")
    assert len(every) == 6 * 12 * n * n and every["layer"].nunique() == 6 and every["head"].nunique() == 12
    layer = transformer.slider(key="tf_layer").value
    opened = every.query(f"layer == {layer} and head == 0").reset_index(drop=True)
    np.testing.assert_allclose(opened["weight"], head["weight"], rtol=1e-6)
    assert opened["key_token"].tolist() == head["key_token"].tolist()
    lines = download(transformer, "tf_line_lines_csv")
    assert set(lines["head"]) == {0} and set(lines["layer"]) == {layer} and len(lines) == n * n


def test_rollout_csv_has_tokens():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PACKAGE / "app_pages/transformer.py", default_timeout=300)
    at.query_params["tab"] = "Rollout & flow"  # drawn only when its tab is open
    frame = download(page_runner("app_pages/transformer.py", 300)(at), "tf_rollout_csv")
    assert {"query_token", "key_token"} <= set(frame.columns)
    assert frame["key_token"].iloc[0] == "[CLS]"


def test_scoring_entropy_on_minilm_keeps_one_bar_and_row_per_position():
    run = page_runner("app_pages/scoring.py", 300)
    at = run()
    at.radio(key="scoring_source").set_value("real: minilm")
    at = run(at)
    bars = next(f for f in charts(at) if f["data"][0]["type"] == "bar")
    assert all(len(set(t["x"])) == len(t["x"]) == 13 for t in bars["data"])  # the two "the" keep two bars
    frame = download(at, "scoring_entropy_csv")
    assert len(frame) == 13
    assert "query_pos" in frame.columns and (frame["query_token"] == "the").sum() == 2

