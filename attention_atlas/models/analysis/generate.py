"""Generation with attention: a causal LM continues a prompt, and each new token's attention over
everything before it is kept, every layer and head.

    gen = start(adapter, "The capital of France is", max_new_tokens=20)   # checked, encoded
    gen.prompt_ids, gen.prompt_tokens                                      # shown before any step
    for token in gen:            # one forward per new token; stop (break) at any time
        token.id, token.text, token.attention       # attention: [layers, heads, positions so far]
    done = gen.result()          # what was made so far: ids, tokens, prompt_len, attention
    done = generate(adapter, text, max_new_tokens=20, sampling=Sampling(0.8, 0.9, seed=1))

Greedy by default; with ``Sampling``, softmax at a temperature, the nucleus of ``top_p`` and a
``torch.Generator`` seeded per run, so one seed gives one continuation. Stops at the model's EOS
(kept, as transformers' ``generate`` keeps it) or after ``max_new_tokens``.

The key-value cache carries the prompt: one forward of every prompt token but the last (no
weights asked for), then one forward of a single token per step with ``output_attentions``. Each
step's query is that one token, so each layer hands back ``[heads, 1, keys]``: the row of the new
token's attention over every token before it, never a ``[positions, positions]`` matrix. The step
that produced new token ``k`` is the query at position ``prompt_len + k − 1``; ``Result.attention``
stacks the rows as ``[layers, heads, new tokens, all tokens]``, zeros after each row's query.

A cached step's row is the same attention as the row of one forward over the whole sequence, but
computed in other shapes, so float rounding differs: up to 1.3e-5 over SmolLM2's 30 layers
(transformers' own cached ``generate`` likewise). ``result()`` therefore takes its rows from one
eager forward over prompt and continuation (``whole_rows``) where that forward's weights of every
layer fit in ``WHOLE_BYTES``: the views then show the attention over the text as it stands, and the
streamed rows are only the preview while tokens arrive.

Nothing here names a model family: a model is a causal LM if transformers can generate with it
and it is not an encoder–decoder; its EOS ids come from its generation config; its context from
its config. No hooks are installed, so a model that several sessions share is safe to step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from attention_atlas.i18n import later

MAX_NEW_TOKENS = 1024  # per request: the attention kept grows as layers × heads × new × all tokens
WHOLE_BYTES = 512 * 2**20  # the most one forward's [layers, heads, n, n] weights may take (result())


class GenerateError(ValueError):
    """A model or a request generation cannot serve: one line that says why."""


@dataclass(frozen=True)
class Sampling:
    """Sample instead of taking the most probable token: ``softmax(logits / temperature)``, cut to
    the smallest set of tokens whose probability reaches ``top_p``, drawn with ``seed``."""

    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0

    def check(self) -> None:
        if not self.temperature > 0:
            raise GenerateError(
                later("temperature {value} must be above 0 when sampling", value=self.temperature)
            )
        if not 0 < self.top_p <= 1:
            raise GenerateError(
                later("top-p {value} must be in (0, 1]: the share of probability kept", value=self.top_p)
            )


@dataclass(frozen=True)
class Step:
    """One new token from the model: its id and its query's attention ``[layers, heads, keys]``."""

    id: int
    attention: np.ndarray  # float32: keys are every token before it and the query itself


@dataclass(frozen=True)
class Token:
    """One new token as a page streams it."""

    index: int  # k: the k-th new token (0 first)
    id: int
    text: str  # what it adds to the decoded continuation ("" while a character's bytes are incomplete)
    attention: np.ndarray  # float32 [layers, heads, prompt_len + k]: the row that produced it


@dataclass(frozen=True)
class Result:
    ids: np.ndarray  # int64 [prompt_len + new]: prompt and continuation
    tokens: list[str]  # a label per id
    prompt_len: int
    attention: np.ndarray  # float32 [layers, heads, new, prompt_len + new]
    text: str  # the continuation, decoded


# -- the model: checks -------------------------------------------------------------------------------


def is_causal_lm(model) -> bool:
    can = getattr(model, "can_generate", None)
    config = getattr(model, "config", None)
    return (
        isinstance(model, torch.nn.Module)
        and callable(can)
        and can()
        and not getattr(config, "is_encoder_decoder", False)
    )


