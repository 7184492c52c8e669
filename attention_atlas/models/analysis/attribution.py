"""Does attention explain? Attribution methods beside attention for one output, and their faithfulness.

    subject = subject_of(adapter, "两个黄鹂鸣翠柳", target_text="一行白鹭上青天", target_position=3)
    result = attribute(subject, steps=32)
    result.scores["saliency"]        # [input tokens]: one score per input token and method
    result.comprehensiveness         # [methods, 3]: k = 10, 20, 50 % of the input tokens
    result.ig_completeness_gap       # |Σᵢ IGᵢ − (f(x) − f(baseline))|

The chosen output is one token: a couplet's lower-line character or a translation's French word at
an output position (forced by the user, else the model's own output; default the last position
written, a translation's ``<eos>`` not counted), our couplet Transformer's output character, a Hugging
Face encoder-decoder's output token (an uploaded BART's; forced or its greedy output, default the last
that is not a special token), or a causal LM's next token after the text (its argmax, or the first token
of a forced ``target_text``; with ``target_position`` K the text's own token K after the tokens before
it). ``f`` is the
log-probability of that token, a function of ``e``, the input embeddings: what the model's input
embedding layer returns for the input tokens (position embeddings and any scaling after that layer
untouched). A seq2seq model's input is its source; the decoder reads the target as before.

Methods, each a score per input token (``METHODS``):

- ``attention``: the attention the model used for that output: an RNN's attention row at that step;
  a Transformer's last layer, heads averaged, at the output's query row (the cross attention of our
  couplet Transformer or an encoder-decoder, the self-attention of a causal LM at its last position), or
  any layer and head's row there (``at_head``);
- ``rollout``: ``viz_core.stats.rollout`` of a causal LM's self-attention, its last row; for our
  couplet Transformer and an encoder-decoder the cross row above times the rollout of the encoder's
  self-attention (what each encoder state holds of each input character). An RNN has no layers of attention to roll out:
  refused;
- ``saliency`` ``‖∂f/∂eᵢ‖₂``, ``input_x_gradient`` ``eᵢ · ∂f/∂eᵢ`` (both from one backward, Captum's
  ``Saliency`` gradient), ``integrated_gradients`` (Captum's,
  Gauss–Legendre with ``steps`` points, from a baseline input whose every token is the baseline token:
  the tokenizer's pad token, else its unknown token, else its end-of-text token; ``baseline_token``
  says which), with the completeness gap ``|Σᵢ IGᵢ − (f(x) − f(baseline))|``: within 1 % at 32 steps on
  tiny Llama-like models, but a real model's ``f`` can dip sharply somewhere on the straight path (SmolLM2:
  ``bench/RESULTS.md``), which a few steps miss; the gap says so, and more steps narrow it;
- ``occlusion``: ``f(x) − f(x with eᵢ replaced by the baseline token's embedding)`` for every ``i``
  (batched; for a causal LM the keys and values of the positions before a block of occluded tokens
  are computed once and reused).

Faithfulness per method (ERASER, DeYoung et al. 2020), tokens ranked by score, highest first (for a
signed method: the most positive first): ``comprehensiveness`` at k = 10, 20, 50 % of the input tokens
(at least one) is ``f(x) − f(x with the top k tokens replaced by the baseline token)``,
``sufficiency`` is ``f(x) − f(x with every other token replaced)``; the ``deletion`` curve is ``f`` as
the top tokens are replaced one by one (``n + 1`` points, the first ``f(x)``), and ``aopc`` the mean of
``f(x) − f`` over its points.

A model or a method a model cannot do is refused in one line that says why (``AttributionError``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from attention_atlas.i18n import later, shown

METHODS = (
    "attention",
    "rollout",
    "value_norms",
    "contributions",
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
    "occlusion",
)
ROWS = ("value_norms", "contributions")  # read from a view's numbers, held in ``Subject.rows``
SIGNED = frozenset({"input_x_gradient", "integrated_gradients", "occlusion"})  # the others are ≥ 0
FRACTIONS = (0.1, 0.2, 0.5)  # of the input tokens: comprehensiveness and sufficiency
STEPS = 32
MAX_STEPS = 1024
BASELINE_NAMES = ("pad", "unk", "eos")  # the baseline token, the first the tokenizer has
NO_BASELINE = "none"  # a tokenizer without any: no integrated gradients, occlusion or faithfulness


class AttributionError(ValueError):
    """A model, an output or a method attribution cannot serve: one line that says why."""


@dataclass(frozen=True)
class Subject:
    """One output of one model, ready for every method: ``forward`` maps input embeddings
    ``[batch, n, d]`` to the output token's log-probability ``[batch]``."""

    model_id: str
    tokens: list[str]  # the input tokens' labels
    target: str  # the output token's label
    embeddings: torch.Tensor  # [n, d]: what the input embedding layer returns
    baseline: torch.Tensor  # [d]: the baseline token's embedding
    baseline_token: str  # which token, and what it is: "pad <pad>"
    forward: Callable[[torch.Tensor], torch.Tensor]
    attention: np.ndarray | None = None  # [n]: the row the model used
    rollout: np.ndarray | None = None  # [n]
    refused: dict[str, str] = field(default_factory=dict)  # method -> why not
    batch: int = 16  # inputs per forward
    occlude: Callable[[], torch.Tensor] | None = None  # [n] occlusion by a faster path, where one exists
    notices: list[str] = field(default_factory=list)  # what changed on the way in (unknown characters…)
    rows: dict = field(
        default_factory=dict
    )  # ROWS' methods where the model has them: [n], or made when asked
    heads: np.ndarray | None = None  # [layers, heads, n]: each head's row at the output's query

    def available(self) -> tuple[str, ...]:
        return tuple(m for m in METHODS if m not in self.refused)


