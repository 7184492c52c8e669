"""The pages' cached calls into ``models``: one shared adapter per model, results cached as data.

Models are shared resources (their weights are never mutated, so every session shares
one), at most ``ATLAS_MAX_MODELS`` of them loaded (``serve.resident``: the least recently
used is dropped, and a page that needs it again says it is being reloaded). Results are cached
as data keyed by their inputs, so moving a slider never re-runs a model; long inputs and large
models go to caches of their own with few entries, since one such result runs to tens of
megabytes. A cache miss that runs a model waits its turn in a ``serve.lanes`` lane (a few
runs at once, heavy ones in their own line) and the page shows its position meanwhile.
What a page needs to know about a model (its layers and heads, first text, whether it
exposes queries and keys) comes from the registry's capabilities, without loading it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import astuple, dataclass, field, replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.attention import demos
from attention_atlas.paths import DATA
from attention_atlas.serve import lanes
from attention_atlas.serve.janitor import Janitor
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.record import AttentionRecord


class Said(str):
    """A cached function's spinner text (``show_spinner=Said(N_("…"))``), looked up in the visitor's
    language when Streamlit shows it: it takes the text with ``str()`` in the visitor's script run.
    Plain text everywhere else (a cache's settings outlive any one visitor)."""

    __slots__ = ()

    def __str__(self) -> str:
        return _(str.__str__(self))


# The lessons' computations (models.attention.demos), cached by their arguments.
scoring_records = st.cache_data(demos.scoring_records, show_spinner=False)
saturation = st.cache_data(demos.saturation, show_spinner=False)
positional_tables = st.cache_data(demos.positional_tables, show_spinner=False)
pooling_view = st.cache_data(demos.pooling_view, show_spinner=False)


TTL = 30 * 60  # seconds a cached result is kept
QUIET = float(os.environ.get("ATLAS_CACHE_QUIET", "60"))  # seconds with no page asking for a model
# result, after which the cached results are let go (the class has gone home)
_SEEN = lanes.Seen()  # keys computed lately: a call likely to hit its cache never queues


@st.cache_resource(show_spinner=False)
def janitor() -> Janitor:
    """One per server (``serve.janitor``): once no page has asked for a model result for ``QUIET``
    seconds, every ``st.cache_data`` of the server, the keys seen lately and whatever else
    registered ``on_quiet`` (the long inputs' captures) are dropped and their memory handed
    back; the models stay loaded."""
    keeper = Janitor(QUIET, "atlas-cache-janitor")
    keeper.on_quiet(st.cache_data.clear)
    keeper.on_quiet(_SEEN.clear)
    return keeper


def release_results() -> None:
    """What the janitor does once the server is quiet, now."""
    janitor().release()


@st.cache_resource(show_spinner=False)
def resident():
    """The process's loaded models (``serve.resident``), at most ``ATLAS_MAX_MODELS``."""
    from attention_atlas.serve.resident import Resident

    return Resident()


def adapter(model_id: str):
    """One shared adapter per model; its weights are never mutated, so sessions can share it."""
    return resident().get(model_id)


@dataclass(frozen=True)
class Source:
    """A model a view reads: its cache key (a bundled model's id, or an upload's key: its SHA-256 and
    answers), the name its files and messages carry, how to get its adapter (a bundled model loads on
    first use), and the prefix of the view's widget keys."""

    key: str
    name: str
    get: Callable[[], object] = field(compare=False, repr=False)
    prefix: str = ""
    bundled: bool = False

    @property
    def adapter(self):
        return self.get()

    @classmethod
    def of_model(cls, model_id: str, prefix: str = "") -> Source:
        return cls(model_id, model_id, lambda: adapter(model_id), prefix, bundled=True)

    @classmethod
    def of_upload(cls, key: str, name: str, loaded, prefix: str = "") -> Source:
        return cls(key, name, lambda: loaded, prefix)

    def ready(self) -> None:
        """A bundled model loaded (under a spinner that says why, when it must load again)."""
        if self.bundled:
            ensure_loaded(self.key)


def ensure_loaded(model_id: str) -> None:
    """Load ``model_id`` under a spinner that says why, if it is not loaded (a cache miss is coming).
    Pages call it before a cached call that loads the model inside, whose own spinner would name
    the wrong wait."""
    models = resident()
    if model_id in models.resident():
        return
    why = (
        _(
            "Loading {model} again: at most {limit} models stay loaded on this server, and it was "
            "the least recently used…",
            model=model_id,
            limit=models.limit,
        )
        if models.was_evicted(model_id)
        else load_hint(model_id)
    )
    with st.spinner(why):
        load_showing_stages(model_id)


def load_showing_stages(model_id: str, poll: float = 0.5) -> None:
    """``adapter(model_id)``, in a thread of its own while this page run shows the stage of any
    conversion the load waits on (Gemma 3's first load: a minute or more) as a progress bar."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Pending

    from attention_atlas.models.adapters import gguf

    bar = st.empty()
    with ThreadPoolExecutor(1, thread_name_prefix="atlas-load") as pool:
        job = pool.submit(adapter, model_id)
        while True:
            try:
                job.result(timeout=poll)
                break
            except Pending:
                now = gguf.stage(model_id)
                if now is not None:
                    bar.progress((now.step - 1) / now.steps, text=stage_text(model_id, now))
    bar.empty()


def stage_text(model_id: str, now) -> str:
    """A conversion's stage as the progress bar says it."""
    return _(
        "Converting {model}'s GGUF file, once on this machine: step {step} of {steps}, {what}…",
        model=model_id,
        step=now.step,
        steps=now.steps,
        what=_(now.what),
    )


def load_hint(model_id: str) -> str:
    """The first load's spinner: how long it took on this machine last time, or, never loaded here, that
    a first load may convert the weights (Gemma 3's GGUF file: about 70 s on a 2-core CPU)."""
    from attention_atlas.serve.resident import last_load

    seconds = last_load(model_id)
    if seconds is None:
        return _(
            "Loading {model} for the first time on this machine: a model that ships as a GGUF file is "
            "converted once, a minute or two on a CPU…",
            model=model_id,
        )
    return _("Loading {model} (once per server; {seconds:.0f} s the last time)…", model=model_id, seconds=seconds)


def _heavy_models() -> set[str]:
    """The ids that always take the heavy lane: those the registry declares ``heavy`` (or
    ``ATLAS_HEAVY_MODELS``), read without loading any model."""
    from attention_atlas.models.registry import available

    return lanes.heavy_models(m.id for m in available() if m.heavy)


def lane_for(model_id: str, text: str = "") -> lanes.Lane:
    return lanes.lane_for(model_id in _heavy_models(), text)


def is_heavy(model_id: str, text: str = "") -> bool:
    """A large model, or an input long enough that its records run to tens of megabytes."""
    return lane_for(model_id, text) is lanes.HEAVY


def queued(model_id: str, text: str, key: tuple, call):
    """``call()`` (a cached call), after waiting for a model slot unless ``key`` was computed lately;
    the page shows its position in line while it waits. Inside another cached function, which
    would record any element for replay, it waits without a word."""
    janitor().used()
    inside = _inside_cached_function()
    # One slot whether the result was seen or not, so that the page's later elements keep their
    # places: a slot that moves lands on the stale content below and blanks it while the input runs.
    box = None if inside else st.empty()
    if key in _SEEN:
        return call()
    lane = lane_for(model_id, text)
    if inside:
        with lane.turn():
            return call()
    try:
        with lane.turn(on_wait=lambda k: box.info(lane.waiting_message(k))):
            box.empty()
            ensure_loaded(model_id)
            return call()
    finally:
        box.empty()


def _inside_cached_function() -> bool:
    """Inside a cached function (whose elements Streamlit records for replay), or outside any
    script run (bare Python, where there is no page to show a line on)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx, in_cached_function

    return in_cached_function.get() or get_script_run_ctx(suppress_warning=True) is None


def run_model(model_id: str, text: str, target: str | None = None, beam: int = 1):
    """Records for one input, cached: switching layer or head never re-runs the model."""
    cache = _run_model_heavy if is_heavy(model_id, text) else _run_model
    key = ("run", model_id, text, target, beam)
    return queued(model_id, text, key, lambda: cache(model_id, text, target, beam))


def _run(model_id: str, text: str, target: str | None, beam: int):
    options = {"beam": beam} if beam != 1 else {}  # only seq2seq adapters search
    with lane_for(model_id, text).turn():  # passes through when queued() holds the slot
        result = adapter(model_id).run(text, target=target, **options)
    _SEEN.add(("run", model_id, text, target, beam))
    return result


RUNNING = Said(N_("Running the model…"))


@st.cache_data(show_spinner=RUNNING, max_entries=64, ttl=TTL)
def _run_model(model_id: str, text: str, target: str | None, beam: int):
    return _run(model_id, text, target, beam)


@st.cache_data(show_spinner=RUNNING, max_entries=4, ttl=TTL)
def _run_model_heavy(model_id: str, text: str, target: str | None, beam: int):
    """Long inputs and large models: a few entries only (one result can run to 100 MB)."""
    return _run(model_id, text, target, beam)


def model_choices(**capabilities) -> list[str]:
    """Registered ids having every capability given (all without any), e.g.
    ``model_choices(queries_keys=True)``, ``model_choices(task="couplet")``."""
    from attention_atlas.models.registry import available

    return [m.id for m in available() if all(getattr(m, k) == v for k, v in capabilities.items())]


def capabilities(model_id: str):
    """The registry's ``ModelInfo`` of a model: layers, heads, kinds, example text, …"""
    from attention_atlas.models.registry import info

    return info(model_id)


def default_model(**capabilities) -> str | None:
    """The model to show first among those with these capabilities (None if there is none)."""
    from attention_atlas.models.registry import default_of

    return default_of(model_choices(**capabilities))


def first_index(model_ids: list[str]) -> int:
    """Where in ``model_ids`` the model registered to be shown first is (0 if none is)."""
    from attention_atlas.models.registry import default_of

    return model_ids.index(default_of(model_ids)) if model_ids else 0


@st.cache_data(show_spinner=Said(N_("Probing for induction heads…")), max_entries=8)
def induction(model_id: str, period: int = 20, seed: int = 0):
    """``[layers, heads]`` induction scores of a causal model on a repeated random sequence."""
    from attention_atlas.viz_core.stats import induction_scores

    record, offset = adapter(model_id).run_repeated(period, seed)
    return induction_scores(record.weights, period, offset)


@st.cache_data(show_spinner=Said(N_("Reading the value vectors…")), max_entries=32)
def value_norms(model_id: str, text: str):
    """``[layers, heads, tokens]`` norms ‖f_h(xⱼ)‖ of the value vectors through each head's output slice."""
    from attention_atlas.models.adapters.value_norms import value_norms as norms

    return norms(adapter(model_id), text)


def value_weighting_offered(model_id: str) -> bool:
    """Whether the Transformer page can weight ``model_id``'s attention by value norms (declared by
    the registry: nothing is loaded to decide)."""
    return capabilities(model_id).value_norms


@dataclass(frozen=True)
class TransformerView:
    """Everything the Transformer page derives from one record under one ``ViewOptions``."""

    record: AttentionRecord  # as shown: value-weighted, merged and hidden as the options say
    record_id: str  # names the record for the browser's copy of every head
    heads: dict  # every head packed in 16 bits for the browser (viz_core.wire.all_heads)
    special_share: np.ndarray  # [layers, heads, query]: attention on special tokens, before hiding them
    model_view: go.Figure
    table: pd.DataFrame  # one row per head: statistics and pattern (viz_core.stats.head_table)
    rollout: np.ndarray | None  # [query, key] through all layers; None for cross attention
    offsets: np.ndarray  # key − query offsets
    profile: np.ndarray  # [layers, heads, offsets]: mean attention by offset
    sinusoid: np.ndarray  # P·Pᵀ by offset (d = 64), 1 at 0


def transformer_view(model_id: str, text: str, options: ViewOptions) -> TransformerView:
    """Everything the Transformer page derives from one record, computed once per input and options.

    Switching layer or head then only builds one heatmap. Long inputs and large models are derived in
    the heavy lane and kept in a cache of few entries.
    """
    cache = _transformer_view_heavy if is_heavy(model_id, text) else _transformer_view
    return queued(model_id, text, ("view", model_id, text, options), lambda: cache(model_id, text, options))


BUILDING = Said(
    N_("Building the views: every head for the browser, the head statistics, rollout and offsets…")
)


@st.cache_data(show_spinner=BUILDING, max_entries=32, ttl=TTL)
def _transformer_view(model_id: str, text: str, options: ViewOptions) -> TransformerView:
    return _view(model_id, text, options)


@st.cache_data(show_spinner=BUILDING, max_entries=4, ttl=TTL)
def _transformer_view_heavy(model_id: str, text: str, options: ViewOptions) -> TransformerView:
    return _view(model_id, text, options)


def _view(model_id: str, text: str, options: ViewOptions) -> TransformerView:
    with lane_for(model_id, text).turn():  # passes through when queued() holds the slot
        view = _derive_view(model_id, text, options)
    _SEEN.add(("view", model_id, text, options))
    return view


def _derive_view(model_id: str, text: str, options: ViewOptions) -> TransformerView:
    from attention_atlas.viz_core.derive import hide_special, merge_words, special_share
    from attention_atlas.viz_core.model_view import model_view
    from attention_atlas.viz_core.stats import head_table, offset_profile, rollout
    from attention_atlas.viz_core.wire import all_heads, record_id

    record = run_model(model_id, text).records[options.kind]
    if options.value_weighted:
        from attention_atlas.models.adapters.value_norms import weighted

        norms = value_norms(model_id, text)  # a sink adds no value: shares of the output sum to 1
        record = replace(record, weights=weighted(record.weights, norms), sink=None)
    record = merge_words(record) if options.merge else record
    share = special_share(record)
    record = hide_special(record) if options.hide else record
    offsets, profile = offset_profile(record.weights)
    rid = record_id(model_id, text, *astuple(options))
    return TransformerView(
        record=record,
        record_id=rid,
        heads=all_heads(record, rid),
        special_share=share,
        model_view=model_view(record),
        table=head_table(record.weights, record.meta.get("key_special")),
        rollout=None if record.kind == "cross" else rollout(record.weights),  # one token stream only
        offsets=offsets,
        profile=profile,
        sinusoid=demos.sinusoid_by_offset(len(offsets) // 2),  # P·Pᵀ by offset, d = 64, 1 at 0
    )


@st.cache_data(show_spinner=Said(N_("Solving the max-flow problems…")), max_entries=16)
def exact_flow(model_id: str, text: str, options: ViewOptions):
    """Exact attention flow of the Transformer page's record; each row split over the inputs."""
    from attention_atlas.viz_core.stats import attention_flow

    flow = attention_flow(transformer_view(model_id, text, options).record.weights)
    return flow / flow.sum(-1, keepdims=True)  # each row: how the position's inflow splits over inputs


@st.cache_data(show_spinner=Said(N_("Reading the learned position embeddings…")))
def learned_positions(model_id: str):
    """``[position, dim]`` learned position embeddings of a model, or None."""
    return adapter(model_id).position_embeddings()


@st.cache_data(show_spinner=Said(N_("Reading queries and keys…")), max_entries=32)
def model_queries_keys(model_id: str, text: str, layer: int, head: int):
    """``(queries [n, d], keys [n, d], tokens)`` of one head, as numpy arrays."""
    q, k, tokens = adapter(model_id).queries_keys(text, layer, head)
    return q.numpy(), k.numpy(), tokens


def card_table(model_ids: tuple[str, ...]) -> pd.DataFrame:
    """Each bundled translation model's training budget and test scores, from its card; the headers
    in the visitor's language."""
    table = _card_table(model_ids)
    headers = {
        "model": _("model"),
        "steps": _("steps"),
        "epochs": _("epochs"),
        "test pairs": _("test pairs"),
        "test BLEU (greedy)": _("test BLEU (greedy)"),
        "exact match": _("exact match"),
    }
    for column in table.columns:
        if column.startswith("test BLEU (beam "):
            beam = column.removeprefix("test BLEU (beam ").removesuffix(")")
            headers[column] = _("test BLEU (beam {beam})", beam=beam)
    return table.rename(columns=headers)


@st.cache_data(show_spinner=False)
def _card_table(model_ids: tuple[str, ...]) -> pd.DataFrame:
    from attention_atlas.models.registry import card_metrics

    rows = []
    for m in model_ids:
        card = card_metrics(m)
        if card is None:
            continue
        t, k = card["training"], card["metrics"]
        beam_key = next(x for x in k if x.startswith("bleu_beam"))
        rows.append(
            {
                "model": m,
                "steps": t["steps"],
                "epochs": t["epochs"],
                "test pairs": k["n_pairs"],
                "test BLEU (greedy)": k["bleu"],
                f"test BLEU (beam {beam_key[9:]})": k[beam_key],
                "exact match": f"{k['exact_match']:.1%}",
            }
        )
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False)
def bench_result(name: str) -> dict | None:
    """A benchmark's saved result, ``attention_atlas/data/<name>.json``, or None before it has been run."""
    path = DATA / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


@st.cache_data(show_spinner=False)
def translation_cost(smooth: int) -> dict | None:
    """The additive-vs-dot benchmark as the Translation page shows it: text, table and curves
    (loss as a rolling mean over ``smooth`` steps; validation BLEU as measured)."""
    cost = bench_result("translation_cost")
    if cost is None:
        return None
    variants = cost["variants"]
    loss = pd.DataFrame({v["name"]: pd.Series(v["loss"], index=v["steps"]) for v in variants})
    bleu = pd.DataFrame({v["name"]: pd.Series(v["bleu"], index=v["eval_steps"]) for v in variants})
    return {
        "summary": cost["summary"],
        "setup": cost["setup"],  # its numbers: the page says them in each visitor's language (cost_setup)
        "table": pd.DataFrame(cost["table"]),
        "loss": loss.rolling(smooth, min_periods=1).mean(),
        "bleu": bleu,
    }