def context_of(model) -> int | None:
    """The longest sequence the model's positions reach (its config), or None where it names none."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and 0 < value < 10_000_000:
            return value
    return None


def eos_ids(model) -> set[int]:
    """The ids that end a continuation: the generation config's EOS, else the model config's."""
    for config in (getattr(model, "generation_config", None), model.config):
        eos = getattr(config, "eos_token_id", None)
        if eos is not None:
            return {int(e) for e in (eos if isinstance(eos, list | tuple) else [eos])}
    return set()


def check_max_new_tokens(max_new_tokens: int) -> None:
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise GenerateError(
            later("max new tokens {n}: give 1 to {most}", n=max_new_tokens, most=MAX_NEW_TOKENS)
        )


def check_request(name: str, prompt_len: int, max_new_tokens: int, context: int | None) -> None:
    check_max_new_tokens(max_new_tokens)
    if prompt_len < 1:
        raise GenerateError(later("the prompt is empty: type a sentence"))
    if context is None or prompt_len + max_new_tokens <= context:
        return
    if prompt_len >= context:
        raise GenerateError(
            later(
                "the prompt is {n:,} tokens; {name} reads at most {context:,}",
                n=prompt_len,
                name=name,
                context=context,
            )
        )
    raise GenerateError(
        later(
            "the prompt is {n:,} tokens and {name} reads at most {context:,}: "
            "ask for at most {most:,} new tokens, not {asked:,}",
            n=prompt_len,
            name=name,
            context=context,
            most=context - prompt_len,
            asked=max_new_tokens,
        )
    )


# -- the model: steps --------------------------------------------------------------------------------


def choose(logits: torch.Tensor, sampling: Sampling | None, generator: torch.Generator | None) -> int:
    """The next id from ``logits`` ``[vocab]``: the most probable, or drawn as ``sampling`` says."""
    if sampling is None:
        return int(logits.argmax())
    probs = torch.softmax(logits.float() / sampling.temperature, -1)
    if sampling.top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs  # probability of the tokens ranked above
        sorted_probs[before >= sampling.top_p] = 0  # the top token always stays (before = 0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))


def _row(attentions, keys: int, name: str) -> np.ndarray:
    """Each layer's ``[1, heads, 1, k]`` → ``[layers, heads, keys]``; a layer that kept fewer keys
    (a sliding window) is right-aligned: it saw the last ``k`` tokens."""
    if not attentions or any(a is None for a in attentions):
        raise GenerateError(f"{name} returned no attention weights: it must run with eager attention")
    row = torch.zeros(len(attentions), attentions[0].shape[1], keys)
    for layer, a in enumerate(attentions):
        k = min(a.shape[-1], keys)
        row[layer, :, keys - k :] = a[0, :, -1, -k:].float()
    return row.numpy()


def steps(
    model,
    ids: torch.Tensor,
    max_new_tokens: int,
    sampling: Sampling | None = None,
    name: str = "the model",
) -> Iterator[Step]:
    """New tokens after ``ids`` ``[1, prompt_len]``, one forward each, with each one's attention row."""
    if not is_causal_lm(model):
        raise GenerateError(later("{name} is not a causal language model: it generates no text", name=name))
    prompt_len = ids.shape[-1]
    check_request(name, prompt_len, max_new_tokens, context_of(model))
    if sampling is not None:
        sampling.check()
    return _steps(model, ids, max_new_tokens, sampling, name)


def _steps(model, ids, max_new_tokens, sampling, name) -> Iterator[Step]:
    device = next(model.parameters()).device
    ids = ids.reshape(1, -1).to(device)
    generator = None if sampling is None else torch.Generator(device).manual_seed(sampling.seed)
    ends, cache, keys = eos_ids(model), None, ids.shape[1]
    with torch.no_grad():
        if keys > 1:  # the prompt but its last token, into the cache: no weights, no logits
            base = getattr(model, "base_model", model)
            cache = base(input_ids=ids[:, :-1], use_cache=True).past_key_values
        current = ids[:, -1:]
        for _ in range(max_new_tokens):
            out = model(input_ids=current, past_key_values=cache, use_cache=True, output_attentions=True)
            cache = out.past_key_values
            new = choose(out.logits[0, -1], sampling, generator)
            yield Step(new, _row(out.attentions, keys, name))
            if new in ends:
                return
            current, keys = torch.tensor([[new]], device=device), keys + 1


def stack_rows(rows: list[np.ndarray], prompt_len: int) -> np.ndarray:
    """Rows ``[layers, heads, prompt_len + k]`` → ``[layers, heads, new, prompt_len + new]``, zeros after."""
    if not rows:
        raise GenerateError("no new tokens were generated yet")
    n = len(rows)
    out = np.zeros((*rows[0].shape[:2], n, prompt_len + n), dtype=np.float32)
    for k, row in enumerate(rows):
        out[:, :, k, : prompt_len + k] = row
    return out


