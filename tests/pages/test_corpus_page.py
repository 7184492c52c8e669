"""The Corpus page under AppTest: the first visit runs the small bundled sample and shows every
head; axes, tabs and the search react; a large sample waits for a click; links open a head."""

import base64
import json
import time
from urllib.parse import parse_qs

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.ui.plain_text import WORD_JOINER
from tests.support import PACKAGE, one_line, page_runner

run = page_runner("app_pages/corpus.py", timeout=300)


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path_factory.getbasetemp() / "corpus-page-cache"))


def overview(at) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def test_first_visit_runs_the_sample_and_places_every_head():
    at = run()
    fig = overview(at)
    x = fig["data"][0]["x"]  # plotly sends a float array as base64 with its dtype
    assert (
        len(np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"]) if isinstance(x, dict) else x) == 6 * 12
    )
    assert "mean distance" in fig["layout"]["xaxis"]["title"]["text"]
    assert any("100 texts × 6 layers × 12 heads" in c.value for c in at.caption)
    at.selectbox(key="corpus_x").set_value("special_share")
    at = run(at)
    assert "special tokens" in overview(at)["layout"]["xaxis"]["title"]["text"]


def test_search_ranks_hits_and_links_each_to_its_head_view():
    at = run()
    at.selectbox(key="corpus_layer").set_value(2)
    at.selectbox(key="corpus_head").set_value(7)
    at.session_state["corpus_tab"] = "Search"
    at = run(at)
    at.text_input(key="corpus_token").set_value("th*")
    at = run(at)
    hits = at.dataframe[-1].value  # after the cached stores list
    assert len(hits) > 0 and hits["token"].str.startswith("th").all()
    assert list(hits["weight"]) == sorted(hits["weight"], reverse=True)
    path, query = hits["link"].iloc[0].split("?")
    params = parse_qs(query)
    assert path == "transformer" and params["model"] == ["minilm"]
    assert params["layer"] == ["2"] and params["head"] == ["7"] and params["text"] == [hits["text"].iloc[0]]
    at.text_input(key="corpus_token").set_value("  ")
    at = run(at)
    assert any("type a token" in i.value for i in at.info)


def test_distributions_tab_draws_the_head_and_its_layer():
    at = run()
    at.session_state["corpus_tab"] = "Distributions"
    at = run(at)
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    kinds = {t["type"] for f in figures for t in f["data"]}
    assert {"histogram", "box"} <= kinds


def test_a_large_sample_waits_for_a_click_and_a_file_is_asked_for():
    at = run()
    at.radio(key="corpus_n").set_value(10_000)
    at = run(at)
    assert not at.get("plotly_chart")
    assert any("Run minilm over 10,000 texts" in b.label for b in at.button)
    at.radio(key="corpus_source").set_value("your file")
    at = run(at)
    assert any("Upload a file" in i.value for i in at.info)
    # a file of another type is refused in words (issue 40 item 17: the uploader's red icon alone)
    at.file_uploader(key="corpus_file").set_value(("notes.zip", b"PK\x03\x04", "application/zip"))
    at = run(at)
    assert [e.value for e in at.error] == ["notes.zip is not a .txt, .csv or .jsonl file: upload one of those."]


@pytest.mark.slow
def test_a_run_started_by_its_button_goes_on_in_the_background_and_ends_with_the_results():
    """A large run no longer holds the page's script: the page polls a background job (progress,
    Cancel), and once it ends the results come without a stale Run/Continue button."""
    at = run()
    at.radio(key="corpus_n").set_value(1_000)
    at = run(at)
    assert [b.label for b in at.button if b.key == "corpus_run"] == ["Run minilm over 1,000 texts"]
    at.button(key="corpus_run").click()
    at = run(at)
    assert not [b for b in at.button if b.key == "corpus_run"]  # the run's progress instead
    deadline = time.monotonic() + 240
    while not any("1,000 texts × 6 layers × 12 heads" in c.value for c in at.caption):
        assert time.monotonic() < deadline, "the background run did not finish"
        time.sleep(1)
        at = run(at)
    assert not [b for b in at.button if b.key in ("corpus_run", "corpus_cancel")]


@pytest.mark.slow
def test_cancel_stops_the_background_run_and_continue_picks_it_up():
    at = run()
    at.radio(key="corpus_n").set_value(2_000)
    at = run(at)
    at.button(key="corpus_run").click()
    at = run(at)
    deadline = time.monotonic() + 120
    while not _done_so_far(at):  # the first batches written, so that Continue has something to say
        assert time.monotonic() < deadline, "the background run wrote nothing"
        time.sleep(0.2)
        at = run(at)
    at.button(key="corpus_cancel").click()
    at = run(at)
    deadline = time.monotonic() + 60
    while not [b for b in at.button if b.key == "corpus_run"]:  # the job stops between two batches
        assert time.monotonic() < deadline, "Cancel did not stop the run"
        time.sleep(0.5)
        at = run(at)
    label = next(b.label for b in at.button if b.key == "corpus_run")
    assert label.startswith("Continue (") and "of 2,000 done)" in label, label
    # what was done can be looked at meanwhile (issue 40 item 17: only the button before)
    done = int(label.removeprefix("Continue (").split(" of ")[0].replace(",", ""))
    assert any(f"the {done:,} of 2,000 texts done so far" in i.value for i in at.info)
    assert at.get("plotly_chart") and any(f"{done:,} texts × 6 layers" in c.value for c in at.caption)


def _done_so_far(at) -> int:
    """Texts done, as the background run's progress bar says ('640/2,000 texts, …'); 0 before."""
    for bar in at.get("progress"):
        head = bar.proto.text.split(" texts")[0]
        if "/" in head:
            return int(head.split("/")[0].replace(",", ""))
    return 0


def test_cached_stores_are_listed_and_one_is_deleted_from_disk(tmp_path, monkeypatch):
    """The "Cached corpus stores" expander: nothing cached says so; a store appears with its model,
    sample, texts done and size; a store a run is filling is refused; a confirmed Delete removes it
    from disk (issue 27: a place to see and delete cached corpus stores)."""
    from attention_atlas.models.corpus.extract import Options
    from attention_atlas.models.corpus.inputs import sample
    from attention_atlas.models.corpus.run import path_for, run_corpus
    from attention_atlas.models.corpus.store import filling
    from attention_atlas.ui.uploads import size_text

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path / "cache"))
    at = AppTest.from_file(PACKAGE / "app_pages/corpus.py", default_timeout=300)
    at.query_params["n"] = "10000"  # a large sample waits for a click: this visit runs nothing
    at = run(at)
    assert any("No corpus store is cached" in i.value for i in at.info)
    corpus, options = sample("english", 20), Options(kind="self")
    run_corpus("minilm", corpus, options).close()
    path = path_for("minilm", corpus, options)
    at = run(at)
    listed = next(d.value for d in at.dataframe if "texts done" in d.value)
    assert list(listed["model"]) == ["minilm"] and list(listed["sample"]) == ["english-20"]
    on_disk = sum(
        p.stat().st_size for p in path.parent.glob(path.name + "*")
    )  # with a write-ahead log if any
    assert list(listed["texts done"]) == ["20 of 20"] and list(listed["size"]) == [size_text(on_disk)]
    assert at.button(key="corpus_store_delete").disabled  # not before the confirmation
    at.checkbox(key="corpus_store_sure").check()
    at = run(at)
    with filling(path):  # a run is filling it: refused in one line, the store kept
        at.button(key="corpus_store_delete").click()
        at = run(at)
    assert path.is_file() and any("being filled by a run right now" in e.value for e in at.error)
    at.checkbox(key="corpus_store_sure").check()
    at = run(at)
    at.button(key="corpus_store_delete").click()
    at = run(at)
    assert not path.exists() and not list(path.parent.glob("*.duckdb*"))
    assert any(f"Deleted {path.name}" in s.value for s in at.success)
    assert any("No corpus store is cached" in i.value for i in at.info)


