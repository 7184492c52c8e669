"""32,768 tokens (issue 26): a tiny random Qwen2 with grouped key-value heads and a 32k context
(built from transformers' config, its folder opened as the page opens a model) captures a 32,768-
token text, its queries and keys in mapped files, and every long-input view draws from them.

Eager attention at 32k would need 4 × 32,768² floats a layer, so the weights are checked two ways
that need no such tensor: a causal model's first 512 rows read only the first 512 tokens, so they
equal transformers' own eager attention of the 512-token prefix; and the last rows equal a plain
float64 softmax of the captured queries and keys, written here."""

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.adapters.hf import HFAdapter
from attention_atlas.models.adapters.minilm import model_folder
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import sentences as sn
from harness.tiny_variants import tiny_variant
from tests.support import hf_folder

pytestmark = pytest.mark.slow
N = 32_768
SENTENCES = ["the cat sat on the mat .", "a dog ran after the red ball !", "why did the bird sing ?"]


@pytest.fixture(scope="module")
def long(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen2_32k")
    model = tiny_variant("qwen2_no_window", num_hidden_layers=2, max_position_embeddings=N)
    adapter = HFAdapter("tiny-qwen2-32k", hf_folder(model, folder / "model"), torch.device("cpu"))
    # minilm's WordPiece (one token a word here; transformers would give a Qwen2 folder its
    # byte-level class over that vocabulary, one token a letter), its 512-token limit lifted
    adapter.tokenizer = AutoTokenizer.from_pretrained(model_folder(), model_max_length=N)
    words = " ".join(SENTENCES[i % 3] for i in range(N // 7 + 1)).split()[: N - 1]  # + [CLS] (no [SEP]: a causal LM)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATLAS_CACHE", str(folder / "cache"))
        cap = cp.capture(adapter, " ".join(words))
    return adapter, cap, words


def test_the_capture_holds_32768_tokens_in_mapped_files(long):
    _, cap, _ = long
    assert cap.n_tokens == N and cap.mapped
    assert cap.nbytes == 2 * (4 + 2) * N * 8 * 4  # layers × (query + key heads) × tokens × dim × float32


def test_the_first_rows_equal_eager_attention_of_the_prefix(long):
    adapter, cap, words = long
    ids = cp.encode_long(adapter, " ".join(words)).ids[:, :512]
    with torch.no_grad():
        eager = adapter.model(input_ids=ids, output_attentions=True).attentions
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            got = bw.head_rows(cap, layer, head, 0, 512)
            assert np.abs(got[:, :512] - eager[layer][0, head].numpy()).max() < 1e-5
            assert not got[:, 512:].any()  # a causal model: nothing after the prefix


def test_the_last_rows_equal_a_plain_softmax_of_the_captured_q_and_k(long):
    _, cap, _ = long
    layer, head = 1, 3
    q, k = (a.astype(np.float64) for a in cap.head_qk(layer, head))
    for query in (N - 1, N - 300):
        scores = q[query] @ k[: query + 1].T * cap.scaling[layer]
        want = np.exp(scores - scores.max())
        want /= want.sum()
        got = bw.query_row(cap, layer, head, query)
        assert np.abs(got[: query + 1] - want).max() < 1e-5 and not got[query + 1 :].any()


def test_every_long_input_view_draws_at_32768_tokens(long):
    _, cap, _ = long
    layer, head = 0, 1
    red = bw.reduce_head(cap, layer, head)  # the overview, max-pooled to 1024²
    assert red.values.shape == (1024, 1024) and red.row_edges[-1] == N
    (queries, keys), cut = bw.box_window(red, (900.0, 910.0), (1000.0, 1010.0))  # 11 × 11 cells near the end
    win = bw.window(cap, layer, head, queries, keys)
    assert win.shape == (queries[1] - queries[0], keys[1] - keys[0]) and not cut
    assert np.isclose(win.max(), red.values[1000:1011, 900:911].max(), rtol=1e-6)  # the max-pooled cells
    parts = sn.spans(cap.tokens, "sentence")
    assert len(parts) > 4000  # about 4,700 sentences of 7 words
    spans = sn.by_span(cap, layer, head, parts)
    assert np.allclose(spans.sum(1), 1, atol=1e-4)  # each query sentence's rows still sum to 1
    thumb, row = bw.head_summary(cap, layer, head)  # a model-view tile and its statistics (each head's)
    assert thumb.shape == (32, 32) and np.isclose(thumb.max(), red.values.max(), rtol=1e-6)
    assert row["layer"] == layer and np.isfinite([v for v in row.values() if isinstance(v, float)]).all()
    qxy, kxy, _ = bw.project_qk(*cap.head_qk(layer, head))
    assert qxy.shape == kxy.shape == (N, 2)