def whole_rows(model, ids: list[int], prompt_len: int, layers: int, heads: int) -> np.ndarray | None:
    """``stack_rows``' array from one eager forward over ``ids`` (prompt and continuation): row k
    is the query at ``prompt_len + k − 1``; None where its weights would pass ``WHOLE_BYTES`` or the
    model hands back none."""
    n = len(ids)
    if layers * heads * n * n * 4 > WHOLE_BYTES or n <= prompt_len:
        return None
    device = next(model.parameters()).device
    with torch.no_grad():
        att = model(input_ids=torch.tensor([ids], device=device), output_attentions=True).attentions
    if not att or any(a is None or a.shape[-1] != n for a in att):
        return None
    return torch.stack([a[0, :, prompt_len - 1 : n - 1] for a in att]).float().cpu().numpy()


# -- from text ---------------------------------------------------------------------------------------


def new_text(tokenizer, ids: list[int], said: str) -> tuple[str, str]:
    """What ``ids`` decoded add to ``said`` (the text handed out so far), and the new ``said``:
    nothing while the text ends inside a character (a byte-level piece holding part of its bytes)."""
    text = tokenizer.decode(ids)
    if text.endswith("\ufffd") or not text.startswith(said):
        return "", said
    return text[len(said) :], text


@dataclass
class Generation:
    """One continuation of a prompt, stepped as it is iterated; ``result()`` at any time after a step."""

    adapter: object
    prompt_ids: list[int]
    prompt_tokens: list[str]
    max_new_tokens: int
    sampling: Sampling | None = None
    new_ids: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    _said: str = ""  # the continuation's text handed out so far
    _whole: tuple[int, np.ndarray] | None = None  # result()'s attention, and for how many new tokens

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids)

    def __iter__(self) -> Iterator[Token]:
        if self.new_ids:
            raise GenerateError("this generation has run already: start a new one")
        ids = torch.tensor([self.prompt_ids])
        model = self.adapter.model
        for step in steps(model, ids, self.max_new_tokens, self.sampling, self.adapter.model_id):
            self.new_ids.append(step.id)
            self.rows.append(step.attention)
            piece, self._said = new_text(self.adapter.tokenizer, self.new_ids, self._said)
            yield Token(len(self.new_ids) - 1, step.id, piece, step.attention)

    def _attention(self, ids: list[int]) -> np.ndarray:
        """``whole_rows`` (once per length: a page asks at every rerun), else the steps' rows."""
        if self._whole is None or self._whole[0] != len(self.new_ids):
            if not self.rows:
                return stack_rows(self.rows, self.prompt_len)  # refuses: no new tokens yet
            whole = whole_rows(self.adapter.model, ids, self.prompt_len, *self.rows[0].shape[:2])
            self._whole = (
                len(self.new_ids),
                stack_rows(self.rows, self.prompt_len) if whole is None else whole,
            )
        return self._whole[1]

    def result(self) -> Result:
        ids = [*self.prompt_ids, *self.new_ids]
        return Result(
            ids=np.asarray(ids, dtype=np.int64),
            tokens=self.adapter.labels(ids),
            prompt_len=self.prompt_len,
            attention=self._attention(ids),
            text=self.adapter.tokenizer.decode(self.new_ids),
        )


def start(adapter, text: str, max_new_tokens: int = 32, sampling: Sampling | None = None) -> Generation:
    """A generation of ``text`` checked and encoded, not yet stepped: iterate it to step."""
    model = getattr(adapter, "model", None)
    if getattr(adapter, "family", None) != "causal" or not is_causal_lm(model):
        raise GenerateError(
            later("{name} is not a causal language model: it generates no text", name=adapter.model_id)
        )
    if sampling is not None:
        sampling.check()
    context = min((c for c in (context_of(model), getattr(adapter, "max_tokens", None)) if c), default=None)
    prompt = adapter.encode(text)  # refuses an empty text; cut at the adapter's limit, so:
    length = prompt.ids.shape[1]
    if context and length >= context - 1:  # perhaps cut (less a separator): the whole prompt's length
        length = adapter.full_length(text)
    check_request(adapter.model_id, length, max_new_tokens, context)
    return Generation(adapter, prompt.ids[0].tolist(), list(prompt.tokens), max_new_tokens, sampling)


def generate(adapter, text: str, max_new_tokens: int = 32, sampling: Sampling | None = None) -> Result:
    """``text`` continued to EOS or ``max_new_tokens``: ids, labels, prompt_len and attention."""
    gen = start(adapter, text, max_new_tokens, sampling)
    for _ in gen:
        pass
    return gen.result()
