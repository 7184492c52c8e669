"""The corpus run on the bundled and pretrained models: every row equals what the adapter's own
record of that text gives (cross attention of our seq2seq models, smollm2's causal heads)."""

import numpy as np
import pytest

from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.inputs import sample
from attention_atlas.models.corpus.run import run_corpus
from attention_atlas.viz_core.stats import head_table


def check_rows(store, adapter, texts, kind, ids):
    stats = store.stats_frame()
    for text_id in ids:
        rec = adapter.run(texts[text_id]).records[kind]
        ref = head_table(rec.weights, rec.meta.get("key_special"))
        rows = stats[stats["text_id"] == text_id].reset_index(drop=True)
        assert len(rows) == rec.n_layers * rec.n_heads
        assert (rows["n_tokens"] == len(rec.key_tokens)).all()
        assert np.allclose(rows["entropy"], ref["entropy"], atol=1e-5)
        assert np.allclose(rows["mean_distance"], ref["mean_distance"], atol=1e-5)
        assert list(rows["pattern"]) == list(ref["pattern"])


@pytest.mark.parametrize("kind", [None, "encoder_self"])
def test_couplet_transformer_rows_equal_its_records(bundled_couplet_transformer, tmp_path, kind):
    corpus = sample("couplets", 12)
    options = Options(kind=kind, batch_size=5)
    with run_corpus("couplet-transformer", corpus, options, adapter=bundled_couplet_transformer,
                    folder=tmp_path) as store:  # fmt: skip
        assert store.meta["kind"] == (kind or "cross")
        check_rows(store, bundled_couplet_transformer, corpus.texts, kind or "cross", [0, 5, 11])
        tokens = store.frame("SELECT count(*) AS n FROM key_tokens")["n"][0]
        assert tokens == store.frame("SELECT sum(n_tokens) AS n FROM facts")["n"][0]


@pytest.mark.slow
def test_smollm2_padded_batches_equal_its_records(tmp_path):
    from attention_atlas.models.registry import load

    adapter = load("smollm2")
    corpus = sample("english", 10)
    with run_corpus("smollm2", corpus, Options(batch_size=10), adapter=adapter, folder=tmp_path) as store:
        facts = store.frame("SELECT text_id, n_tokens FROM facts ORDER BY n_tokens, text_id")
        assert facts["n_tokens"].nunique() > 1  # the batch was padded
        shortest, longest = int(facts["text_id"].iloc[0]), int(facts["text_id"].iloc[-1])
        check_rows(store, adapter, corpus.texts, "self", [shortest, longest])
