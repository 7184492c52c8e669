"""The long-input page's pure parts: PCA of queries and keys, token ranges, zoom windows, the model
view's payload, uploads, the background summaries, the bundled first text."""

import gzip
import itertools
import time

import numpy as np
import plotly.io as pio
import pytest

from attention_atlas.models.text.pairs import CORPORA
from attention_atlas.ui import long_cached as lc
from attention_atlas.ui import long_views as lv
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from attention_atlas.viz_core import long_figures as lf


def random_capture(n=40, layers=3, heads=4, kv=2, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    qs = [rng.normal(size=(heads, n, dim)).astype(np.float32) * 2 for _ in range(layers)]
    ks = [rng.normal(size=(kv, n, dim)).astype(np.float32) * 2 for _ in range(layers)]
    special = [i == 0 for i in range(n)]
    return bw.QKCapture("test", qs, ks, [dim**-0.5] * layers, True, [f"t{i}" for i in range(n)], special)


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- queries and keys in 2-D -------------------------------------------------------------------------


def test_normalising_queries_and_keys_changes_no_weight():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(30, 16)) + 3, rng.normal(size=(30, 16)) * 5 - 2
    nq, nk = bw.normalise_qk(q, k)
    np.testing.assert_allclose(softmax(nq @ nk.T), softmax(q @ k.T), atol=1e-12)
    np.testing.assert_allclose(nk.mean(0), nq.mean(0), atol=1e-12)  # one centre
    s = np.linalg.norm(nq, axis=1).mean() / np.linalg.norm(q, axis=1).mean()  # queries × s, keys ÷ s
    assert np.isclose(np.linalg.norm(q * s, axis=1).mean(), np.linalg.norm(k / s, axis=1).mean())


def test_pca_finds_the_plane_the_points_lie_in():
    rng = np.random.default_rng(2)
    plane = np.linalg.qr(rng.normal(size=(8, 2)))[0].T  # two orthonormal directions in 8-D
    q = rng.normal(size=(50, 2)) * [5, 1] @ plane
    k = rng.normal(size=(60, 2)) * [5, 1] @ plane
    pq, pk, share = bw.project_qk(q, k, normalise=False)
    assert pq.shape == (50, 2) and pk.shape == (60, 2) and pq.dtype == np.float32
    assert share.sum() == pytest.approx(1.0) and share[0] > share[1] > 0
    both = np.concatenate([q, k])
    # distances are kept: the plane holds all of it
    d_in = np.linalg.norm(both[:, None] - both[None], axis=-1)
    flat = np.concatenate([pq, pk]).astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(flat[:, None] - flat[None], axis=-1), d_in, atol=1e-4)


def test_pca_with_normalising_puts_query_and_key_centres_together():
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(40, 6)), rng.normal(size=(40, 6)) + 10
    pq, pk, _ = bw.project_qk(q, k, normalise=True)
    np.testing.assert_allclose(pq.mean(0), pk.mean(0), atol=1e-5)
    pq, pk, _ = bw.project_qk(q, k, normalise=False)
    assert np.linalg.norm(pq.mean(0) - pk.mean(0)) > 5  # the offset is the main axis otherwise


def test_pca_of_one_dimensional_vectors_has_a_flat_second_axis():
    pq, _, share = bw.project_qk(np.arange(5.0)[:, None], np.arange(5.0)[:, None] * 2, normalise=False)
    assert pq.shape == (5, 2) and np.all(pq[:, 1] == 0) and share[1] == 0


def test_a_query_row_and_its_top_keys():
    cap = random_capture()
    full = bw.head_weights(cap, 1, 3)
    row = bw.query_row(cap, 1, 3, 25)
    np.testing.assert_allclose(row, full[25], atol=1e-6)
    assert np.all(row[26:] == 0)  # causal
    top = bw.top_keys(row, 5)
    assert [k for k, _ in top] == list(np.argsort(-row, kind="stable")[:5])
    assert all(w1 >= w2 for (_, w1), (_, w2) in itertools.pairwise(top))
    with pytest.raises(IndexError):
        bw.query_row(cap, 0, 0, 40)


# -- token ranges and windows -------------------------------------------------------------------------


def test_overview_cells_name_their_token_ranges():
    tokens = [f"w{i}" for i in range(2048)]
    red = bw.Reduced(
        np.zeros((1024, 1024), np.float32), bw.cell_edges(2048, 1024), bw.cell_edges(2048, 1024), "max"
    )
    labels = lf.range_labels(red.row_edges, tokens)
    assert len(labels) == 1024 and labels[0] == "0–1 · w0…w1" and labels[-1] == "2046–2047 · w2046…w2047"
    assert red.reduced and red.ranges(1)[5] == (10, 11)
    fig = lf.overview_figure(red, tokens, "t", ticks=8)
    assert "reduced" in fig.layout.xaxis.title.text and "max" in fig.layout.yaxis.title.text
    assert fig.layout.xaxis.ticktext[1] == "256"  # a tick names its cell's first token


