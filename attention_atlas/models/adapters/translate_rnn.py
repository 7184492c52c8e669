"""translate-gru-additive / translate-lstm-dot: the Bahdanau tutorial's English → French models, as registry adapters.

    adapter = registry.load("translate-gru-additive")
    result = adapter.run("I'm home.")                               # translate (greedy; beam=4)
    result = adapter.run("I'm home.", target="Je suis chez moi.")   # force-decode a French sentence
    result.records["cross"]  # [1 layer, 1 head, French words + <eos>, English words + <eos>]

The module registers the model ids and the upload architecture (a translation RNN
checkpoint from anyone, read by ``models.uploads``); weights are read when a model is built.
"""

from __future__ import annotations

import numpy as np

from attention_atlas.i18n import N_, later
from attention_atlas.models.adapters.base import Seq2SeqAdapter, scorer_first
from attention_atlas.models.registry import RunResult, register
from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.uploads.architectures import Architecture, register_architecture
from attention_atlas.models.uploads.shapes import RNN_RANGES, describe_rnn, infer_rnn
from attention_atlas.paths import WEIGHTS
from attention_atlas.viz_core.record import AttentionRecord


class TranslationAdapter(Seq2SeqAdapter):
    """Runs one translation bundle. Holds no per-request state: safe to share between sessions."""

    task = "translation"
    source_name, target_name = later("English sentence"), later("French sentence")

    def make_runner(self):
        from attention_atlas.models.tasks.translation import Translator

        self.scoring = self.bundle.model.config.attention
        return Translator(self.bundle.model, self.bundle.src_vocab, self.bundle.tgt_vocab, self.device)

    def prepare(self, text: str | None, what: str):
        from attention_atlas.models.tasks.translation import prepare_sentence

        return prepare_sentence(text, what)

    def notices(self, english, french) -> list[str]:
        from attention_atlas.models.tasks.translation import unknown_notice

        out = [unknown_notice(english.tokens, self.bundle.src_vocab, self.source_name)]
        if french:
            out.append(unknown_notice(french.tokens, self.bundle.tgt_vocab, self.target_name))
        return [n for n in out if n]

    def result(self, english, french, d, strategy: str, notices: list[str]) -> RunResult:
        from attention_atlas.models.text.vocab import EOS

        tgt = self.bundle.tgt_vocab
        # Forced: the French words and eos; generated: what was emitted (<unk> kept, eos if reached).
        query = [*french.tokens, EOS] if french else [tgt.tokens[i] for i in d.tokens]
        written = query[:-1] if query and query[-1] == EOS else query
        keys = [*english.tokens, EOS]
        meta = self.base_meta(english, french, d, strategy, tgt)
        meta["finished"] = query[-1:] == [EOS]  # False: stopped at the length cap
        weights = d.weights.numpy().astype(np.float32)[None, None]  # [1 layer, 1 head, query, key]
        record = AttentionRecord(
            weights, query, keys, "cross", self.model_id, scoring=self.scoring, meta=meta
        )
        output = None if french else _detokenize(written)
        return RunResult({"cross": record}, output, notices)


def _detokenize(words: list[str]) -> str:
    from attention_atlas.models.tasks.translation import detokenize

    return detokenize(words)


from_checkpoint = TranslationAdapter.from_checkpoint

register_architecture(
    Architecture(
        name="translation-rnn",
        title=N_("translation RNN"),
        bundle=Seq2SeqBundle,
        task="translation",
        tokenizer="word",
        adapter=TranslationAdapter,
        infer=lambda shapes: infer_rnn(shapes, "translation RNN"),
        ranges=RNN_RANGES,
        describe=describe_rnn,
        layers_heads=lambda cfg: ("1", 1),
        compare=scorer_first("translate-gru-additive", "translate-lstm-dot"),
        example="I'm home.",
        how_to="atlas export --model translate-gru-additive --out my.safetensors  "
        "(or: atlas train translate --rnn gru --attention additive --out weights/mine)",
        shared_vocab=False,
    )
)



CAPABILITIES = {"layers": 1, "heads": 1, "kinds": ("cross",), "example": "I'm home."}
register(
    "translate-gru-additive",
    "translation",
    "The Bahdanau tutorial: English → French, BiGRU encoder, GRU decoder, Bahdanau additive attention",
    default=True,
    card=WEIGHTS / "translate-gru-additive" / "metrics.json",
    **CAPABILITIES,
)(TranslationAdapter.bundled("translate-gru-additive", "atlas train translate --rnn gru --attention additive"))
register(
    "translate-lstm-dot",
    "translation",
    "The Bahdanau tutorial's variant: English → French, BiLSTM encoder, LSTM decoder, scaled dot-product attention",
    card=WEIGHTS / "translate-lstm-dot" / "metrics.json",
    **CAPABILITIES,
)(TranslationAdapter.bundled("translate-lstm-dot", "atlas train translate --rnn lstm --attention dot"))