def at_head(subject: Subject, layer: int | None = None, head: int | None = None) -> Subject:
    """``subject`` whose attention row is layer ``layer``'s (default the last), head ``head``'s (default
    the heads averaged), as the Transformer page shows that head; an RNN has its one row only."""
    if subject.heads is None or (layer is None and head is None):
        return subject
    layers, heads = subject.heads.shape[:2]
    layer = layers - 1 if layer is None else layer
    if not (0 <= layer < layers and (head is None or 0 <= head < heads)):
        raise AttributionError(
            later(
                "{model} has layers 0–{last_layer} and heads 0–{last_head}: layer {layer}, head {head} is not one",
                model=subject.model_id,
                last_layer=layers - 1,
                last_head=heads - 1,
                layer=layer,
                head="mean" if head is None else head,
            )
        )
    rows = subject.heads[layer]
    return replace(subject, attention=(rows.mean(0) if head is None else rows[head]).astype(np.float32))


@dataclass(frozen=True)
class Attribution:
    """Every method's scores for one output, and their faithfulness (float32 numpy)."""

    model_id: str
    tokens: list[str]
    target: str
    baseline_token: str
    methods: tuple[str, ...]
    scores: dict[str, np.ndarray]  # method -> [n]
    f_input: float  # f(x)
    f_baseline: float  # f(baseline input)
    steps: int
    ig_completeness_gap: float  # NaN without integrated gradients
    comprehensiveness: np.ndarray  # [methods, 3]
    sufficiency: np.ndarray  # [methods, 3]
    deletion: np.ndarray  # [methods, n + 1]
    aopc: np.ndarray  # [methods]
    refused: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def with_row(self, part: Attribution, method: str) -> Attribution:
        """This attribution with ``method``'s scores and faithfulness taken from ``part``, an attribution
        of the same output (the attention row of another layer or head: ``at_head``)."""
        i, j = self.methods.index(method), part.methods.index(method)

        def put(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
            out = mine.copy()
            out[i] = theirs[j]
            return out

        return replace(
            self,
            scores={**self.scores, method: part.scores[method]},
            comprehensiveness=put(self.comprehensiveness, part.comprehensiveness),
            sufficiency=put(self.sufficiency, part.sufficiency),
            deletion=put(self.deletion, part.deletion),
            aopc=put(self.aopc, part.aopc),
        )

    @property
    def ig_relative_gap(self) -> float:
        """The completeness gap as a share of ``|f(x) − f(baseline)|``."""
        return self.ig_completeness_gap / max(abs(self.f_input - self.f_baseline), 1e-12)

    def arrays(self) -> dict:
        """What ``atlas attribute`` writes: ``tokens``, ``target``, one array per method,
        ``ig_completeness_gap``, ``comprehensiveness`` and ``sufficiency`` ``[methods, 3]``, ``methods``."""
        return {
            "model": self.model_id,
            "tokens": list(self.tokens),
            "target": self.target,
            "baseline_token": self.baseline_token,
            "methods": list(self.methods),
            **{m: self.scores[m] for m in self.methods},
            "f_input": self.f_input,
            "f_baseline": self.f_baseline,
            "steps": self.steps,
            "ig_completeness_gap": self.ig_completeness_gap,
            "fractions": np.asarray(FRACTIONS, np.float32),
            "comprehensiveness": self.comprehensiveness,
            "sufficiency": self.sufficiency,
            "deletion": self.deletion,
            "aopc": self.aopc,
        }


# -- the methods -------------------------------------------------------------------------------------


def check_methods(names: list[str] | None) -> tuple[str, ...] | None:
    """Method names as given (``None``: every one the model can do); an unknown name refused."""
    if names is None:
        return None
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise AttributionError(f"unknown method {unknown[0]!r}: choose from {', '.join(METHODS)}")
    if not names:
        raise AttributionError(f"no method given: choose from {', '.join(METHODS)}")
    return tuple(dict.fromkeys(names))


def check_steps(steps: int) -> int:
    if not 1 <= steps <= MAX_STEPS:
        raise AttributionError(f"--steps {steps}: give 1 to {MAX_STEPS} integration steps")
    return steps


def attribute(
    subject: Subject,
    methods: list[str] | tuple[str, ...] | None = None,
    steps: int = STEPS,
    faithfulness: bool = True,
    points: int | None = None,
) -> Attribution:
    """Every method's score per input token for ``subject``'s output, and each method's faithfulness
    (the deletion curve at every number of tokens replaced, or at about ``points`` of them: NaN between)."""
    chosen = check_methods(list(methods) if methods is not None else None) or subject.available()
    check_steps(steps)
    for m in chosen:
        if m in subject.refused:
            raise AttributionError(subject.refused[m])
    scores: dict[str, np.ndarray] = {}
    gap = float("nan")
    e, base = subject.embeddings, subject.baseline
    if "attention" in chosen:
        scores["attention"] = np.asarray(subject.attention, np.float32)
    if "rollout" in chosen:
        scores["rollout"] = np.asarray(subject.rollout, np.float32)
    for m in ROWS:
        if m in chosen:
            row = subject.rows[m]
            scores[m] = np.asarray(row() if callable(row) else row, np.float32)
    if "saliency" in chosen or "input_x_gradient" in chosen:
        from captum.attr import Saliency

        # one backward serves both: Captum's InputXGradient is the input times this same gradient
        grad = Saliency(subject.forward).attribute(_leaf(e), abs=False)[0]
        if "saliency" in chosen:
            scores["saliency"] = _np(grad.norm(dim=-1))
        if "input_x_gradient" in chosen:
            scores["input_x_gradient"] = _np((e * grad).sum(-1))
    if "integrated_gradients" in chosen:
        from captum.attr import IntegratedGradients

        full = base.expand_as(e)
        ig, delta = IntegratedGradients(subject.forward).attribute(
            _leaf(e),
            baselines=full[None].clone(),
            n_steps=steps,
            internal_batch_size=subject.batch,
            return_convergence_delta=True,
        )
        scores["integrated_gradients"] = _np(ig[0].sum(-1))
        gap = abs(float(delta.sum()))
    n = e.shape[0]
    ends = perturbed(
        subject, torch.stack([torch.zeros(n, dtype=torch.bool), torch.ones(n, dtype=torch.bool)])
    )
    f_x, f_b = float(ends[0]), float(ends[1])
    if subject.baseline_token == NO_BASELINE:  # nothing to replace tokens by
        f_b, faithfulness = float("nan"), False
    if "occlusion" in chosen:
        each = (
            subject.occlude()
            if subject.occlude is not None
            else perturbed(subject, torch.eye(n, dtype=torch.bool))
        )
        scores["occlusion"] = (f_x - _np(each)).astype(np.float32)
    comp, suff, deletion, aopc = (
        _faithfulness(subject, chosen, scores, f_x, points) if faithfulness else _empty(chosen, n)
    )
    return Attribution(
        subject.model_id,
        list(subject.tokens),
        subject.target,
        subject.baseline_token,
        chosen,
        scores,
        f_x,
        f_b,
        steps,
        gap,
        comp,
        suff,
        deletion,
        aopc,
        dict(subject.refused),
        list(subject.notices),
    )


def _leaf(e: torch.Tensor) -> torch.Tensor:
    """``e`` as a batch of one that gradients flow to."""
    return e[None].clone().requires_grad_(True)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


@torch.no_grad()
def perturbed(subject: Subject, masks: torch.Tensor) -> torch.Tensor:
    """``f`` of the input with the tokens ``masks [m, n]`` (bool) marks replaced by the baseline's
    embedding, ``[m]``, a batch at a time."""
    e, base = subject.embeddings, subject.baseline
    out = []
    for start in range(0, masks.shape[0], subject.batch):
        mask = masks[start : start + subject.batch].to(e.device)[..., None]
        out.append(subject.forward(torch.where(mask, base, e)).float().cpu())
    return torch.cat(out)


def ranking(scores: np.ndarray) -> np.ndarray:
    """Token positions by score, highest first (ties: the earlier token first)."""
    return np.argsort(-np.asarray(scores, np.float64), kind="stable")


def top_count(fraction: float, n: int) -> int:
    """How many tokens ``fraction`` of ``n`` is: rounded up, at least one."""
    return max(1, math.ceil(fraction * n - 1e-9))


def deletion_steps(n: int, points: int | None = None) -> np.ndarray:
    """The numbers of top tokens replaced at which the deletion curve is evaluated: every ``k`` from 0 to
    ``n``, or with ``points`` about that many spread evenly (the ``k`` of 10, 20, 50 % always among them)."""
    if points is None or points >= n + 1:
        return np.arange(n + 1)
    even = np.rint(np.linspace(0, n, max(points, 2))).astype(int)
    return np.unique(np.concatenate([even, [top_count(f, n) for f in FRACTIONS]]))


def _faithfulness(subject: Subject, chosen, scores: dict, f_x: float, points: int | None = None):
    n = subject.embeddings.shape[0]
    ks = deletion_steps(n, points)
    masks = []
    for m in chosen:
        order = ranking(scores[m])
        removed = np.zeros((len(ks), n), bool)  # row r: the top ks[r] replaced
        for r, k in enumerate(ks):
            removed[r, order[:k]] = True
        kept = np.ones((len(FRACTIONS), n), bool)
        for r, frac in enumerate(FRACTIONS):
            kept[r, order[: top_count(frac, n)]] = False
        masks.append(np.concatenate([removed, kept]))
    every = np.concatenate(masks)
    unique, back = np.unique(every, axis=0, return_inverse=True)  # methods that agree share forwards
    f = perturbed(subject, torch.from_numpy(unique)).numpy().astype(np.float64)[back.reshape(-1)]
    comp = np.zeros((len(chosen), len(FRACTIONS)), np.float32)
    suff = np.zeros_like(comp)
    deletion = np.full((len(chosen), n + 1), np.nan, np.float32)
    per = len(ks) + len(FRACTIONS)
    at_k = {int(k): r for r, k in enumerate(ks)}
    for i in range(len(chosen)):
        rows = f[i * per : (i + 1) * per]
        deletion[i, ks] = rows[: len(ks)]
        for r, frac in enumerate(FRACTIONS):
            comp[i, r] = f_x - rows[at_k[top_count(frac, n)]]
            suff[i, r] = f_x - rows[len(ks) + r]
    aopc = np.nanmean(f_x - deletion.astype(np.float64), axis=1).astype(np.float32)
    return comp, suff, deletion, aopc


def _empty(chosen, n: int):
    shape = (len(chosen), len(FRACTIONS))
    nan = np.full(shape, np.nan, np.float32)
    return (
        nan,
        nan.copy(),
        np.full((len(chosen), n + 1), np.nan, np.float32),
        np.full(len(chosen), np.nan, np.float32),
    )


# -- seq2seq models: our couplet RNNs and Transformer, the translation RNNs ----------------------------


@contextmanager
def swapped_output(module: torch.nn.Module, replacement: torch.Tensor):
    """While open, ``module``'s first call in this thread returns ``replacement`` (a seq2seq model's
    source embedding; a shared table's later calls, the decoder's, run as they are)."""
    owner, state = threading.get_ident(), {"done": False}

    def hook(mod, args, out):
        if state["done"] or threading.get_ident() != owner:
            return None
        state["done"] = True
        if out.shape != replacement.shape:
            raise AttributionError(
                f"the input embeddings have shape {tuple(out.shape)}, not {tuple(replacement.shape)}"
            )
        return replacement

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def seq2seq_subject(
    runner,
    source: list[str],
    target: list[str] | None = None,
    position: int | None = None,
    model_id: str = "the model",
) -> Subject:
    """The subject of a seq2seq runner (``models.text.runner.Seq2SeqRunner``: a couplet RNN, our
    couplet Transformer, a translation RNN): ``source`` tokens in, the output token at ``position`` of
    ``target`` (forced; else the model's own output), default the last one written."""
    from attention_atlas.models.nets.transformer import Transformer
    from attention_atlas.models.text.pairs import make_batch
    from attention_atlas.viz_core.stats import rollout

    model, vocab = runner.model, runner.tgt_vocab
    if target is None:
        target = vocab.decode(runner.generate([source])[0].tokens)
    eos = vocab.eos_id if runner.end_with_eos else None
    batch = make_batch(
        runner.src_ids([source]), [vocab.encode(target)], bos_id=vocab.bos_id, eos_id=eos, pad_id=vocab.pad_id
    )
    batch = batch.to(runner.device)
    outputs = batch.tgt_out.shape[1]
    written = len(target)
    if written == 0 and eos is None:
        raise AttributionError(later("the output is empty: there is no output token to explain"))
    if position is None:
        position = max(written - 1, 0)
    if not 0 <= position < outputs:
        raise AttributionError(
            f"--target-position {position} is out of range: the output has positions 0..{outputs - 1}"
        )
    src = batch.src
    n = src.shape[1]
    transformer = isinstance(model, Transformer)
    table = model.src_embed.embedding if transformer else model.encoder.embedding
    gold = int(batch.tgt_out[0, position])

    def run(embedded: torch.Tensor | None):
        b = 1 if embedded is None else embedded.shape[0]
        swap = nullcontext() if embedded is None else swapped_output(table, embedded)
        with swap, torch.backends.cudnn.flags(enabled=False):  # cuDNN's RNN backward needs training mode
            return model(src.expand(b, n), batch.src_lens.expand(b), batch.tgt_in.expand(b, -1))

    def forward(embedded: torch.Tensor) -> torch.Tensor:
        logits = run(embedded)[0][:, position]
        return torch.log_softmax(logits.float(), -1)[:, gold]

    with torch.no_grad():
        e = table(src)[0].detach()
        baseline = table(torch.tensor([vocab.pad_id], device=src.device))[0].detach()
        _, weights = run(None)
    refused = dict.fromkeys(
        ROWS,
        later(
            "{model} is a seq2seq model: value norms and contributions are read here from a causal LM's"
            " self-attention only",
            model=model_id,
        ),
    )
    if transformer:
        heads = weights["cross"][0, :, :, position].float().cpu().numpy()  # [layers, heads, n]
        cross = heads[-1].mean(0)
        encoder = weights["encoder_self"][0].float().cpu().numpy()  # [layers, heads, n, n]
        attention, rolled = cross, cross @ rollout(encoder)
    else:
        attention, rolled, heads = weights[0, position].float().cpu().numpy(), None, None
        refused["rollout"] = later(
            "{model} is an RNN: its one attention reads encoder states that mixed the input through"
            " recurrence, not through layers of attention, so there is nothing to roll out",
            model=model_id,
        )
    labels = [*source, *([runner.src_vocab.tokens[runner.src_vocab.eos_id]] if runner.end_with_eos else [])]
    return Subject(
        model_id,
        labels,
        vocab.tokens[gold],
        e,
        baseline,
        f"pad {vocab.tokens[vocab.pad_id]}",
        forward,
        attention.astype(np.float32),
        None if rolled is None else rolled.astype(np.float32),
        refused,
        batch=64,
        heads=heads,
    )


# -- Hugging Face encoder-decoders (an uploaded BART, T5, Marian...) ---------------------------------


def hf_seq2seq_subject(
    adapter, text: str, target_text: str | None = None, target_position: int | None = None
) -> Subject:
    """The subject of a Hugging Face encoder-decoder (an ``HFAdapter`` of the seq2seq family): ``text``
    is the source; the output token at ``target_position`` of ``target_text`` (forced, its tokens as the
    tokenizer writes them, specials included; else the model's greedy output), default the last one
    that is not a special token. The source embeddings are swapped in at the encoder's lookup."""
    from attention_atlas.viz_core.stats import rollout

    if target_text is not None and not target_text.strip():
        raise AttributionError(later("the output is empty: there is no output token to explain"))
    model, src = adapter.model, adapter.encode(text)
    ids = src.ids.to(adapter.device)
    notices = list(src.notices)
    if target_text is None:
        written = adapter.generated(ids)
        decoder_in, labels = written[:, :-1], written[:, 1:]
    else:
        line = adapter.encode(target_text)
        notices += line.notices
        labels = line.ids.to(adapter.device)
        decoder_in = model.prepare_decoder_input_ids_from_labels(labels=labels)
    outputs = labels.shape[1]
    specials = set(adapter.tokenizer.all_special_ids)
    if target_position is None:
        words = [p for p, i in enumerate(labels[0].tolist()) if i not in specials]
        target_position = words[-1] if words else outputs - 1
    if not 0 <= target_position < outputs:
        raise AttributionError(
            f"--target-position {target_position} is out of range: the output has positions 0..{outputs - 1}"
        )
    gold, n = int(labels[0, target_position]), ids.shape[1]
    table = model.get_encoder().get_input_embeddings()

    def run(embedded: torch.Tensor | None, attentions: bool = False):
        b = 1 if embedded is None else embedded.shape[0]
        swap = nullcontext() if embedded is None else swapped_output(table, embedded)
        with swap:
            return model(
                input_ids=ids.expand(b, n),
                decoder_input_ids=decoder_in.expand(b, -1),
                output_attentions=attentions,
                use_cache=False,
            )

    def forward(embedded: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(run(embedded).logits[:, target_position].float(), -1)[:, gold]

    base_id, base_name = baseline_id(adapter.tokenizer) or (0, NO_BASELINE)
    with torch.no_grad():
        e = table(ids)[0].detach()
        base = table(torch.tensor([[base_id]], device=ids.device))[0, 0].detach()
        out = run(None, attentions=True)
    refused = dict.fromkeys(
        ROWS,
        later(
            "{model} is a seq2seq model: value norms and contributions are read here from a causal LM's"
            " self-attention only",
            model=adapter.model_id,
        ),
    )
    if base_name == NO_BASELINE:
        why = later(
            "{model}'s tokenizer has no pad, unknown or end-of-text token to make a baseline input of",
            model=adapter.model_id,
        )
        refused.update(integrated_gradients=why, occlusion=why)
    heads = torch.cat([a.float().cpu() for a in out.cross_attentions])[:, :, target_position].numpy()
    encoder = torch.cat([a.float().cpu() for a in out.encoder_attentions]).numpy()
    attention = heads[-1].mean(0)
    return Subject(
        adapter.model_id,
        list(src.tokens),
        adapter.labels([gold])[0],
        e,
        base,
        base_name,
        forward,
        attention.astype(np.float32),
        (attention @ rollout(encoder)).astype(np.float32),
        refused,
        batch=16,
        notices=notices,
        heads=heads.astype(np.float32),
    )


# -- causal LMs --------------------------------------------------------------------------------------


def baseline_id(tokenizer) -> tuple[int, str] | None:
    """The baseline token: the tokenizer's pad token, else its unknown token, else its end-of-text
    token, as ``(id, "pad <|endoftext|>")``; None when it has none of them."""
    for name in BASELINE_NAMES:
        token_id = getattr(tokenizer, f"{name}_token_id", None)
        if token_id is not None:
            return int(token_id), f"{name} {getattr(tokenizer, f'{name}_token', token_id)}"
    return None


def causal_subject(
    adapter, text: str, target_text: str | None = None, target_position: int | None = None
) -> Subject:
    """The subject of a causal LM (an ``HFAdapter``): the next token after ``text`` (its argmax, or the
    first token of ``target_text``); with ``target_position`` K, the text's token K after those before."""
    src = adapter.encode(text)
    ids = src.ids.to(adapter.device)
    tokens = list(src.tokens)
    gold = None
    if target_position is not None:
        if target_text is not None:
            raise AttributionError("give --target-text or --target-position for a causal LM, not both")
        n = ids.shape[1]
        if not 1 <= target_position < n:
            raise AttributionError(
                f"--target-position {target_position} is out of range: the text's tokens 1..{n - 1} follow others"
            )
        gold = int(ids[0, target_position])
        ids, tokens = ids[:, :target_position], tokens[:target_position]
    elif target_text is not None:
        first = adapter.tokenizer(target_text, add_special_tokens=False)["input_ids"]
        if not first:
            raise AttributionError("--target-text gives no token")
        gold = int(first[0])
    try:
        weights = _self_attention(adapter, ids, tokens)
    except (RuntimeError, ValueError) as err:
        weights = later(
            "{model}: its attention weights cannot be read ({error})",
            model=adapter.model_id,
            error=" ".join(str(err).split()),
        )
    found = lm_subject(
        adapter.model,
        ids,
        gold,
        tokens,
        baseline_id(adapter.tokenizer),
        adapter.model_id,
        weights,
        adapter.labels,
    )
    rows, refused = _rows(adapter, text, ids, weights)
    kept = {m: why for m, why in found.refused.items() if m not in ROWS}
    return replace(found, notices=list(src.notices), rows=rows, refused={**kept, **refused})


def _one_line(model_id: str, err: Exception) -> str:
    return later("{model}: {error}", model=model_id, error=" ".join(shown(err).split()))


def _rows(adapter, text: str, ids: torch.Tensor, weights) -> tuple[dict, dict]:
    """How to make the value-norm-weighted attention row (the last layer's heads averaged, as the
    Transformer page weights them) and the contributions composed through every layer, made only when
    asked for; or, found without running them, why not."""
    from attention_atlas.models.adapters import value_norms as vn
    from attention_atlas.models.analysis.contributions import ContributionError, contributions_of, plan

    rows: dict = {}
    refused: dict[str, str] = {}
    n = ids.shape[1]
    if isinstance(weights, str):
        refused["value_norms"] = weights
    elif not vn.supports(adapter):
        refused["value_norms"] = later(
            "{model}: value vectors are read from BERT- and Llama-style self-attention only",
            model=adapter.model_id,
        )
    else:  # a causal model's value vectors at the first n tokens are those of the first n alone
        rows["value_norms"] = lambda: vn.weighted(weights, vn.value_norms(adapter, text)[:, :, :n])[-1].mean(
            0
        )[-1]
    try:
        plan(adapter.model, adapter.model_id)  # found once per model: refuses a block that does not add up
        rows["contributions"] = lambda: composed(contributions_of(adapter.model, ids, name=adapter.model_id))[
            -1
        ]
    except (ContributionError, ValueError, RuntimeError) as err:
        refused["contributions"] = " ".join(str(err).split())
    return rows, refused


def composed(result) -> np.ndarray:
    """``[n, n]``: each input token's share of each position's residual after the last block, the
    contribution graph's per-layer token contributions (``models.analysis.contributions``: the heads'
    parts of token j summed, and the residual as token i's own) multiplied through the layers as rollout
    multiplies attention (ALTI, Ferrando et al. 2022). A feed-forward block reads and writes one position,
    so it moves nothing between tokens."""
    n = result.positions
    out = np.eye(n)
    for layer in range(result.layers):
        step = result.attn[layer].sum(0).astype(np.float64) + np.diag(result.attn_residual[layer])
        out = step @ out
    return out.astype(np.float32)


def lm_subject(
    model: torch.nn.Module,
    ids: torch.Tensor,
    gold: int | None = None,
    tokens: list[str] | None = None,
    baseline: tuple[int, str] | None = None,
    model_id: str = "the model",
    weights: np.ndarray | str | None = None,
    labels: Callable[[list[int]], list[str]] | None = None,
) -> Subject:
    """The subject of a causal LM for ``ids [1, n]``: the token ``gold`` next (default the model's argmax),
    from a baseline of ``baseline = (token id, its name)``. ``weights [layers, heads, n, n]`` as the views
    read them (default: the model's ``output_attentions``), or a string saying why there are none."""
    from attention_atlas.viz_core.stats import rollout

    table = model.get_input_embeddings()
    refused: dict[str, str] = {}
    if baseline is None:
        why = later(
            "{model}'s tokenizer has no pad, unknown or end-of-text token to make a baseline input of",
            model=model_id,
        )
        refused.update(integrated_gradients=why, occlusion=why)
        baseline = (0, NO_BASELINE)
    base_id, base_name = baseline
    with torch.no_grad():
        e = table(ids)[0].detach()
        base = table(torch.tensor([[base_id]], device=ids.device))[0, 0].detach()

    def logits_of(embedded: torch.Tensor) -> torch.Tensor:
        return model(inputs_embeds=embedded, use_cache=False, logits_to_keep=1).logits[:, -1].float()

    if gold is None:
        with torch.no_grad():
            gold = int(logits_of(e[None]).argmax(-1)[0])

    def forward(embedded: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits_of(embedded), -1)[:, gold]

    if weights is None:
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True, use_cache=False)
        weights = torch.cat([a.float().cpu() for a in out.attentions]).numpy()
    attention = rolled = heads = None
    refused.update(
        dict.fromkeys(
            ROWS,
            later(
                "{model}: value norms and contributions are read through a registry adapter", model=model_id
            ),
        )
    )
    if isinstance(weights, str):
        refused.update(attention=weights, rollout=weights)
    else:
        heads = np.asarray(weights[:, :, -1], np.float32)  # [layers, heads, n]: the last position's rows
        attention, rolled = heads[-1].mean(0), rollout(weights)[-1]
    n = ids.shape[1]
    return Subject(
        model_id,
        list(tokens) if tokens is not None else [str(int(i)) for i in ids[0]],
        labels([gold])[0] if labels is not None else str(gold),
        e,
        base,
        base_name,
        forward,
        attention,
        rolled,
        refused,
        batch=16,
        occlude=None if "occlusion" in refused or n < 2 else (lambda: occlude_cached(model, e, base, gold)),
        heads=heads,
    )


def _self_attention(adapter, ids: torch.Tensor, tokens: list[str]) -> np.ndarray:
    """``[layers, heads, n, n]`` as the app's views read them (the adapter's record of these ids), from
    an eager twin where the model runs another attention."""
    from attention_atlas.models.adapters.hf_common import Encoded

    n = ids.shape[1]
    src = Encoded(ids.cpu(), tokens, [False] * n, list(range(n)), [])
    runner = adapter
    if getattr(adapter.model.config, "_attn_implementation", "eager") != "eager":
        from attention_atlas.models.adapters.capture import _twin

        twin = _twin(adapter.model, adapter.device, "eager")
        runner = type(adapter).loaded(twin, adapter.tokenizer, adapter.model_id, adapter.family)
    return runner.run_encoded(src).records["self"].weights


BLOCK = 16  # occluded tokens per batch of the cached occlusion


@torch.no_grad()
def occlude_cached(
    model, e: torch.Tensor, baseline: torch.Tensor, gold: int, block: int = BLOCK
) -> torch.Tensor:
    """``f`` with each token's embedding replaced by the baseline's, ``[n]``, for a causal LM: a block of
    tokens ``a..b`` at a time, one row each, the keys and values of the positions before ``a`` (which
    no token of the block changes) computed once and reused; the rows run only positions ``a..n−1``."""
    from transformers import DynamicCache

    n = e.shape[0]
    out = torch.empty(n)
    for a in range(0, n, block):
        b = min(n, a + block)
        rows = b - a
        x = e[a:].expand(rows, -1, -1).clone()
        x[torch.arange(rows), torch.arange(rows)] = baseline
        past = None
        if a:
            past = DynamicCache(config=model.config)
            model(inputs_embeds=e[None, :a], past_key_values=past, use_cache=True, logits_to_keep=1)
            past.batch_repeat_interleave(rows)
        positions = torch.arange(a, n, device=e.device)[None].expand(rows, -1)
        logits = model(
            inputs_embeds=x,
            past_key_values=past,
            use_cache=past is not None,
            position_ids=positions,
            cache_position=positions[0],
            logits_to_keep=1,
        ).logits[:, -1]
        out[a:b] = torch.log_softmax(logits.float(), -1)[:, gold].cpu()
    return out


# -- from an adapter ---------------------------------------------------------------------------------


def refusal(adapter):
    """Why attribution cannot serve ``adapter``, in one line (a ``later`` message), or None where it can:
    a seq2seq adapter of ours, a causal LM or a Hugging Face encoder-decoder."""
    from attention_atlas.models.adapters.base import Seq2SeqAdapter

    family = getattr(adapter, "family", None)
    if isinstance(adapter, Seq2SeqAdapter) or (
        family in ("causal", "seq2seq") and isinstance(getattr(adapter, "model", None), torch.nn.Module)
    ):
        return None
    if family == "encoder":
        return later("{model} is an encoder: it writes no output token to explain", model=adapter.model_id)
    return later(
        "{model} is a {family} model: attribution serves couplet, translation and causal language models",
        model=adapter.model_id,
        family=family or "other",
    )


def subject_of(
    adapter, text: str, target_text: str | None = None, target_position: int | None = None
) -> Subject:
    """The subject of any model with an output: a seq2seq adapter of ours, a causal LM or a Hugging Face
    encoder-decoder; any other refused in one line (``refusal``)."""
    from attention_atlas.models.adapters.base import Seq2SeqAdapter

    why = refusal(adapter)
    if why is not None:
        raise AttributionError(why)
    if isinstance(adapter, Seq2SeqAdapter):
        source = adapter.prepare(text, adapter.source_name)
        line = None if target_text is None else adapter.prepare(target_text, adapter.target_name)
        target = None if line is None else list(line.tokens)
        found = seq2seq_subject(
            adapter.runner, list(source.tokens), target, target_position, adapter.model_id
        )
        said = [*source.notices, *(line.notices if line else []), *adapter.notices(source, line)]
        return replace(found, notices=said)
    subject = causal_subject if adapter.family == "causal" else hf_seq2seq_subject
    return subject(adapter, text, target_text, target_position)


# -- comparing methods -------------------------------------------------------------------------------


def agreement(result: Attribution) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's ρ and Kendall's τ between every two methods' scores, ``[methods, methods]`` each (NaN
    where a method scores every token alike)."""
    from scipy.stats import kendalltau, spearmanr

    m = len(result.methods)
    rho, tau = np.eye(m), np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            a, b = result.scores[result.methods[i]], result.scores[result.methods[j]]
            if np.ptp(a) == 0 or np.ptp(b) == 0:
                rho[i, j] = rho[j, i] = tau[i, j] = tau[j, i] = np.nan
                continue
            rho[i, j] = rho[j, i] = spearmanr(a, b).statistic
            tau[i, j] = tau[j, i] = kendalltau(a, b).statistic
    return rho, tau


def plausibility(
    adapter, pairs: list[tuple[str, str]], methods: list[str] | None = None, steps: int = STEPS
) -> dict[str, dict[str, float]]:
    """For a couplet model, per method over every position of the couplets ``pairs`` (upper, lower),
    each lower line forced: ``plausible``, how often the method's top input character is the aligned
    one (output position i ↔ input position i); and its mean ``aopc``, ``comprehensiveness`` and
    ``sufficiency`` at 20 % of the characters: which method is most faithful, which most plausible."""
    sums: dict[str, dict[str, float]] = {}
    total = 0
    for upper, lower in pairs:
        for k in range(min(len(upper), len(lower))):
            result = attribute(subject_of(adapter, upper, lower, k), methods, steps)
            for r, m in enumerate(result.methods):
                row = sums.setdefault(
                    m, dict.fromkeys(("plausible", "aopc", "comprehensiveness", "sufficiency"), 0.0)
                )
                row["plausible"] += float(np.argmax(result.scores[m]) == k)
                row["aopc"] += float(result.aopc[r])
                row["comprehensiveness"] += float(result.comprehensiveness[r, 1])
                row["sufficiency"] += float(result.sufficiency[r, 1])
            total += 1
    return {m: {k: v / max(total, 1) for k, v in row.items()} for m, row in sums.items()}