def test_a_box_over_the_overview_becomes_a_window_of_tokens():
    red = bw.Reduced(
        np.zeros((1024, 1024), np.float32), bw.cell_edges(2048, 1024), bw.cell_edges(2048, 1024), "max"
    )
    (queries, keys), cut = bw.box_window(red, xs=(9.6, 20.2), ys=(101.4, 99.7))  # y drawn upwards
    assert keys == (20, 42) and queries == (200, 204) and not cut
    (queries, keys), cut = bw.box_window(red, xs=(-3, 2000), ys=(500, 510))
    assert keys == (0, bw.MAX_WINDOW) and queries == (1000, 1022) and cut  # the top-left corner kept
    (queries, keys), _ = bw.box_window(red, xs=(1030, 1040), ys=(1023.4, 1023.4))
    assert keys == (2046, 2048) and queries == (2046, 2048)  # outside the cells: the last one


def test_fit_window_keeps_inside_and_at_most_512():
    assert bw.fit_window(100, 90, 200) == (90, 100)
    assert bw.fit_window(100, -5, 3) == (0, 3)
    assert bw.fit_window(5000, 10, 4000) == (10, 10 + bw.MAX_WINDOW)
    assert bw.fit_window(100, 150, 160) == (99, 100)  # at least one token


def test_window_figure_puts_the_tokens_on_its_axes():
    tokens = [f"tok{i}" for i in range(600)]
    fig = lf.window_figure(np.random.default_rng(0).random((20, 30)).astype(np.float32), tokens, 100, 50, "w")
    assert fig.layout.yaxis.categoryarray[0] == "100 · tok100"
    assert list(fig.layout.xaxis.categoryarray)[-1] == "79 · tok79"
    assert "tok50" in fig.layout.xaxis.ticktext and "full resolution" in fig.layout.xaxis.title.text


def test_sqrt_colours_keep_the_ends_and_put_half_the_colour_at_a_quarter_of_the_weight():
    fig = lf.sqrt_colours(lf.window_figure(np.eye(4, dtype=np.float32), list("abcd"), 0, 0))
    stops = fig.data[0].colorscale
    assert stops[0] == (0.0, "rgb(255,255,255)") and stops[-1] == (1.0, "rgb(8,48,107)")
    assert dict(stops)[0.25] == "rgb(132,152,181)"  # √0.25 = halfway from white to dark blue


# -- the model view -------------------------------------------------------------------------------------


@pytest.mark.parametrize("done", [None, 0, 12, 30])
def test_model_view_of_270_thumbnails_is_under_2_mb(done):
    thumbs = np.random.default_rng(0).random((30, 9, 32, 32)).astype(np.float32)  # noise: the worst case
    fig = lf.long_model_view(thumbs, done)
    size = len(pio.to_json(fig, validate=False).encode())
    assert size <= 2 * 2**20, size
    assert len(fig.data[1].customdata) == 270 and list(fig.data[1].customdata[-1]) == [29, 8]
    pending = [s for s in fig.layout.shapes if s.fillcolor == "#e5e5e5"]
    assert len(pending) == (1 if done is not None and done < 30 else 0)


def test_model_view_tiles_are_the_thumbnails_scaled_as_they_are():
    thumbs = np.zeros((2, 3, 32, 32), np.float32)
    thumbs[1, 2, 5, 7] = 0.5
    image = np.asarray(lf.long_model_view(thumbs).data[0].z)
    assert image[33 + 5, 2 * 33 + 7] == 254 and image[:32, :32].max() == 0  # one strong cell, unblurred


def test_the_page_and_the_command_line_draw_the_same_model_view():
    """The page draws the background summaries' thumbnails, ``cli.py figure --view model --text-file``
    those of ``blockwise.all_heads``: once every layer is in, the same figure, byte for byte."""
    cap = random_capture(n=70)
    page = lf.long_model_view(*lc.Summaries(cap).run().snapshot()[::2])  # thumbnails, layers done
    cli = lf.long_model_view(eh.all_heads(cap)[0])
    assert pio.to_json(page, validate=False) == pio.to_json(cli, validate=False)


