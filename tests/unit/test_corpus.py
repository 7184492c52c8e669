"""The corpus run on tiny models: padded batches reduce to what each text gives alone, the store
resumes a cancelled or crashed run, a second look reads the store, the search ranks hits."""

import numpy as np
import pytest
import torch

from attention_atlas.models.corpus import queries
from attention_atlas.models.corpus.extract import Forward, HFExtractor, Options, plan
from attention_atlas.models.corpus.inputs import Corpus
from attention_atlas.models.corpus.run import Cancelled, planned, run_corpus
from attention_atlas.models.corpus.stats import reduce_batch
from attention_atlas.models.corpus.store import Store
from attention_atlas.viz_core import head_stats
from attention_atlas.viz_core.stats import head_table

TEXTS = [
    "The cat sat on the mat.",
    "A dog.",
    "The cat and the dog ran after the ball while the rain fell over the town.",
    "Rain.",
    "<b>the</b> & cat",
    "两个黄鹂鸣翠柳",
    "the the the cat",
    "Over the town the rain fell.",
]


@pytest.fixture(scope="module")
def tiny(tiny_hf_folders, one_thread):
    from attention_atlas.models.adapters.hf import HFAdapter

    return {f: HFAdapter(f"tiny-{f}", tiny_hf_folders[f], torch.device("cpu")) for f in ("encoder", "causal")}


def alone(adapter, text):
    """``head_table`` of the adapter's own record of ``text``: the reference a corpus row must equal."""
    rec = adapter.run(text).records["self"]
    return head_table(rec.weights, rec.meta["key_special"]), rec


def test_padded_random_batch_reduces_to_each_text_alone(one_thread):
    gen = torch.Generator().manual_seed(0)
    lengths = torch.tensor([7, 3, 5])
    scores = torch.randn(3, 2, 4, 7, 7, generator=gen)
    keys = torch.arange(7)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~keys[:, None, None, None, :], float("-inf"))
    w = torch.softmax(scores, -1)
    special = torch.zeros(3, 7, dtype=torch.bool)
    special[:, 0] = True
    red = reduce_batch(w, lengths, lengths, special & keys, np.array([10, 11, 12]), top_k=4)
    for b, n in enumerate(lengths.tolist()):
        sub = w[b, :, :, :n, :n].numpy()
        ref = head_table(sub, [True] + [False] * (n - 1))
        rows = red.stats["text_id"] == 10 + b
        for column in head_stats.NAMES:  # every statistic, under the name the tables use
            assert np.allclose(red.stats[column][rows], ref[column], atol=1e-6), column
        assert list(red.stats["pattern"][rows]) == list(ref["pattern"])
        link = red.links["text_id"] == 10 + b
        assert link.sum() == n * 2 * 4  # every real query row × layer × head, no padding rows
        top1 = sub.transpose(2, 0, 1, 3).reshape(-1, n).argmax(-1)  # [(query, layer, head)]
        assert np.array_equal(red.links["key1"][link], top1)
        if n < 4:  # fewer keys than k: the missing ones are -1 with weight 0
            assert (red.links["key4"][link] == -1).all() and (red.links["w4"][link] == 0).all()


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_batched_statistics_equal_the_adapters_own_record(tiny, family):
    adapter = tiny[family]
    ex = HFExtractor(adapter, Options(top_k=2))
    batch = ex.run(list(range(len(TEXTS))), TEXTS)
    stats = batch.reduced.stats
    for i, text in enumerate(TEXTS):
        ref, rec = alone(adapter, text)
        rows = stats["text_id"] == i
        assert (stats["n_tokens"][rows] == len(rec.key_tokens)).all()
        for column in head_stats.NAMES:
            assert np.allclose(stats[column][rows], ref[column], atol=1e-5), (text, column)
        tokens = batch.tokens["token"][batch.tokens["text_id"] == i]
        assert list(tokens) == list(rec.query_tokens)


def test_batch_plan_sorts_by_length_and_keeps_the_cell_budget():
    lengths = [5, 500, 6, 7, 480, 5]
    batches = plan(lengths, list(range(6)), Options(batch_size=3), cells_per_token2=72)
    assert sorted(i for b in batches for i in b) == list(range(6))
    assert batches[0] == [0, 5, 2]  # the shortest together
    assert all(len(b) * max(lengths[i] for i in b) ** 2 * 72 <= 24_000_000 or len(b) == 1 for b in batches)


