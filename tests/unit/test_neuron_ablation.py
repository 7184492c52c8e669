"""The neuron view's numbers and head ablation on tiny models (a BERT encoder, a GPT-2 decoder, our
couplet Transformer, uploads of both kinds): the neuron view's weights are softmax(q·k/√d) of the
captured vectors and the record's own weights; ablating no head changes nothing, ablating a head
changes nothing before its layer, and ablating a whole layer equals a model whose output
projection of that layer gets zeros (its weight set to 0: an independent construction)."""

import copy

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters.hf import HFAdapter
from attention_atlas.models.analysis import ablation
from attention_atlas.models.analysis.neuron import head_vectors, supports
from attention_atlas.models.uploads.loader import load_bytes
from attention_atlas.viz_core.neuron import neuron
from attention_atlas.viz_core.neuron_figure import neuron_figure, neuron_frame
from tests.support import UPPER, folder_zip, qk_weights

CPU = torch.device("cpu")
TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def tiny(tiny_hf_folders):
    return {name: HFAdapter(f"tiny-{name}", folder, CPU) for name, folder in tiny_hf_folders.items()}


@pytest.fixture(scope="module")
def couplet(tiny_transformer_checkpoint):
    """Our Transformer as an uploaded checkpoint: the adapter the Checkpoint inspector gets."""
    return load_bytes(tiny_transformer_checkpoint.read_bytes(), "tiny.safetensors", device=CPU).adapter


def check_neuron(adapter, text: str, kind: str, target=None) -> None:
    """Every layer, head and query: the neuron view's weights are softmax(q·k/√d) and the record's."""
    vectors = head_vectors(adapter, text, kind)
    record = adapter.run(text, target=target).records[kind]
    assert vectors.query_tokens == record.query_tokens and vectors.key_tokens == record.key_tokens
    for layer in range(record.n_layers):
        for head in range(record.n_heads):
            q, k = vectors.head(layer, head)
            expected = qk_weights(q, k, vectors.causal)
            assert np.allclose(vectors.scaling[layer], q.shape[-1] ** -0.5)
            for query in range(len(record.query_tokens)):
                n = neuron(vectors, layer, head, query)
                assert np.allclose(n.weights, expected[query], atol=1e-5)
                assert np.allclose(n.weights, record.weights[layer, head, query], atol=1e-5)
                assert np.allclose(n.products.sum(-1)[n.seen] * n.scaling, n.scores[n.seen])


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_neuron_view_of_tiny_hugging_face_models(tiny, family):
    check_neuron(tiny[family], TEXT, "self")


def test_neuron_view_of_an_uploaded_hugging_face_folder(tiny_hf_folders):
    upload = load_bytes(folder_zip(tiny_hf_folders["encoder"], "tiny"), "tiny.zip", device=CPU)
    check_neuron(upload.adapter, TEXT, "self")


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_neuron_view_of_an_uploaded_couplet_transformer(couplet, kind):
    check_neuron(couplet, UPPER, kind)


def test_causal_neuron_hides_later_keys(tiny):
    vectors = head_vectors(tiny["causal"], TEXT, "self")
    n = neuron(vectors, 1, 1, 2)
    assert n.seen.tolist()[:4] == [True, True, True, False]
    assert np.isnan(n.scores[3:]).all() and (n.weights[3:] == 0).all()


def test_neuron_refusals_are_one_line(tiny, tiny_rnn_checkpoint):
    assert "encoder–decoder" in supports(tiny["seq2seq"])
    rnn = load_bytes(tiny_rnn_checkpoint.read_bytes(), "rnn.safetensors", device=CPU).adapter
    assert "not a Transformer" in supports(rnn)
    with pytest.raises(ValueError, match="layer 9 is outside"):
        neuron(head_vectors(tiny["encoder"], TEXT, "self"), 9, 0, 0)


def test_neuron_figure_and_frame(tiny):
    vectors = head_vectors(tiny["causal"], TEXT, "self")
    n = neuron(vectors, 0, 1, 3)
    fig = neuron_figure(n, vectors.key_tokens, vectors.query_tokens[3])
    kinds = [t.type for t in fig.data]
    assert kinds == ["heatmap", "heatmap", "heatmap", "bar", "bar"]
    assert np.allclose(np.asarray(fig.data[4].x), n.weights, atol=1e-6)
    assert fig.data[1].y[0].startswith("0 · ")
    frame = neuron_frame(n, vectors.key_tokens)
    assert len(frame) == n.keys.size and np.allclose(frame.groupby("key_pos")["weight"].first(), n.weights)


# -- head ablation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_ablating_no_heads_changes_nothing(tiny, family):
    adapter = tiny[family]
    before = adapter.run(TEXT).records["self"].weights
    after = ablation.ablated_run(adapter, TEXT, "self", []).records["self"].weights
    assert np.array_equal(before, after) and ablation.hooks_installed() == 0


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_ablating_a_head_changes_only_later_layers(tiny, family):
    adapter = tiny[family]
    before = adapter.run(TEXT).records["self"].weights
    after = ablation.ablated_run(adapter, TEXT, "self", [(0, 1)]).records["self"].weights
    assert np.allclose(before[0], after[0], atol=1e-6)  # the layer's own weights come before its output
    assert np.abs(before[1] - after[1]).max() > 1e-6  # random tiny weights: near-uniform heads move little
    assert ablation.hooks_installed() == 0


