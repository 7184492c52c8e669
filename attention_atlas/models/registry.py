"""Model ids → adapters. Each adapter module registers itself; pages and the CLI read this.

An adapter turns text into records::

    adapter = load("couplet-rnn-additive")
    result = adapter.run("两个黄鹂鸣翠柳")
    result.records["cross"]  # AttentionRecord [1, 1, output chars, input chars]

To add a model, write ``models/adapters/<name>.py`` that calls ``register(...)`` at import;
nothing else changes. ``register`` also declares what pages may ask of the model (layers and
heads, record kinds, a first text, queries and keys, learned positions, its card), so listing
models never loads one and pages never name a model id.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from attention_atlas.viz_core.record import AttentionRecord


@dataclass
class RunResult:
    """What an adapter returns: records by kind, the generated text (if any), and notices."""

    records: dict[str, AttentionRecord]
    output: str | None = None
    notices: list[str] = field(default_factory=list)  # e.g. "2 characters were not in the vocabulary"

    def to_json(self, adapter: Adapter) -> dict:
        """What ``atlas extract --json`` prints: weights token-level and exact, as computed (the arrays
        themselves: ``cli.common.json_text`` writes them)."""
        return {
            "model": adapter.model_id,
            "device": str(getattr(adapter, "device", "")),
            "output": self.output,
            "records": [
                {
                    "kind": r.kind,
                    "query_tokens": r.query_tokens,
                    "key_tokens": r.key_tokens,
                    "weights": r.weights,  # [layers][heads][query][key]
                    **({} if r.sink is None else {"sink": r.sink}),  # [layers][heads][query]
                }
                for r in self.records.values()
            ],
        }


class Adapter(Protocol):
    model_id: str

    def run(self, text: str, **options: Any) -> RunResult: ...


TASKS = ("couplet", "translation")  # families named after the tutorial task they solve (RNN seq2seq)
TRANSFORMER_FAMILIES = ("encoder", "causal", "seq2seq", "encoder-decoder")


@dataclass(frozen=True)
class ModelInfo:
    """A registered model and its capabilities: facts pages need, declared without loading it."""

    id: str
    family: str  # "couplet", "translation", "encoder", "causal", ...
    description: str
    factory: Callable[..., Adapter] = field(repr=False, compare=False)
    layers: int = 1  # attention layers in each record (an encoder–decoder: per stack)
    heads: int = 1  # heads per layer
    kinds: tuple[str, ...] = ()  # the records a run returns, in order: "self", "cross", ...
    example: str = ""  # the text a page starts from
    queries_keys: bool = False  # adapter.queries_keys(text, layer, head) reads one head's q and k
    learned_positions: bool = False  # adapter.position_embeddings() returns a learned table
    default: bool = False  # the one a page shows first among models like it
    heavy: bool = False  # large enough that every run takes the heavy lane (serve.lanes), one at a time
    long_input: bool = False  # queries and keys captured at any length up to its context (long-input view)
    value_norms: bool = False  # each head's value vectors readable: attention weighted by ‖α f(x)‖
    masking: bool = False  # adapter.run_masked(text, position, replacement): a token masked, every head's change
    samples: tuple[str, ...] = ()  # the bundled corpus samples (models.corpus.inputs) it is the first model of
    card: Path | None = None  # a bundled model's metrics.json (training budget, test scores)
    terms: str = ""  # a line every page shows under the model picker (a licence's required notice)

    @property
    def causal(self) -> bool:
        """A decoder-only language model: each token attends to itself and the tokens before it."""
        return self.family == "causal"

    @property
    def transformer(self) -> bool:
        """Every layer × head of it is shown on the Transformer heads page."""
        return self.family in TRANSFORMER_FAMILIES

    @property
    def task(self) -> str | None:
        """The seq2seq task whose page shows it (``"couplet"``, ``"translation"``), else None."""
        return self.family if self.family in TASKS else None


_REGISTRY: dict[str, ModelInfo] = {}
_discovered = False


def register(
    model_id: str,
    family: str,
    description: str,
    *,
    layers: int,
    heads: int,
    kinds: tuple[str, ...],
    example: str,
    **capabilities: Any,
):
    """Decorator for an adapter factory ``factory(device) -> Adapter``, with its capabilities.

    ``capabilities``: the optional fields of ``ModelInfo`` (``queries_keys``, ``heavy``, ``card``, …).
    """

    def wrap(factory: Callable[..., Adapter]) -> Callable[..., Adapter]:
        if model_id in _REGISTRY:
            raise ValueError(f"model id {model_id!r} is registered twice")
        _REGISTRY[model_id] = ModelInfo(
            model_id, family, description, factory, layers, heads, tuple(kinds), example, **capabilities
        )
        return factory

    return wrap


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    import attention_atlas.models.adapters as package

    for mod in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{mod.name}")
    _discovered = True


def available() -> list[ModelInfo]:
    """Every registered model, sorted by id."""
    _discover()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def info(model_id: str) -> ModelInfo:
    _discover()
    if model_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none yet"
        raise KeyError(f"unknown model {model_id!r}; known models: {known}")
    return _REGISTRY[model_id]


def default_of(model_ids: list[str]) -> str | None:
    """The model among ``model_ids`` registered as the one to show first (else the first)."""
    marked = [m for m in model_ids if info(m).default]
    return (marked or model_ids or [None])[0]


def card_metrics(model_id: str) -> dict | None:
    """A bundled model's card numbers (``metrics`` and ``training``), or None without one."""
    card = info(model_id).card
    if card is None or not card.is_file():
        return None
    return json.loads(card.read_text(encoding="utf-8"))


def load(model_id: str, device=None) -> Adapter:
    """Build the adapter for ``model_id`` on ``device`` (default: ``pick_device()``)."""
    from attention_atlas.models.device import pick_device

    return info(model_id).factory(device or pick_device())