def test_cancel_then_resume_gives_the_rows_of_one_uninterrupted_run(tiny, tmp_path):
    corpus = Corpus("t", TEXTS * 3)
    options = Options(batch_size=4)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 2  # after two batches

    with pytest.raises(Cancelled, match="run again"):
        run_corpus(
            "tiny-encoder", corpus, options, adapter=tiny["encoder"], folder=tmp_path / "a", should_stop=stop
        )
    seen = []
    store = run_corpus(
        "tiny-encoder", corpus, options, adapter=tiny["encoder"], folder=tmp_path / "a", progress=seen.append
    )
    assert seen[0].started_with == 8 and seen[-1].done == len(corpus.texts)
    whole = run_corpus("tiny-encoder", corpus, options, adapter=tiny["encoder"], folder=tmp_path / "b")
    with store, whole:
        a, b = store.stats_frame(), whole.stats_frame()
        assert len(a) == len(corpus.texts) * 2 * 2
        assert a.equals(b)
        assert store.complete and store.counts() == {"texts": 24, "done": 24, "failed": 0}


def test_a_crash_keeps_the_batches_written_before_it(tiny, tmp_path, monkeypatch):
    corpus = Corpus("t", TEXTS * 2)
    real = HFExtractor.run
    calls = []

    def crash_on_third(self, ids, texts):
        calls.append(ids)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as if the process were cut off mid-batch
        return real(self, ids, texts)

    monkeypatch.setattr(HFExtractor, "run", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        run_corpus("tiny-encoder", corpus, Options(batch_size=4), adapter=tiny["encoder"], folder=tmp_path)
    (path,) = tmp_path.glob("*.duckdb")
    with Store.open(path) as store:
        assert store.counts()["done"] == 8 and not store.complete
    monkeypatch.setattr(HFExtractor, "run", real)
    with run_corpus(
        "tiny-encoder", corpus, Options(batch_size=4), adapter=tiny["encoder"], folder=tmp_path
    ) as s:
        assert s.complete and s.counts()["done"] == 16


def test_a_second_look_reads_the_store_without_the_model(tiny, tmp_path):
    corpus = Corpus("t", TEXTS)
    run_corpus("tiny-encoder", corpus, adapter=tiny["encoder"], folder=tmp_path).close()

    class NoModel:
        model_id = "tiny-encoder"

        def __getattr__(self, name):
            raise AssertionError("the model was used for a finished corpus")

    with run_corpus("tiny-encoder", corpus, adapter=NoModel(), folder=tmp_path) as store:
        assert store.complete
    assert len(list(tmp_path.glob("*.duckdb"))) == 1
    other = run_corpus("tiny-encoder", corpus, Options(top_k=1), adapter=tiny["encoder"], folder=tmp_path)
    other.close()
    assert len(list(tmp_path.glob("*.duckdb"))) == 2  # options are part of the key
    with Store.open(next(tmp_path.glob("*.duckdb"))) as store:  # the columns the tables use
        assert list(store.stats_frame().columns)[5:] == [*head_stats.NAMES, "pattern"]


def test_a_store_with_other_statistics_is_another_store(tiny, tmp_path, monkeypatch):
    from attention_atlas.models.corpus import extract

    corpus = Corpus("t", TEXTS)
    with run_corpus("tiny-encoder", corpus, adapter=tiny["encoder"], folder=tmp_path) as store:
        made_with = store.meta["options"]
    assert made_with == Options().key()
    monkeypatch.setattr(extract, "STAT_COLUMNS", (*head_stats.NAMES[:-1], "renamed_share"))
    assert Options().key() != made_with  # a store of other columns is never opened as this one


def test_search_ranks_a_heads_strongest_attention_from_a_token(tiny, tmp_path):
    with run_corpus("tiny-encoder", Corpus("t", TEXTS), adapter=tiny["encoder"], folder=tmp_path) as store:
        hits = queries.search(store, 1, 1, "THE")
        assert len(hits) > 5 and set(hits["token"]) == {"the"}
        assert list(hits["weight"]) == sorted(hits["weight"], reverse=True)
        first = hits.iloc[0]
        _, rec = alone(tiny["encoder"], TEXTS[first.text_id])
        row = rec.weights[1, 1, first.pos]
        assert first.key_pos == row.argmax() and abs(first.weight - row.max()) < 1e-5
        assert first.key_token == rec.key_tokens[first.key_pos] and first.text == TEXTS[first.text_id]
        assert set(queries.search(store, 1, 1, "ca*")["token"]) == {"cat"}
        to = queries.search(store, 1, 1, "the", to="[CLS]")
        assert (to["key_token"] == "[CLS]").all()
        assert queries.search(store, 1, 1, "50%_").empty  # SQL wildcards are plain characters
        with pytest.raises(ValueError, match="type a token"):
            queries.search(store, 1, 1, "  ")
        overview = queries.head_overview(store)
        assert len(overview) == 2 * 2 and (overview["texts"] == len(TEXTS)).all()
        values = queries.head_values(store, 1, 1, "entropy")
        assert len(values) == len(TEXTS)
        with pytest.raises(ValueError, match="unknown statistic"):
            queries.head_values(store, 1, 1, "entropy; DROP TABLE stats")


def test_a_second_run_of_the_same_store_is_refused_while_one_fills_it(tiny, tmp_path):
    from attention_atlas.models.corpus.store import StoreError

    corpus = Corpus("t", TEXTS)

    def nested(progress):
        if progress.done == 0:  # the outer run holds the store: the inner one must not write it too
            with pytest.raises(StoreError, match="being filled by another run"):
                run_corpus("tiny-encoder", corpus, adapter=tiny["encoder"], folder=tmp_path)

    with run_corpus(
        "tiny-encoder", corpus, adapter=tiny["encoder"], folder=tmp_path, progress=nested
    ) as store:
        assert store.counts()["done"] == len(TEXTS)


def batches_of(ex, texts, options):
    return planned(ex, texts, list(range(len(texts))), options)


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_the_traced_graph_a_ray_actor_runs_gives_the_models_rows(tiny, family):
    """A Ray actor runs the driver's traced graph on batches the driver tokenized, without
    transformers: every row must be the model's own, bit for bit."""
    from attention_atlas.models.corpus.ray_run import load_graph, traced

    options = Options(top_k=2, batch_size=3)
    ex = HFExtractor(tiny[family], options)
    batches = batches_of(ex, TEXTS, options)
    graph = traced(ex, batches, TEXTS)
    assert graph is not None
    forward = Forward(load_graph(graph), ex.adapter.model_id, options.top_k)
    for ids in batches:
        texts = [TEXTS[i] for i in ids]
        want, got = ex.run(ids, texts), forward.run(*ex.prepare(ids, texts))
        for table in ("stats", "links"):
            a, b = getattr(want.reduced, table), getattr(got.reduced, table)
            assert a.keys() == b.keys() and all(np.array_equal(a[c], b[c]) for c in a)
        assert all(np.array_equal(want.tokens[c], got.tokens[c]) for c in want.tokens)
        assert all(np.array_equal(want.texts[c], got.texts[c]) for c in want.texts)


def test_a_graph_that_differs_from_the_model_is_not_used(tiny, monkeypatch):
    """The tracer keeps a Python number taken from a shape as a constant: such a graph gives other
    weights at other lengths, and the check against the model catches it."""
    from attention_atlas.models.corpus import ray_run

    real = ray_run._Attention

    def shape_bound(model):
        inner = real(model)

        class Bound(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, ids, mask):
                length = int(ids.shape[1])  # a constant in the trace, the true length when run as is
                return tuple(w * (length / ids.shape[1]) for w in self.inner(ids, mask))

        return Bound()

    monkeypatch.setattr(ray_run, "_Attention", shape_bound)
    options = Options(top_k=2, batch_size=3)
    ex = HFExtractor(tiny["encoder"], options)
    assert ray_run.traced(ex, batches_of(ex, TEXTS, options), TEXTS) is None


def test_a_batch_that_fails_falls_back_to_its_texts_one_by_one(tiny):
    """A forward that fails on a whole batch still gives each text that runs alone, and the reason
    of each that does not."""
    ex = HFExtractor(tiny["encoder"], Options(top_k=2))
    ids = list(range(4))
    parts, failed = ex.prepare(ids, TEXTS[:4])
    want = ex.run(ids, TEXTS[:4])

    def attend(ids, mask):
        if ids.shape[0] > 1 or ids.shape[1] > 10:
            raise RuntimeError("out of memory\n(batch)")
        return ex.attend(ids, mask)

    got = Forward(attend, "tiny-encoder", 2).run(parts, failed)
    long = [i for i in ids if int(parts[0].lengths[i]) > 10]
    assert long and got.failed == [(i, "out of memory (batch)") for i in long]
    kept = np.isin(want.reduced.stats["text_id"], got.reduced.stats["text_id"])
    assert np.allclose(want.reduced.stats["entropy"][kept], got.reduced.stats["entropy"], atol=1e-5)
