"""One adapter for any Hugging Face encoder, causal LM or encoder–decoder folder on disk.

Loading is offline and code-free: ``local_files_only``, no ``trust_remote_code``, and the
eager attention path (SDPA and flash kernels return no weights; transformers 5 then hands
back an empty tuple without complaint, so every layer's weights are checked here).

Records are token-level and exact: special tokens kept, nothing merged. Views merge.

The module also registers the Hugging Face families an uploaded folder may hold (a zipped
``save_pretrained`` folder, read by ``models.uploads``), each run by this adapter. ``Encoded``,
``InputError`` and ``family_of`` live in ``hf_common`` (shared with ``capture`` and the upload
checks without an import circle) and are importable from here as before.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from attention_atlas.i18n import later
from attention_atlas.models.adapters.capture import capture, single_alibi
from attention_atlas.models.adapters.hf_common import Encoded, InputError, as_prompt, family_of
from attention_atlas.models.registry import RunResult
from attention_atlas.models.uploads.hf_folder import HFFamily, register_hf_family
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import byte_level_labels, well_formed

# Never reach a hub, whatever the caller's environment says.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MAX_CHARS = 20_000  # longer input is cut before tokenizing (the token limit then applies)
MASK_NAMES = ("mask", "pad", "unk", "eos")  # what may stand in for a masked token, in this order


def is_byte_level(tokenizer) -> bool:
    """Whether the tokenizer writes bytes as characters (GPT-2's byte-level BPE: ``Ġcat``, ``ä¸``)."""
    if hasattr(tokenizer, "byte_decoder"):  # the slow GPT-2 family
        return True
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend is not None and "ByteLevel" in repr(backend.decoder)


class HFAdapter:
    """Attention of a transformers model stored in ``folder`` (config, weights, tokenizer)."""

    def __init__(
        self, model_id: str, folder: str | Path, device: torch.device, max_tokens: int | None = None
    ):
        from transformers import (
            AutoConfig,
            AutoModel,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # no progress bars or advice on stderr (the CLI prints JSON there)
        hf_logging.disable_progress_bar()

        folder = Path(folder)
        self.model_id, self.device = model_id, device
        self.config = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
        self.family = family_of(self.config)
        loader = {"seq2seq": AutoModelForSeq2SeqLM, "causal": AutoModelForCausalLM, "encoder": AutoModel}
        self.model = loader[self.family].from_pretrained(
            folder,
            local_files_only=True,
            trust_remote_code=False,
            attn_implementation="eager",
            dtype=torch.float32,
        )
        self.model.to(device).eval()
        single_alibi(self.model)  # Falcon's eager path would add ALiBi twice
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
        self._read_tokenizer(max_tokens)

    def _read_tokenizer(self, max_tokens: int | None) -> None:
        self.byte_level = is_byte_level(self.tokenizer)
        self.max_tokens = max_tokens or _token_limit(self.config, self.tokenizer)
        self.n_layers, self.n_heads = _layers_heads(self.config)
        self.sink_layers = sink_layers(self.model)

    @classmethod
    def loaded(cls, model, tokenizer, model_id: str = "notebook", family: str | None = None) -> HFAdapter:
        """An adapter around a model and tokenizer the caller has already loaded (a notebook's): on
        the model's own device and dtype, with whatever attention implementation it was loaded with;
        nothing is moved, copied or switched to eval. ``family`` where its config does not say."""
        self = cls.__new__(cls)
        self.model_id, self.model, self.tokenizer, self.config = model_id, model, tokenizer, model.config
        self.device = next(model.parameters()).device
        self.family = family or family_of(self.config)
        self._read_tokenizer(None)
        return self

    # ------------------------------------------------------------------ input
    def encode(self, text: str, max_tokens: int | None = None) -> Encoded:
        """Tokenize ``text`` as the model sees it, truncating to the model's limit with a notice."""
        text = "" if text is None else str(text)
        if not text.strip():
            raise InputError(later("the text is empty: type a sentence"))
        text, notices = well_formed(text)
        if len(text) > MAX_CHARS:
            notices.append(
                later(
                    "the text had {n:,} characters; only the first {limit:,} were read",
                    n=len(text),
                    limit=MAX_CHARS,
                )
            )
            text = text[:MAX_CHARS]
        limit = min(max_tokens or self.max_tokens, self.max_tokens)
        full = self.tokenizer(text, add_special_tokens=True)["input_ids"]
        enc = self.tokenizer(
            text, truncation=True, max_length=limit, return_tensors="pt", return_special_tokens_mask=True
        )
        if len(full) > limit:
            notices.append(
                later(
                    "the text is {n:,} tokens; attention is shown for the first {limit:,}",
                    n=len(full),
                    limit=limit,
                )
            )
        ids = enc["input_ids"]
        if ids.shape[1] == 0:
            raise InputError(later("the tokenizer produced no tokens for this text"))
        try:
            word_ids = enc.word_ids(0)
        except (ValueError, AttributeError):  # slow tokenizers do not track words
            word_ids = list(range(ids.shape[1]))
        special = [bool(s) for s in enc["special_tokens_mask"][0].tolist()]
        return self._encoded(*as_prompt(self.family, ids, special, list(word_ids)), notices)

    def full_length(self, text: str) -> int:
        """The tokens ``encode`` would read from the whole of ``text``, uncut (for a refusal's count)."""
        enc = self.tokenizer(well_formed(text)[0], return_special_tokens_mask=True)
        ids, special = enc["input_ids"], [bool(s) for s in enc["special_tokens_mask"]]
        return as_prompt(self.family, torch.tensor([ids]), special, list(ids))[0].shape[1]

    def _encoded(self, ids: torch.Tensor, special: list[bool], word_ids: list, notices: list[str]) -> Encoded:
        """Token labels for ``ids``: the tokenizer's strings, or for byte-level BPE the text they stand for."""
        pieces = self.tokenizer.convert_ids_to_tokens(ids[0].tolist())
        if not self.byte_level:
            return Encoded(ids, pieces, special, word_ids, notices)
        return Encoded(ids, byte_level_labels(pieces, special), special, word_ids, notices, pieces)

    def labels(self, ids: list[int]) -> list[str]:
        """A label per id, as ``encode`` labels its tokens (generated ids: ``models.analysis.generate``)."""
        specials = set(self.tokenizer.all_special_ids)
        flags = [i in specials for i in ids]
        return self._encoded(torch.tensor([ids]), flags, list(range(len(ids))), []).tokens

    # ------------------------------------------------------------------ run
    def run(self, text: str, target: str | None = None, max_tokens: int | None = None, **_) -> RunResult:
        src = self.encode(text, max_tokens)
        if self.family == "seq2seq":
            return self._run_seq2seq(src, target)
        return self.run_encoded(src)

    def run_encoded(self, src: Encoded) -> RunResult:
        """Self-attention of an encoder or causal LM for ids already made (``encode``, ``masked``)."""
        if self.family == "seq2seq":
            raise InputError(f"{self.model_id}: ids are run through self-attention models only, not seq2seq")
        with torch.no_grad():
            out = self._attentions_of(src.ids)
        weights = self._stack(out.attentions, "self-attention")  # [layers, heads, query, key]
        record = self._record(weights, src, src, "self")
        return RunResult(records={"self": record}, output=None, notices=[*src.notices, *sink_notice(record)])

    def _attentions_of(self, ids: torch.Tensor):
        """The self-attention model's forward with its attention weights, without its head: a causal
        LM's logits (tokens × vocabulary, 400 MB for SmolLM2 at 2,000 tokens) and cache are not made."""
        no_cache = {"use_cache": False} if self.family == "causal" else {}
        return self.model.base_model(input_ids=ids.to(self.device), output_attentions=True, **no_cache)

    # ------------------------------------------------------------------ one token masked (exBERT)
    def replacements(self) -> dict[str, str]:
        """What may stand in for a masked token, by name: the tokenizer's mask, else pad, unk, eos
        (those it has, each token once, the mask first): ``{"mask": "[MASK]", "pad": "[PAD]", …}``."""
        out: dict[str, str] = {}
        for name in MASK_NAMES:
            token = getattr(self.tokenizer, f"{name}_token", None)
            if token is not None and str(token) not in out.values():
                out[name] = str(token)
        return out

    def masked(self, text: str, position: int, replacement: str | None = None) -> Encoded:
        """``text`` encoded, with the id at ``position`` replaced by the ``replacement`` token's id
        (by default the first of ``replacements()``). Length, special flags and words stay as they
        were; a special token (``[CLS]``, ``<s>``…) cannot be masked."""
        src = self.encode(text)
        n = src.ids.shape[1]
        if not 0 <= position < n:
            raise InputError(
                later(
                    "position {position} is outside this input's tokens 0–{last}",
                    position=position,
                    last=n - 1,
                )
            )
        if src.special[position]:
            raise InputError(
                later(
                    "{token} is a special token: special tokens cannot be masked", token=src.tokens[position]
                )
            )
        choices = self.replacements()
        name = replacement or next(iter(choices), None)
        if name not in choices:
            raise InputError(
                later("{model}'s tokenizer has no {name} token to mask with", model=self.model_id, name=name)
            )
        ids = src.ids.clone()
        ids[0, position] = int(self.tokenizer.convert_tokens_to_ids(choices[name]))
        flags = [*src.special[:position], True, *src.special[position + 1 :]]  # a label of its own
        return replace(self._encoded(ids, flags, src.word_ids, src.notices), special=src.special)

    def run_masked(self, text: str, position: int, replacement: str | None = None, **_) -> RunResult:
        """``run(text)`` with the token at ``position`` masked (``masked``)."""
        return self.run_encoded(self.masked(text, position, replacement))

    def run_repeated(self, period: int = 20, seed: int = 0) -> tuple[AttentionRecord, int]:
        """Self-attention on a random token sequence repeated twice (the induction-head probe).

        Returns the record and the number of tokens before the first block (a bos, if any).
        """
        if self.family != "causal":
            raise ValueError("the induction probe needs a causal language model")
        gen = torch.Generator().manual_seed(seed)
        specials = set(self.tokenizer.all_special_ids)
        pool = torch.tensor([i for i in range(min(self.tokenizer.vocab_size, 20_000)) if i not in specials])
        block = pool[torch.randperm(len(pool), generator=gen)[:period]]
        prefix = [self.tokenizer.bos_token_id] if self.tokenizer.bos_token_id is not None else []
        ids = torch.tensor([prefix + block.tolist() * 2])
        n = ids.shape[1]
        enc = self._encoded(ids, [False] * n, list(range(n)), [])
        with torch.no_grad():
            out = self._attentions_of(ids)
        return self._record(self._stack(out.attentions, "self-attention"), enc, enc, "self"), len(prefix)

    def queries_keys(self, text: str, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
        """One head's queries and keys ``[tokens, head_dim]`` for ``text``, and its tokens.

        Captured from the model's own forward (``models.adapters.capture``): after the rotary
        embedding where the model has one, and for grouped-query attention the key head this
        query head shares. ``softmax(q kᵀ / √d)`` reproduces the head's weights, with the causal
        mask for a causal model. A model the capture refuses (an encoder–decoder, a sliding
        window) is one ValueError line.
        """
        if not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
            raise ValueError(
                f"{self.model_id} has layers 0–{self.n_layers - 1} and heads 0–{self.n_heads - 1}"
            )
        qk = capture(self, text)
        keys = qk.keys[layer]
        q, k = qk.queries[layer][head], keys[head // (qk.n_heads // keys.shape[0])]
        return torch.from_numpy(q.copy()), torch.from_numpy(k.copy()), list(qk.tokens)

    def position_embeddings(self) -> np.ndarray | None:
        """Learned absolute position embeddings ``[position, dim]``, or None if the model has none."""
        for name, param in self.model.named_parameters():
            if name.endswith("position_embeddings.weight"):
                return param.detach().float().cpu().numpy()
        return None

    def _run_seq2seq(self, src: Encoded, target: str | None) -> RunResult:
        ids = src.ids.to(self.device)
        if target:
            tgt = self.encode(target)
            labels = tgt.ids.to(self.device)
            decoder_ids = self.model.prepare_decoder_input_ids_from_labels(labels=labels)
        else:
            decoder_ids = self.generated(ids)
        specials = set(self.tokenizer.all_special_ids)
        dec_ids = decoder_ids[0].tolist()
        dec = self._encoded(
            decoder_ids.cpu(), [i in specials for i in dec_ids], list(range(len(dec_ids))), []
        )
        with torch.no_grad():
            out = self.model(input_ids=ids, decoder_input_ids=decoder_ids, output_attentions=True)
        records = {
            "encoder_self": self._record(
                self._stack(out.encoder_attentions, "encoder"), src, src, "encoder_self"
            ),
            "decoder_self": self._record(
                self._stack(out.decoder_attentions, "decoder"), dec, dec, "decoder_self"
            ),
            "cross": self._record(self._stack(out.cross_attentions, "cross"), dec, src, "cross"),
        }
        output = None if target else self.tokenizer.decode(decoder_ids[0], skip_special_tokens=True)
        return RunResult(records=records, output=output, notices=src.notices)

    @torch.no_grad()
    def generated(self, ids: torch.Tensor) -> torch.Tensor:
        """A seq2seq model's greedy output for the source ``ids``, its decoder start token first."""
        return self.model.generate(ids, max_new_tokens=min(64, self.max_tokens - 1), do_sample=False)

    def _stack(self, attentions, what: str) -> np.ndarray:
        """Tuple of ``[1, heads, query, key]`` per layer -> ``[layers, heads, query, key]``, checked."""
        if not attentions or any(a is None for a in attentions):
            raise RuntimeError(
                f"{self.model_id}: the model returned no {what} weights; it must run with eager attention"
            )
        expected = self._expected_layers(what)
        if len(attentions) != expected:
            raise RuntimeError(
                f"{self.model_id}: {len(attentions)} layers of {what} weights, expected {expected}"
            )
        return torch.cat([a.float().cpu() for a in attentions], dim=0).numpy()  # [layers, heads, query, key]

    def _expected_layers(self, what: str) -> int:
        """Encoder and decoder may differ in depth (distilbart: 12 + 6); decoder and cross share one."""
        names = {
            "encoder": ("encoder_layers", "num_layers"),
            "decoder": ("decoder_layers", "num_decoder_layers"),
            "cross": ("decoder_layers", "num_decoder_layers"),
        }.get(what, ())
        for name in names:
            value = getattr(self.config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return self.n_layers

    def _record(self, weights: np.ndarray, queries: Encoded, keys: Encoded, kind: str) -> AttentionRecord:
        meta = {
            "device": str(self.device),
            "query_special": queries.special,
            "key_special": keys.special,
            "query_word_ids": queries.word_ids,
            "key_word_ids": keys.word_ids,
            "family": self.family,
        }
        if self.byte_level:  # the tokenizer's own strings, so merged words decode their bytes together
            meta.update(query_pieces=queries.pieces, key_pieces=keys.pieces)
        sink = sink_mass(weights, self.sink_layers) if kind == "self" else None
        return AttentionRecord(
            weights, queries.tokens, keys.tokens, kind, self.model_id, "scaled_dot", meta=meta, sink=sink
        )


def sink_layers(model: torch.nn.Module) -> list[int]:
    """Layers whose attention module has learned sink logits (gpt-oss: a ``sinks`` parameter per head)."""
    found = {
        int(m.layer_idx)
        for m in model.modules()
        if isinstance(getattr(m, "sinks", None), torch.nn.Parameter)
        and isinstance(getattr(m, "layer_idx", None), int)
    }
    return sorted(found)


def sink_mass(weights: np.ndarray, layers: list[int]) -> np.ndarray | None:
    """``[layers, heads, query]``: what each row of a sink layer leaves to its sink (its weights are
    the model's own softmax over keys and sink, without the sink); None for a model without sinks."""
    if not layers:
        return None
    mass = np.zeros(weights.shape[:3], dtype=np.float32)
    mass[layers] = np.clip(1 - weights[layers].sum(-1, dtype=np.float64), 0, 1)
    return mass


def sink_notice(record: AttentionRecord) -> list[str]:
    """A line saying that rows sum to less than 1 and by how much, for a model with sinks."""
    if record.sink is None:
        return []
    return [
        later(
            "{model} has learned sink logits: each row's weights sum to 1 minus the mass its sink takes"
            " (on average {mean:.0%}, at most {most:.0%} here)",
            model=record.model_id,
            mean=float(record.sink.mean()),
            most=float(record.sink.max()),
        )
    ]


def _token_limit(config, tokenizer) -> int:
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    usable = [int(x) for x in limits if x and x < 1_000_000]
    return min([*usable, 512])  # stay fast: 512 tokens at most


def _layers_heads(config) -> tuple[int, int]:
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "num_layers", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "num_heads", None)
    return int(layers), int(heads)


# -- uploads: a zipped Hugging Face folder of each family, run by HFAdapter ----------------------

ENGLISH = "The cat sat on the mat because it was tired."
register_hf_family(HFFamily("encoder", HFAdapter, compare=("minilm",), example=ENGLISH))
register_hf_family(HFFamily("causal", HFAdapter, compare=("smollm2",), example=ENGLISH))
register_hf_family(HFFamily("seq2seq", HFAdapter, example="The cat sat on the mat."))
