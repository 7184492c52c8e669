"""Every head's queries and keys of one record kind, for the neuron view (``viz_core.neuron``).

    vectors = head_vectors(adapter, "The cat sat on the mat.", "self")
    q, k = vectors.head(layer, head)     # [queries, d], [keys, d]: grouped key heads repeated
    neuron(vectors, layer, head, query)  # q, K, q∘K, scores and weights of one query token

Both ways a model hands over its queries and keys are the one capture mechanism
(``models.capture_points``, ``recording(QUERIES, KEYS, ...)``):

- an adapter with its own ``capture(text)`` (our Transformer: its ``MultiHeadAttention`` reports
  to the recording; one list of ``(queries, keys)`` per record kind, from the teacher-forced pass
  that gives the records). Its scaling is what the record's ``scoring`` says (``scaled_dot``:
  1/√d; ``dot``: 1); the decoder's self-attention is causal.
- a Hugging Face encoder or causal model (registered or uploaded): ``models.adapters.capture``,
  the long-input path's twin, with the scaling and causal flag the model's attention call used.

Anything else (an RNN, an encoder–decoder from a folder, a sliding window) is one ``ValueError``
line naming why. Works on adapters, not ids, so an uploaded checkpoint's adapter gets the view too.
"""

from __future__ import annotations

from attention_atlas.i18n import later
from attention_atlas.viz_core.neuron import HeadVectors

SCALING = {"scaled_dot": None, "dot": 1.0}  # a record's scoring → its factor on q·k (None: 1/√d)
CAUSAL_KINDS = ("decoder_self",)  # our Transformer's record kinds whose keys stop at the query


def supports(adapter) -> str | None:
    """None where ``adapter`` hands over queries and keys, else why not (one line)."""
    if callable(getattr(adapter, "capture", None)):
        return None
    if not hasattr(adapter, "tokenizer") or not hasattr(adapter, "config"):
        return f"{adapter.model_id} has no queries and keys to show: it is not a Transformer"
    from attention_atlas.models.adapters.capture import supports as capture_supports

    return capture_supports(adapter)


def head_vectors(adapter, text: str, kind: str) -> HeadVectors:
    """Every layer's queries and keys of record ``kind`` for ``text``, as the weights were made."""
    why = supports(adapter)
    if why:
        raise ValueError(why)
    if callable(getattr(adapter, "capture", None)):
        return _own(adapter, text, kind)
    return _hugging_face(adapter, text, kind)


def _own(adapter, text: str, kind: str) -> HeadVectors:
    result, qk = adapter.capture(text)
    if kind not in qk or kind not in result.records:
        raise ValueError(
            later(
                "{model} has no {kind} attention (it has {kinds})",
                model=adapter.model_id,
                kind=kind,
                kinds=", ".join(qk),
            )
        )
    record = result.records[kind]
    if record.scoring not in SCALING:
        raise ValueError(
            later(
                "{model} scores {kind} with {scoring}, not a dot product",
                model=adapter.model_id,
                kind=kind,
                scoring=record.scoring,
            )
        )
    d = qk[kind][0][0].shape[-1]
    scale = SCALING[record.scoring] or d**-0.5
    return HeadVectors(
        queries=[q for q, _ in qk[kind]],
        keys=[k for _, k in qk[kind]],
        scaling=[scale] * len(qk[kind]),
        causal=kind in CAUSAL_KINDS,
        query_tokens=list(record.query_tokens),
        key_tokens=list(record.key_tokens),
        key_special=list(record.meta.get("key_special") or [False] * len(record.key_tokens)),
    )


def _hugging_face(adapter, text: str, kind: str) -> HeadVectors:
    from attention_atlas.models.adapters.capture import capture

    if kind != "self":
        raise ValueError(
            later("{model} has self-attention only, not {kind}", model=adapter.model_id, kind=kind)
        )
    cap = capture(adapter, text)
    shown = adapter.encode(text).ids.shape[1]  # what run() reads: cut at the model's limit
    if cap.n_tokens != shown:
        raise ValueError(
            f"the text is {cap.n_tokens:,} tokens; the neuron view reads inputs of at most {shown:,} "
            f"tokens for {adapter.model_id}: shorten it"
        )
    return HeadVectors(
        queries=cap.queries,
        keys=cap.keys,
        scaling=cap.scaling,
        causal=cap.causal,
        query_tokens=list(cap.tokens),
        key_tokens=list(cap.tokens),
        key_special=list(cap.special),
    )