def test_the_page_in_chinese():
    """The page in Chinese (issue 37): captions, tabs, statistics' names and the overview's axes; the
    statistics keep their English names in the URL and the table, the tab its English label."""
    import attention_atlas.ui.language  # noqa: F401  (the session's language, as the app reads it)
    from attention_atlas.i18n import language

    at = AppTest.from_file(PACKAGE / "app_pages/corpus.py", default_timeout=300)
    at.session_state["lang"] = "zh"
    with language("zh"):  # AppTest applies format_func=_ here too, outside the script run
        at = run(at)
    assert at.title[0].value == "📚 语料库"
    assert [t.label for t in at.tabs] == ["头概览", "分布", "搜索", "查询与键"]
    assert any("100 篇文本 × 6 层 × 12 个头（自注意力）" in c.value for c in at.caption)
    assert any(m.value.startswith("**第 0 层第 0 个头**：大多为*") for m in at.markdown)
    assert "平均距离（词元）" in overview(at)["layout"]["xaxis"]["title"]["text"]
    at.selectbox(key="corpus_x").set_value("special_share")
    at.session_state["corpus_tab"] = "分布"  # a click on the tab, in Chinese
    with language("zh"):  # AppTest applies format_func=_ here too, outside the script run
        at = run(at)
    assert at.query_params["x"] == "special_share" and at.query_params["tab"] == "Distributions"
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text") for c in at.get("plotly_chart")]
    assert "第 0 层第 0 个头，共 100 篇文本" in titles