def test_qk_figure_is_webgl_with_tokens_in_the_hover_and_the_top_keys_joined():
    n = 8192
    tokens = [f"t{i}" for i in range(n)]
    pts = np.random.default_rng(0).random((n, 2)).astype(np.float32)
    fig = lf.qk_figure(pts, pts, tokens, np.array([0.5, 0.2]), 100, [(3, 0.5), (99, 0.2)])
    assert {t.type for t in fig.data} == {"scattergl"}
    assert (
        fig.data[0].name == "queries" and fig.data[1].name == "keys" and fig.data[0].text[100] == "100 · t100"
    )
    assert len(fig.data[2].x) == 6  # two segments, each ended by a gap
    assert "50%" in fig.layout.xaxis.title.text


# -- uploads -----------------------------------------------------------------------------------------------


def test_uploads_are_utf8_text_or_one_line_why_not():
    assert lv.read_upload("a.txt", "héllo 你好".encode()) == ("héllo 你好", None)
    assert lv.read_upload("a.txt", b"\xef\xbb\xbfbom") == ("bom", None)
    text, why = lv.read_upload("latin.txt", "café".encode("latin-1"))
    assert text is None and "latin.txt is not UTF-8" in why and "0xe9" in why and "\n" not in why
    text, why = lv.read_upload("x.txt", b"PK\x03\x04\x00\x00")
    assert text is None and "binary" in why
    text, why = lv.read_upload("big.txt", b"a" * (4 * lv.MAX_CHARS + 1))
    assert text is None and "shorten" in why


def test_a_typed_text_travels_in_the_link_with_its_line_breaks_when_it_can():
    text = "First paragraph.\n\nSecond one."
    linked = lv._linkable(text)
    assert "\n" not in linked and linked.replace(lv.LINE, "\n") == text
    assert lv._linkable("a\tb") == "" and lv._linkable("x" * (lv.LINK_CHARS + 1)) == ""


def test_max_chars_is_the_captures():
    from attention_atlas.models.adapters import capture

    assert lv.MAX_CHARS == capture.MAX_CHARS


# -- the summaries in the background -------------------------------------------------------------------


def test_summaries_now_and_in_the_background_equal_all_heads():
    cap = random_capture()
    thumbs, table = eh.all_heads(cap, thumb=32)
    now = lc.Summaries(cap).run()
    got, frame, done = now.snapshot()
    assert done == 3 and now.complete
    np.testing.assert_array_equal(got, thumbs)
    assert frame.to_dict("records") == table
    background = lc.Summaries(cap)
    background.ask()
    deadline = time.monotonic() + 30
    while not background.complete and time.monotonic() < deadline:
        time.sleep(0.01)
    assert background.complete and background.error is None
    np.testing.assert_array_equal(background.snapshot()[0], thumbs)


def test_summaries_nobody_asks_for_stop_and_resume_where_they_were():
    cap = random_capture()
    idle = lc.Summaries(cap, idle=0.0)  # nobody looking: the job stops before any layer
    idle.ask()
    idle.job.thread.join(10)
    assert idle.done == 0 and idle.job.state == "idle"
    idle._keep(0, bw.layer_summary(cap, 0), 0.0)
    idle.job.idle = 60.0
    idle.ask()
    idle.job.thread.join(30)
    assert idle.complete and len(idle.snapshot()[1]) == 3 * 4
    assert idle.snapshot()[1]["layer"].tolist() == sorted(idle.snapshot()[1]["layer"].tolist())


def test_an_error_in_the_background_is_kept_for_the_page():
    cap = random_capture()
    broken = lc.Summaries(cap)
    broken._thumbs = np.zeros(0)  # the thread's first layer fails to store its thumbnails
    broken.ask()
    broken.job.thread.join(10)
    assert broken.error and "IndexError" in broken.error and broken.done == 0


# -- the first text --------------------------------------------------------------------------------------


def test_the_bundled_first_text_is_tatoeba_english_sentences():
    with gzip.open(CORPORA / "translation" / "eng_fra.tsv.gz", "rt", encoding="utf-8") as f:
        english = {line.split("\t")[0] for line in f}
    paragraphs = lc.SAMPLE.read_text(encoding="utf-8").strip().split("\n\n")
    sentences = [s for p in paragraphs for s in _sentences(p)]
    assert len(paragraphs) == 43 and len(sentences) == 258
    assert all(s in english for s in sentences), [s for s in sentences if s not in english][:3]


def _sentences(paragraph: str) -> list[str]:
    """Six sentences a paragraph, each ending in . ! or ? followed by a space (or the end)."""
    out, start = [], 0
    for i, ch in enumerate(paragraph):
        if ch in ".!?" and (i + 1 == len(paragraph) or paragraph[i + 1] == " "):
            out.append(paragraph[start : i + 1].strip())
            start = i + 1
    return out