def test_ablating_a_layer_equals_zeroing_its_output_projection(tiny):
    adapter = tiny["causal"]
    layer = 0
    heads = [(layer, h) for h in range(adapter.n_heads)]
    ablated = ablation.next_token(adapter, TEXT, heads)
    twin = copy.deepcopy(adapter.model)
    proj = twin.transformer.h[layer].attn.c_proj  # written out by hand: GPT-2's output projection
    with torch.no_grad():
        proj.weight.zero_()  # o_proj(x) = x W + b: a zero weight is a zero input
        logits = twin(input_ids=adapter.encode(TEXT).ids).logits[0, -1]
    assert np.allclose(np.log(ablated), torch.log_softmax(logits, -1).numpy(), atol=1e-5)
    assert np.abs(np.log(ablated) - np.log(ablation.next_token(adapter, TEXT))).max() > 1e-3


def test_ablating_an_encoder_head_of_our_transformer(couplet):
    base = couplet.run(UPPER)
    after = ablation.ablated_run(couplet, UPPER, "encoder_self", [(1, 2)], target=base.output).records
    assert np.allclose(base.records["encoder_self"].weights[:2], after["encoder_self"].weights[:2], atol=1e-6)
    assert np.abs(base.records["encoder_self"].weights[2] - after["encoder_self"].weights[2]).max() > 1e-4
    assert np.abs(base.records["cross"].weights - after["cross"].weights).max() > 1e-4


def test_ablation_refusals(tiny, couplet):
    with pytest.raises(ablation.AblationError, match="layer 5, head 0 does not exist"):
        ablation.ablated_run(tiny["encoder"], TEXT, "self", [(5, 0)])
    with pytest.raises(ablation.AblationError, match="not a causal language model"):
        ablation.next_token(tiny["encoder"], TEXT)
    with pytest.raises(ablation.AblationError, match="encoders, causal models"):
        ablation.sites(tiny["seq2seq"])
    assert ablation.hooks_installed() == 0


def test_ablation_acts_only_in_the_thread_that_asked(tiny):
    """A forward another session runs on the shared model while a head is off is untouched."""
    import threading

    adapter = tiny["encoder"]
    before = adapter.run(TEXT).records["self"].weights
    seen = {}
    with ablation.heads_off(adapter, "self", [(0, 0), (0, 1)]):
        thread = threading.Thread(target=lambda: seen.update(w=adapter.run(TEXT).records["self"].weights))
        thread.start()
        thread.join()
    assert np.array_equal(seen["w"], before)


# -- the real models (read their weights: slow) --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model_id", "kinds"),
    [
        ("minilm", ["self"]),
        ("smollm2", ["self"]),
        ("couplet-transformer", ["encoder_self", "decoder_self", "cross"]),
    ],
)
def test_neuron_view_of_the_bundled_models(model_id, kinds):
    from attention_atlas.models.registry import info, load

    adapter = load(model_id, "cpu")
    for kind in kinds:
        check_neuron(adapter, info(model_id).example, kind)


@pytest.mark.slow
def test_ablation_of_smollm2_layers_and_its_zeroed_output_projection():
    """SmolLM2 (Llama-style, grouped key-value heads): heads found at ``self_attn.o_proj``."""
    from attention_atlas.models.registry import info, load

    adapter = load("smollm2", "cpu")
    text = info("smollm2").example
    before = adapter.run(text).records["self"].weights
    after = ablation.ablated_run(adapter, text, "self", [(4, 3)]).records["self"].weights
    assert np.allclose(before[:5], after[:5], atol=1e-6) and np.abs(before[5:] - after[5:]).max() > 1e-3
    ablated = ablation.next_token(adapter, text, [(4, h) for h in range(adapter.n_heads)])
    twin = copy.deepcopy(adapter.model)
    with torch.no_grad():
        twin.model.layers[4].self_attn.o_proj.weight.zero_()
        logits = twin(input_ids=adapter.encode(text).ids).logits[0, -1]
    assert np.allclose(np.log(ablated), torch.log_softmax(logits, -1).numpy(), atol=1e-4)


def test_the_lens_at_the_last_position_before_and_after_heads_are_off(tiny):
    from attention_atlas.models.analysis import lens

    adapter, off = tiny["causal"], [(1, 0), (1, 1)]  # the last layer's heads, all of them
    top, probs = ablation.lens_at_last(adapter, TEXT)
    grid = lens.top_tokens(lens.residuals(adapter.model, adapter.encode(TEXT).ids), 1)
    assert np.array_equal(top, grid.top_ids[:, -1, 0]) and np.allclose(probs, grid.top_probs[:, -1, 0])
    off_top, off_probs = ablation.lens_at_last(adapter, TEXT, off)
    assert off_top[0] == top[0] and np.isclose(off_probs[0], probs[0], rtol=1e-6)  # block 0 comes before
    assert not np.isclose(off_probs[-1], probs[-1], rtol=1e-4, atol=0)  # after the switched-off layer: moved
    nxt = ablation.next_token(adapter, TEXT, off)  # the last row is the model's own next token
    assert off_top[-1] == nxt.argmax() and np.isclose(off_probs[-1], nxt.max(), rtol=1e-4)
    assert ablation.hooks_installed() == 0
    with pytest.raises(ablation.AblationError, match="not a causal language model"):
        ablation.lens_at_last(tiny["encoder"], TEXT)