def test_a_stopped_ray_cluster_is_one_line_not_a_hang(tmp_path, monkeypatch):
    """ATLAS_RAY_ADDRESS at a port where nothing listens: the first visit's run says so in one line,
    in seconds (ray.init itself waited over two minutes there), and loads no model."""
    from tests.unit.test_corpus_limits import closed_port

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path / "cache"))  # no store yet: the visit runs one
    address = f"127.0.0.1:{closed_port()}"
    monkeypatch.setenv("ATLAS_RAY_ADDRESS", address)
    began = time.monotonic()
    at = run()
    took = time.monotonic() - began
    assert [e.value.replace(WORD_JOINER, "") for e in at.error] == [
        f"minilm cannot run this corpus: no Ray cluster answers at {address} (Connection refused): "
        "start it (ray start --head) or point ATLAS_RAY_ADDRESS or --ray at a running one"
    ]
    assert not at.get("plotly_chart") and took < 60, f"{took:.1f} s"


@pytest.mark.slow
def test_the_stores_disk_limit_deletes_the_least_recently_used_store_and_says_so(tmp_path, monkeypatch):
    """An old store and the first visit's new one exceed ATLAS_CORPUS_STORES_MAX_MB: the old one is
    deleted, the page says which and why in one line, and shows the new store's results."""
    from tests.unit.test_corpus_limits import make_store

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "corpus"
    folder.mkdir(parents=True)
    old, old_size = make_store(folder, "minilm-0123456789abcdef", 200, time.time() - 3600)
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", str((old_size + 1000) / 2**20))
    at = run()
    notices = [i.value for i in at.info if "ATLAS_CORPUS_STORES_MAX_MB" in i.value]
    assert len(notices) == 1 and one_line(notices[0]), notices
    assert "so the least recently used one was deleted: minilm-0123456789abcdef.duckdb (" in notices[0]
    assert not old.exists() and any("100 texts × 6 layers × 12 heads" in c.value for c in at.caption)
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", "abc")
    at.radio(key="corpus_n").set_value(1_000)
    at = run(at)
    assert not [i for i in at.info if "ATLAS_CORPUS_STORES_MAX_MB" in i.value]  # said once
    at.button(key="corpus_run").click()
    at = run(at)
    deadline = time.monotonic() + 60
    while not at.error:  # the background run refuses the setting before it loads anything
        assert time.monotonic() < deadline, "the background run did not end"
        time.sleep(0.2)
        at = run(at)
    assert [e.value.replace(WORD_JOINER, "") for e in at.error] == [
        "minilm cannot run this corpus: StoreError: ATLAS_CORPUS_STORES_MAX_MB must be a number of "
        "megabytes above 0, not 'abc'"
    ]


@pytest.mark.slow
def test_a_background_run_says_which_stores_the_disk_limit_deleted_once(tmp_path, monkeypatch):
    """The run's thread deletes them (before it starts); the page says so at its next full run (in a
    browser, once the run ends: its progress is a fragment), once."""
    from tests.unit.test_corpus_limits import make_store

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "corpus"
    folder.mkdir(parents=True)
    now = time.time()
    old = [make_store(folder, f"minilm-{i:016x}", 200, now - 3600 + i)[0] for i in range(2)]
    monkeypatch.setenv("ATLAS_CORPUS_STORES_MAX_MB", "0.5")  # less than any store: every old one goes
    at = AppTest.from_file(PACKAGE / "app_pages/corpus.py", default_timeout=300)
    at.query_params["n"] = "1000"  # waits for a click: nothing runs, nothing is deleted yet
    at = run(at)
    assert all(p.exists() for p in old) and not stores_notices(at)
    at.button(key="corpus_run").click()
    at = run(at)
    notices, deadline = stores_notices(at), time.monotonic() + 240
    while not any("1,000 texts × 6 layers × 12 heads" in c.value for c in at.caption):
        assert time.monotonic() < deadline, "the background run did not finish"
        time.sleep(1)
        at = run(at)
        notices += stores_notices(at)
    assert len(notices) == 1 and "so the 2 least recently used were deleted: " in notices[0], notices
    assert notices[0].index(old[0].name) < notices[0].index(old[1].name)  # the older first
    assert not any(p.exists() for p in old)


def stores_notices(at) -> list[str]:
    return [i.value for i in at.info if "ATLAS_CORPUS_STORES_MAX_MB" in i.value]
