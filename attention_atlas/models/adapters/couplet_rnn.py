"""couplet-rnn-dot / couplet-rnn-additive: the couplet tutorial's couplet seq2seq, as registry adapters.

    adapter = registry.load("couplet-rnn-additive")
    result = adapter.run("两个黄鹂鸣翠柳")                      # generate (greedy; beam=4 for beam search)
    result = adapter.run("两个黄鹂鸣翠柳", target="一行白鹭上青天")  # force-decode a lower line
    result.records["cross"]  # [1 layer, 1 head, lower-line chars, upper-line chars]

The module registers the model ids and the upload architecture (a couplet RNN checkpoint
from anyone, read by ``models.uploads``); weights are read when a model is built.
"""

from __future__ import annotations

import numpy as np

from attention_atlas.i18n import N_, later_n
from attention_atlas.models.adapters.base import Seq2SeqAdapter, scorer_first
from attention_atlas.models.registry import RunResult, register
from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.tasks.couplet import EXAMPLE, LOWER, UPPER
from attention_atlas.models.uploads.architectures import Architecture, register_architecture
from attention_atlas.models.uploads.shapes import RNN_RANGES, describe_rnn, infer_rnn
from attention_atlas.paths import WEIGHTS
from attention_atlas.viz_core.record import AttentionRecord


class CoupletAdapter(Seq2SeqAdapter):
    """What every couplet model shares, whatever its network: one character vocabulary for both
    lines, the lines cleaned and checked, the notices (unknown characters, unequal lengths)."""

    task = "couplet"
    source_name, target_name = UPPER, LOWER

    @property
    def vocab(self):
        return self.bundle.src_vocab

    def prepare(self, text: str | None, what: str):
        from attention_atlas.models.tasks.couplet import prepare_line

        return prepare_line(text, what)

    def notices(self, upper, lower) -> list[str]:
        from attention_atlas.models.tasks.couplet import unknown_notice

        out = []
        for line, what in ((upper, self.source_name), (lower, self.target_name)):
            note = line and unknown_notice(line.chars, self.vocab, what)
            if note:
                out.append(note)
        if lower and len(lower.chars) != len(upper.chars):
            n = len(lower.chars)
            out.append(
                later_n(
                    "The lower line has {n} character and the upper line {m}; a couplet's lines are equally long.",
                    "The lower line has {n} characters and the upper line {m}; a couplet's lines are equally long.",
                    n,
                    n=n,
                    m=len(upper.chars),
                )
            )
        return out


class CoupletRNNAdapter(CoupletAdapter):
    """Runs one couplet RNN bundle. Holds no per-request state: safe to share between sessions."""

    def make_runner(self):
        from attention_atlas.models.tasks.couplet import CoupletModel

        self.scoring = self.bundle.model.config.attention
        return CoupletModel(self.bundle.model, self.bundle.src_vocab, self.device)

    def result(self, upper, lower, d, strategy: str, notices: list[str]) -> RunResult:
        from attention_atlas.models.text.metrics import diagonal_hits

        query = lower.chars if lower else self.vocab.decode(d.tokens)
        weights = d.weights.numpy().astype(np.float32)  # [query, key]
        hits, rows = diagonal_hits(weights)
        meta = self.base_meta(upper, lower, d, strategy, self.vocab)
        meta["alignment"] = hits / rows if rows else None  # share of rows peaking on their own position
        record = AttentionRecord(
            weights[None, None], query, upper.chars, "cross", self.model_id, scoring=self.scoring, meta=meta
        )  # [1 layer, 1 head, query, key]
        output = None if lower else "".join(query)
        return RunResult({"cross": record}, output, notices)


from_checkpoint = CoupletRNNAdapter.from_checkpoint

register_architecture(
    Architecture(
        name="couplet-rnn",
        title=N_("couplet RNN"),
        bundle=Seq2SeqBundle,
        task="couplet",
        tokenizer="char",
        adapter=CoupletRNNAdapter,
        infer=lambda shapes: infer_rnn(shapes, "couplet RNN"),
        ranges=RNN_RANGES,
        aliases=(("encoder.embedding.weight", "decoder.embedding.weight"),),
        describe=describe_rnn,
        layers_heads=lambda cfg: ("1", 1),  # one attention, whatever the RNN depth
        compare=scorer_first("couplet-rnn-additive", "couplet-rnn-dot"),
        example=EXAMPLE[0],
        how_to="atlas export --model couplet-rnn-additive --out my.safetensors  "
        "(or: atlas train couplet-rnn --attention additive --out weights/mine)",
    )
)


CAPABILITIES = {"layers": 1, "heads": 1, "kinds": ("cross",), "example": "两个黄鹂鸣翠柳"}
register(
    "couplet-rnn-dot",
    "couplet",
    "The couplet tutorial: BiLSTM encoder, LSTM decoder, parameter-free scaled dot-product attention",
    card=WEIGHTS / "couplet-rnn-dot" / "metrics.json",
    **CAPABILITIES,
)(CoupletRNNAdapter.bundled("couplet-rnn-dot", "atlas train couplet-rnn --attention dot"))
register(
    "couplet-rnn-additive",
    "couplet",
    "The couplet tutorial: BiLSTM encoder, LSTM decoder, Bahdanau additive attention",
    default=True,
    card=WEIGHTS / "couplet-rnn-additive" / "metrics.json",
    **CAPABILITIES,
)(CoupletRNNAdapter.bundled("couplet-rnn-additive", "atlas train couplet-rnn --attention additive"))
