"""The Patching tab of "Inside a prediction" (issue 39) under AppTest with SmolLM2: the first load
teaches (SmolLM2 answers " Paris" on the clean prompt and " Rome" on the corrupted one, said before the
maps), each map is what ``models.analysis.patching`` computes on its own, the kind and the prompts
travel in the URL, the ranked heads link to the Transformer page, and a pair of different lengths is
one line. Each test runs SmolLM2's patching (tens of seconds on a busy 2-core machine): slow."""


import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models import registry
from attention_atlas.models.analysis import patching as pt
from attention_atlas.ui.patching_views import EXAMPLE
from tests.support import PACKAGE, chart, page_runner, z_of

PAGE = "app_pages/prediction.py"
run = page_runner(PAGE, 600)
pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def smollm2():
    return registry.load("smollm2", torch.device("cpu"))


@pytest.fixture(scope="module")
def own(smollm2):
    return pt.patching(smollm2, *EXAMPLE)


@pytest.fixture(scope="module")
def opened():
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=600)
    at.query_params["tab"] = "Patching"
    return run(at)


def test_the_first_load_teaches_and_draws_the_models_own_patching(opened, own):
    said = " ".join(c.value for c in opened.caption)
    assert "Clean prompt: P(' Paris')" in said
    (pa, pw), (ca, cw) = own.probs_clean, own.probs_corrupt
    assert pa > pw and cw > ca  # SmolLM2 answers both prompts as the lesson needs
    assert not opened.warning
    z = z_of(chart(opened, "patch_map")["data"][0])
    assert z.shape == own.resid.shape and np.allclose(z, own.resid, atol=1e-4)
    differ = own.differ
    assert differ and own.resid[0, differ].sum() > 0.9  # the subject's tokens carry the answer at the input


def test_the_heads_map_its_links_and_one_layers_heads_by_position(opened, own, smollm2):
    at = opened
    at.radio(key="patch_kind").set_value("heads")
    at = run(at)
    assert at.query_params["kind"] == ["heads"] or at.query_params["kind"] == "heads"
    z = z_of(chart(at, "patch_map")["data"][0])
    assert np.allclose(z, own.heads, atol=1e-4)
    layer, head, _ = max(
        ((lay, h, v) for lay, row in enumerate(own.heads) for h, v in enumerate(row)), key=lambda t: abs(t[2])
    )
    ranked = next(m.value for m in at.markdown if "Heads with the largest effect" in m.value)
    first = ranked.splitlines()[1]
    assert f"layer {layer}, head {head}" in first
    assert "(./transformer?model=smollm2&text=The%20Eiffel%20Tower" in first and f"&layer={layer}&head={head})" in first
    assert at.select_slider(key="patch_layer").value == layer  # the strongest head's layer first
    z = z_of(chart(at, "patch_positions")["data"][0])
    assert np.allclose(z, pt.head_positions(smollm2, *EXAMPLE, layer=layer), atol=1e-4)


def test_prompts_of_different_lengths_are_one_line(opened):
    at = opened
    at.text_input(key="patch_corrupt").set_value("The big old Colosseum is in the city of")
    at = run(at)
    said = [w.value for w in at.warning]
    assert len(said) == 1 and "first differ at token" in said[0] and "\n" not in said[0]


def test_a_swapped_word_makes_the_corrupted_prompt_or_says_why_not(opened):
    """The helper under the prompts: a word of the clean prompt swapped for one of as many tokens
    becomes the corrupted prompt (and is patched); one of other length is refused in one line and
    the corrupted prompt stays as it was."""
    at = opened
    odd = "The big old Colosseum is in the city of"  # one token more: nothing is patched
    at.text_input(key="patch_corrupt").set_value(odd)
    at = run(at)
    at.text_input(key="patch_old").set_value("Eiffel Tower")
    at.text_input(key="patch_new").set_value("Big Ben")  # 3 tokens for 4
    at.button(key="patch_swap").click()
    at = run(at)
    said = [w.value for w in at.warning]
    assert "'Eiffel Tower' → 'Big Ben' makes 8 tokens of 9" in said[0] and all("\n" not in w for w in said)
    assert at.text_input(key="patch_corrupt").value == odd
    at.text_input(key="patch_new").set_value("Colosseum")
    at.button(key="patch_swap").click()
    at = run(at)
    assert at.text_input(key="patch_corrupt").value == EXAMPLE[1] and not at.warning
    assert chart(at, "patch_map")  # patched again (the first load's pair: shared, not recomputed)
