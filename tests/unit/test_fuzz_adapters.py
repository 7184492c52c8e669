"""Fuzz: hostile text through every adapter's text path (issue 15).

Each test generates a counted, reproducible stream of inputs (``tests.support.fuzz_examples``): any
Unicode with bidi and zero-width controls, NUL, lone surrogates, emoji ZWJ sequences, combining
marks, from empty to 100,000 characters. Every input goes through the adapter's validation and
tokenisation; the short ones (up to ``SHORT`` characters, ``FORWARD`` per adapter) also through a
forward pass, batched where the adapter batches. An input either runs (records that check
themselves, one-line notices) or is refused with a ``ValueError`` whose message is one line;
any other exception fails the test. The counts are asserted: 10,500 distinct inputs without the
slow tests (5 × 1,500 bundled seq2seq models, 3 × 1,000 tiny Hugging Face models), 3,000 more with them.
"""

from __future__ import annotations

import pytest
import torch

from attention_atlas.cli.common import json_text
from attention_atlas.models.registry import RunResult
from attention_atlas.viz_core.record import AttentionRecord
from tests.support import fuzz_examples, one_line

pytestmark = pytest.mark.fuzz  # two minutes of the unit tests: make test runs them, make check does not
SEQ2SEQ_IDS = [
    "couplet-rnn-dot",
    "couplet-rnn-additive",
    "couplet-transformer",
    "translate-gru-additive",
    "translate-lstm-dot",
]
SEQ2SEQ_INPUTS, HF_TINY_INPUTS, HF_REAL_INPUTS = 1_500, 1_000, 1_500
SHORT = 60  # inputs this short (characters) may also run a forward pass
FORWARD = 200  # forward passes per adapter (the real HF models: see their test)
# Without the slow tests the fuzz reaches the 10,000 inputs on its own.
assert len(SEQ2SEQ_IDS) * SEQ2SEQ_INPUTS + 3 * HF_TINY_INPUTS >= 10_000


def check_refusal(err: Exception, text: str) -> None:
    assert isinstance(err, ValueError), f"{type(err).__name__} for {text[:80]!r}: {err}"
    assert one_line(str(err)), f"refusal not one line for {text[:80]!r}: {str(err)[:500]!r}"


def check_result(result: RunResult, text: str) -> None:
    assert isinstance(result, RunResult) and result.records, text[:80]
    for record in result.records.values():
        assert isinstance(record, AttentionRecord)  # it checked its own weights and tokens
        assert all(isinstance(t, str) for t in (*record.query_tokens, *record.key_tokens))
    for notice in result.notices:
        assert one_line(notice), f"notice not one line for {text[:80]!r}: {notice[:500]!r}"


def validated(validate, examples: int, name: str) -> list[str]:
    """Run ``validate(text)`` on ``examples`` distinct generated texts (a seed of their own per
    ``name``); returns the short ones, at most ``FORWARD``, for a forward pass."""
    texts = fuzz_examples(examples, name)
    for text in texts:
        try:
            validate(text)
        except Exception as err:  # check_refusal says which are allowed
            check_refusal(err, text)
    assert max(map(len, texts)) > 50_000 and min(map(len, texts)) == 0  # the sizes the issue asks
    return [t for t in texts if len(t) <= SHORT][:FORWARD]


def check_prepared(prepared, text: str) -> None:
    assert prepared.tokens and all(isinstance(t, str) for t in prepared.tokens), text[:80]
    for notice in prepared.notices:
        assert one_line(notice), f"notice not one line for {text[:80]!r}: {notice[:500]!r}"


@pytest.mark.parametrize("model_id", SEQ2SEQ_IDS)
def test_seq2seq_adapters_take_any_text(model_id, one_thread):
    """Every input through ``prepare`` (source, and as a forced target) and the notices about it;
    the short ones through
    ``run_batch``, half generated and half force-decoding another fuzzed text."""
    from attention_atlas.models.registry import load

    adapter = load(model_id, torch.device("cpu"))

    def validate(text: str) -> None:
        source = adapter.prepare(text, adapter.source_name)
        check_prepared(source, text)
        target = adapter.prepare(text, adapter.target_name)
        check_prepared(target, text)
        for notice in adapter.notices(source, target):  # unknown words and characters, quoted
            assert one_line(notice), f"notice not one line for {text[:80]!r}: {notice[:500]!r}"

    short = validated(validate, SEQ2SEQ_INPUTS, model_id)
    assert len(short) == FORWARD
    items = [(t, None if i % 2 == 0 else short[i - 1]) for i, t in enumerate(short)]
    for start in range(0, len(items), 50):
        chunk = items[start : start + 50]
        for (text, _), result in zip(chunk, adapter.run_batch(chunk), strict=True):
            if isinstance(result, Exception):
                check_refusal(result, text)
            else:
                check_result(result, text)
                json_text(result.to_json(adapter))


@pytest.fixture(scope="module")
def tiny_hf_adapters(tiny_hf_folders):
    from attention_atlas.models.adapters.hf import HFAdapter

    return {f: HFAdapter(f"tiny-{f}", folder, torch.device("cpu")) for f, folder in tiny_hf_folders.items()}


@pytest.mark.parametrize("family", ["encoder", "causal", "seq2seq"])
def test_hf_adapter_takes_any_text(tiny_hf_adapters, family, one_thread):
    """HFAdapter (the path of minilm, smollm2 and every uploaded HF folder) on tiny random models:
    every input tokenised by ``encode``, the short ones run."""
    adapter = tiny_hf_adapters[family]
    short = validated(lambda text: check_prepared(adapter.encode(text), text), HF_TINY_INPUTS, family)
    for text in short:
        try:
            result = adapter.run(text, target=text if family == "seq2seq" else None)
        except Exception as err:
            check_refusal(err, text)
        else:
            check_result(result, text)


@pytest.mark.slow
@pytest.mark.parametrize("model_id, forward", [("minilm", 200), ("smollm2", 100)])
def test_pretrained_models_take_any_text(model_id, forward, one_thread):
    """The real tokenizers on every input; a forward pass on the first short ones."""
    from attention_atlas.models.registry import load

    adapter = load(model_id, torch.device("cpu"))
    short = validated(lambda text: check_prepared(adapter.encode(text), text), HF_REAL_INPUTS, model_id)
    for text in short[:forward]:
        try:
            result = adapter.run(text)
        except Exception as err:
            check_refusal(err, text)
        else:
            check_result(result, text)


def test_lone_surrogates_read_as_replacement_characters(tiny_hf_adapters):
    """Found by the fuzz: a lone surrogate (a str may hold one; the command line makes them from
    bytes that are not UTF-8) made the fast tokenizers raise TypeError. Now it reads as U+FFFD
    with a notice, in ``run`` and in the long-input capture; a proper pair is joined."""
    from attention_atlas.models.adapters.capture import encode_long
    from attention_atlas.models.adapters.hf import well_formed

    assert well_formed("\ud83d\ude00 ok") == ("😀 ok", [])
    adapter = tiny_hf_adapters["causal"]
    for encoded in (adapter.encode("a\ud800b\udcff"), encode_long(adapter, "a\ud800b\udcff")):
        assert encoded.notices == ["2 lone surrogates (not valid Unicode) read as \ufffd"]
    result = adapter.run("\udcff")
    assert result.notices == ["1 lone surrogate (not valid Unicode) read as \ufffd"]
