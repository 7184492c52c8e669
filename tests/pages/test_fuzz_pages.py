"""Fuzz every page's inputs under AppTest (issue 15): ``PER_PAGE`` distinct hostile texts each.

The text fields of Scoring (a real model's text), Transformer heads, Couplets (upper line,
forced lower line), Translation (English, forced French) and the Checkpoint inspector (after
its demo upload: input, forced output); Positional and Pooling have no text field, so their
hostile input is the link: each generated text goes into one of their URL settings. Texts reach
a page as a browser sends them (UTF-8 on the wire: a lone surrogate arrives as U+FFFD). One AppTest
per page, rerun for each input. No input may raise (no exception element), and every error
or warning the page shows is one line. Slow: 0.1 to 2 seconds per run.
"""

from __future__ import annotations

import pytest

from tests.support import fuzz_examples, one_line, page_runner

PER_PAGE = 200
TIMEOUT = 120


def slow(test):
    return pytest.mark.slow(pytest.mark.timeout(3600)(test))


def check_page(at, what: str) -> None:
    assert not at.exception, (what[:80], [e.message[:300] for e in at.exception])
    for element in (*at.error, *at.warning):
        assert one_line(element.value, 1000), (what[:80], element.value[:500])


def fuzz_fields(at, keys: list[str], name: str) -> int:
    """Each text into one field in turn (the others back at their first value); returns the count."""
    first = {k: at.text_input(key=k).value for k in keys}
    texts = fuzz_examples(PER_PAGE, name, browser=True)
    for i, text in enumerate(texts):
        field = keys[i % len(keys)]
        for k in keys:
            at.text_input(key=k).set_value(text if k == field else first[k])
        at.run(timeout=TIMEOUT)
        check_page(at, text)
    return len(texts)


def fuzz_link(page: str, names: list[str], name: str) -> int:
    """Each text as the value of one of the page's URL settings, on a link opened afresh."""
    run = page_runner(page, TIMEOUT)
    at = run()
    texts = fuzz_examples(PER_PAGE, name, browser=True)
    for i, text in enumerate(texts):
        at.query_params.clear()
        at.query_params[names[i % len(names)]] = text
        at.run(timeout=TIMEOUT)
        check_page(at, text)
    return len(texts)


@slow
def test_couplets_page():
    at = page_runner("app_pages/couplets.py", TIMEOUT)()
    assert fuzz_fields(at, ["couplet_upper", "couplet_target"], "page-couplets") == PER_PAGE


@slow
def test_translation_page():
    at = page_runner("app_pages/translation.py", TIMEOUT)()
    assert fuzz_fields(at, ["translate_english", "translate_french"], "page-translation") == PER_PAGE


@slow
def test_transformer_page():
    at = page_runner("app_pages/transformer.py", TIMEOUT)()
    assert fuzz_fields(at, ["tf_text"], "page-transformer") == PER_PAGE


@slow
@pytest.mark.parametrize("model_id", ["minilm", "couplet-transformer"])  # smollm2: minilm's code path
def test_scoring_page_with_a_real_model(model_id):
    run = page_runner("app_pages/scoring.py", TIMEOUT)
    at = run()
    at.radio(key="scoring_source").set_value(f"real: {model_id}")
    at = run(at)
    assert fuzz_fields(at, ["scoring_text"], f"page-scoring-{model_id}") == PER_PAGE


@slow
def test_checkpoint_inspector_after_the_demo_upload():
    run = page_runner("app_pages/checkpoint.py", TIMEOUT)
    at = run()
    at.button(key="ckpt_demo").click()
    at = run(at)
    keys = [t.key for t in at.text_input if t.key.startswith("ckpt_text_")] + ["ckpt_target"]
    assert len(keys) == 2, [t.key for t in at.text_input]
    assert fuzz_fields(at, keys, "page-checkpoint") == PER_PAGE


@slow
def test_positional_page_links():
    assert (
        fuzz_link("app_pages/positional.py", ["len", "d", "cols", "learned"], "page-positional") == PER_PAGE
    )


@slow
def test_pooling_page_links():
    names = ["kernel", "h", "n", "noise", "epochs", "lr"]
    assert fuzz_link("app_pages/pooling.py", names, "page-pooling") == PER_PAGE


@pytest.mark.parametrize("value", ["16\x0b8", "a\rb", "x\u2028y", "\x0c"])
def test_a_link_value_with_a_line_break_is_not_quoted(value):
    """Found by the fuzz: the link notice quoted a bad value with its vertical tab, carriage return
    or line separator, so the "one line" notice broke in two. Such a value is no longer quoted."""
    at = page_runner("app_pages/positional.py", TIMEOUT)()
    at.query_params["d"] = value
    at.run(timeout=TIMEOUT)
    (warning,) = at.warning
    assert one_line(warning.value) and "d is not on offer" in warning.value
