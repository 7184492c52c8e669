"""What a bare state dict's tensor shapes say about the network that wrote it, per network kind.

A family's ``Architecture`` (registered in its adapter file) points here for its ``infer``,
``ranges`` and ``describe``: the couplet and translation RNNs share the seq2seq RNN's, the
couplet Transformer uses the Transformer's (a family on a new network writes its own
beside these, or in its adapter file). Whatever no shape records (a parameter-free scorer,
the head count) comes back as ``Missing``, for the caller to ask.

>>> cfg, missing = infer_rnn({"encoder.embedding.weight": (50, 8), "encoder.rnn.weight_hh_l0": (64, 16),
...     "decoder.out.weight": (50, 16)})
>>> cfg["rnn"], cfg["hidden_size"], [m.field for m in missing]
('lstm', 16, ['attention', 'key_activation'])
"""

from __future__ import annotations

import re

from attention_atlas.i18n import N_, _, later, later_n
from attention_atlas.models.attention.scoring import SCORERS
from attention_atlas.models.uploads.architectures import Missing
from attention_atlas.models.uploads.safety import UploadError

# -- seq2seq RNN (the couplet tutorial, the Bahdanau tutorial): BiLSTM/GRU encoder, attention, LSTM/GRU decoder ------------

RNN_RANGES = {
    "src_vocab_size": (5, 500_000),
    "tgt_vocab_size": (5, 500_000),
    "embed_size": (1, 4096),
    "hidden_size": (1, 4096),
    "num_layers": (1, 8),
    "dropout": (0.0, 1.0),
    "pad_id": (0, 0),
    "rnn": ("lstm", "gru"),
    "attention": tuple(SCORERS),
}
PARAMETER_FREE = ("scaled_dot", "dot", "cosine", "gaussian")  # scorers that leave no tensor behind


def infer_rnn(shapes: dict[str, tuple[int, ...]], title: str = "seq2seq RNN") -> tuple[dict, list[Missing]]:
    """A ``Seq2SeqConfig`` dict from tensor shapes; the scorer is missing when it has no parameters,
    and the keys' activation always is (a linear layer looks the same with or without tanh after it)."""
    _need(shapes, ("encoder.embedding.weight", "encoder.rnn.weight_hh_l0", "decoder.out.weight"), title)
    v_src, embed = shapes["encoder.embedding.weight"]
    gates, hidden = shapes["encoder.rnn.weight_hh_l0"]
    rnn = {4: "lstm", 3: "gru"}.get(gates // hidden) if hidden and gates % hidden == 0 else None
    if rnn is None:
        raise UploadError(
            _(
                "encoder.rnn.weight_hh_l0 is {shape}: neither an LSTM (4h × h) nor a GRU (3h × h)",
                shape=[gates, hidden],
            )
        )
    cfg = {
        "src_vocab_size": v_src,
        "tgt_vocab_size": shapes["decoder.out.weight"][0],
        "embed_size": embed,
        "hidden_size": hidden,
        "num_layers": _count(shapes, r"encoder\.rnn\.weight_hh_l(\d+)"),
        "rnn": rnn,
        "share_embeddings": "decoder.embedding.weight" not in shapes,
    }
    missing = []
    params = {k.rsplit(".", 1)[1] for k in shapes if k.startswith("decoder.attention.params.")}
    if params == {"W_q", "W_k", "v"}:
        cfg["attention"] = "additive"
    elif params == {"W"}:
        cfg["attention"] = "general"
    elif not params:
        missing.append(
            Missing("attention", _("a parameter-free scorer leaves no tensor behind"), PARAMETER_FREE)
        )
    else:
        raise UploadError(
            _("decoder.attention has parameters {params}, which match no scoring function", params=sorted(params))
        )
    why = _(
        "no tensor records whether the encoder states pass through tanh (the couplet tutorial) or stay linear"
    )
    missing.append(Missing("key_activation", why, ("tanh", "linear")))
    return cfg, missing


# An RNN's attention as its summary names it (``describe_rnn``); another scorer by its own name.
ATTENTION_NAMES = {"additive": N_("additive attention"), "scaled_dot": N_("scaled dot-product attention")}


def describe_rnn(cfg) -> str:
    """``'GRU encoder–decoder, additive attention, hidden 256'``, in the language of where it is shown
    (``i18n.later``: an upload's summary outlives a switch of language)."""
    attention = ATTENTION_NAMES.get(cfg.attention)
    return later(
        "{rnn} encoder–decoder, {attention}, hidden {hidden}",
        rnn=cfg.rnn.upper(),
        attention=later(attention) if attention else later("{name} attention", name=cfg.attention),
        hidden=cfg.hidden_size,
    )


# -- encoder–decoder Transformer -------------------------------------------------------------------

TRANSFORMER_RANGES = {
    "src_vocab_size": (5, 500_000),
    "tgt_vocab_size": (5, 500_000),
    "d_model": (1, 4096),
    "num_heads": (1, 64),
    "encoder_layers": (1, 24),
    "decoder_layers": (1, 24),
    "ffn_size": (1, 16384),
    "dropout": (0.0, 1.0),
    "max_len": (1, 100_000),
    "pad_id": (0, 0),
}


def infer_transformer(
    shapes: dict[str, tuple[int, ...]], title: str = "couplet Transformer"
) -> tuple[dict, list[Missing]]:
    """A ``TransformerConfig`` dict from tensor shapes; the head count is never in a shape."""
    _need(shapes, ("src_embed.embedding.weight", "decoder.out_bias", "encoder_layers.0.ffn.0.weight"), title)
    v_src, d = shapes["src_embed.embedding.weight"]
    cfg = {
        "src_vocab_size": v_src,
        "tgt_vocab_size": shapes["decoder.out_bias"][0],
        "d_model": d,
        "encoder_layers": _count(shapes, r"encoder_layers\.(\d+)\.norm1\.weight"),
        "decoder_layers": _count(shapes, r"decoder\.layers\.(\d+)\.norm1\.weight"),
        "ffn_size": shapes["encoder_layers.0.ffn.0.weight"][0],
        "share_embeddings": "decoder.embed.embedding.weight" not in shapes,
        "dropout": 0.0,
    }
    heads = tuple(h for h in (4, 8, 2, 1, 16, 32, 64) if d % h == 0)
    return cfg, [
        Missing("num_heads", _("no tensor shape records how the {d} dimensions split into heads", d=d), heads)
    ]


def describe_transformer(cfg) -> str:
    """``'encoder–decoder Transformer, 3 + 3 layers × 4 heads, d_model 256'``, in the language of where
    it is shown (``i18n.later``)."""
    return later(
        "encoder–decoder Transformer, {encoder} + {decoder} layers × {heads}, d_model {d}",
        encoder=cfg.encoder_layers,
        decoder=cfg.decoder_layers,
        heads=later_n("{n:,} head", "{n:,} heads", cfg.num_heads, n=cfg.num_heads),
        d=cfg.d_model,
    )


def transformer_layers_heads(cfg) -> tuple[str, int]:
    return f"{cfg.encoder_layers} + {cfg.decoder_layers}", cfg.num_heads


# -- helpers -----------------------------------------------------------------------------------------


def _count(shapes: dict, pattern: str) -> int:
    rx = re.compile(pattern)
    return len({m.group(1) for k in shapes if (m := rx.fullmatch(k))})


def _need(shapes: dict, keys: tuple[str, ...], title: str) -> None:
    absent = [k for k in keys if k not in shapes]
    if absent:
        shown = ", ".join(absent[:3]) + (", …" if len(absent) > 3 else "")
        raise UploadError(_("these tensors are not a {title}: no {shown}", title=title, shown=shown))
