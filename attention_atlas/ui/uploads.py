"""The Checkpoint inspector's upload flow: a file (or the demo) in, a loaded upload out.

Every check and the loading are ``models.uploads``' (no code from an upload ever runs);
this module turns what a bare state dict lacks (``NeedsAnswers``) into widgets, retries
``load_bytes`` with the answers, and shows the summary. Widget keys start with ``ckpt_``.
"""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.uploads import (
    ARCHITECTURES,
    Limits,
    NeedsAnswers,
    Summary,
    Upload,
    UploadError,
    export_bytes,
    load_bytes,
    local,
    parse_vocab,
)
from attention_atlas.ui.widgets import plain

K = "ckpt_"
# Streamlit's uploader counts a megabyte as 10⁶ bytes (1024² on Windows only), in its limit and in
# the file sizes it shows: the page says sizes and the limit in the same megabytes.
MB = 1_000_000
SUFFIXES = (".safetensors", ".pt", ".pth", ".zip")
ACCEPTED = N_(".safetensors, .pt / .pth, or a model folder as .zip")


@st.cache_resource(show_spinner=False)
def _demo_checkpoint(model_id: str) -> tuple[str, bytes]:
    return export_bytes(model_id)  # what `atlas export --model <model_id>` writes


def demo_checkpoint(model_id: str) -> tuple[str, bytes]:
    with st.spinner(_("Exporting the bundled checkpoint…")):
        return _demo_checkpoint(model_id)


@st.cache_data(show_spinner=False, max_entries=64)
def _run_upload(key: str, _adapter, text: str, target: str | None):
    return _adapter.run(text, target=target)


def run_upload(key: str, adapter, text: str, target: str | None):
    """Records of the upload identified by ``key`` (its SHA-256 and answers) for one input."""
    with st.spinner(_("Running the upload…")):
        return _run_upload(key, adapter, text, target)


def how_to() -> str:
    """Markdown: how to produce a checkpoint of each family the inspector reads."""
    lines = [f"- **{a.title}**: `{a.how_to}`" for a in ARCHITECTURES.values()]
    save = (
        "torch.save({'state_dict': model.state_dict(), 'config': cfg.to_dict(), "
        "'src_vocab': vocab.tokens, 'format': ..., 'task': 'couplet'}, 'mine.pt')"
    )
    pytorch = _(
        "- **PyTorch**: `{save}` (translation: "
        "`'task': 'translation'` and a `'tgt_vocab'` too); a bare "
        "`model.state_dict()` works too: pick the architecture, the rest is read from the shapes.",
        save=save,
    )
    hugging_face = _(
        "- **Hugging Face**: zip the folder `save_pretrained` wrote (config.json, "
        "model.safetensors, tokenizer files); encoders, causal LMs and encoder–decoders."
    )
    return "\n".join([*lines, pytorch, hugging_face])


def upload_limits() -> Limits:
    """The server's upload limits; a misconfigured setting stops the page with one error."""
    try:
        return Limits.from_env()
    except UploadError as err:  # a server setting, e.g. ATLAS_UPLOAD_MAX_MB=abc
        st.error(_("The server's upload limits are misconfigured: {error}", error=plain(err)))
        st.stop()


def chosen_file(limits: Limits, demo: str) -> tuple[str, bytes, Limits]:
    """The uploaded file's name, bytes and the limits that apply: an upload, a path on the server
    (where ``ATLAS_LOCAL_PATHS=1``), or the exported ``demo`` model once its button was pressed;
    until then the page explains itself and stops."""
    # whole megabytes, as the uploader takes and shows its limit; never above the server's own cap
    cap = min(max(1, limits.max_bytes // MB), int(st.get_option("server.maxUploadSize")))
    upload_file = st.file_uploader(
        _("Checkpoint ({accepted}; up to {cap:,} MB)", accepted=_(ACCEPTED), cap=cap),
        key=K + "file",  # no type=[...]: the browser would refuse a file with a red "!" only
        max_upload_size=cap,
    )
    if upload_file is not None:
        name, size = upload_file.name, upload_file.size
        if not name.lower().endswith(SUFFIXES):
            st.error(
                _(
                    "Refused: {name} is not a checkpoint file; the inspector reads {accepted}.",
                    name=plain(name),
                    accepted=_(ACCEPTED),
                )
            )
            st.stop()
        if size > cap * MB:
            st.error(
                _(
                    "Refused: {name} is {size}; uploads are limited to {cap:,} MB.",
                    name=plain(name),
                    size=size_text(size),
                    cap=cap,
                )
            )
            st.stop()
        return name, upload_file.getvalue(), limits
    if local.allowed():
        opened = local_path(limits)
        if opened is not None:
            return opened
    if st.session_state.get(K + "demo_on"):
        try:
            return (*demo_checkpoint(demo), limits)
        except (OSError, UploadError) as err:
            st.info(_("The demo needs the bundled {model} weights: {error}", model=demo, error=plain(err)))
            st.stop()
    st.info(
        _(
            "No checkpoint yet. Upload one above, or load our bundled couplet model exactly as "
            "`atlas export --model {model} --out demo.safetensors` writes it, to see what "
            "the page shows.",
            model=demo,
        )
    )
    st.button(
        _("Load the exported {model} as a demo", model=demo),
        key=K + "demo",
        on_click=lambda: st.session_state.update({K + "demo_on": True}),
    )
    st.stop()


def local_path(limits: Limits) -> tuple[str, bytes, Limits] | None:
    """A checkpoint file or Hugging Face folder opened by its path on the server, or None if no path is typed."""
    typed = st.text_input(
        _("…or open a checkpoint file or model folder on this server by its path"),
        key=K + "path",
        placeholder="/models/bert-base-uncased",
        help=_(
            "For checkpoints larger than an upload may be. The same checks as an upload; nothing in it runs."
        ),
    ).strip()
    if not typed:
        return None
    try:
        bigger = local.local_limits(limits)
        with st.spinner(_("Reading the checkpoint from disk…")):
            name, data = local.read_local(typed, bigger)
    except (UploadError, OSError) as err:
        st.error(_("Refused: {error}", error=plain(err)))
        st.stop()
    return name, data, bigger


def ask(need: NeedsAnswers, note) -> dict | None:
    """Widgets for what a bare state dict lacks; None until every answer is given.

    ``note`` holds one warning, the latest: answering the architecture raises the next question.
    """
    note.warning(plain(need))
    if need.inferred:
        inferred = ", ".join(f"{k} = {v}" for k, v in need.inferred.items())
        st.caption(_("Inferred from the tensor shapes: {inferred}", inferred=plain(inferred)))
    answers = {}
    for m in need.missing:
        label = f"{m.field}: {m.why}"
        if m.field == "vocabulary":
            vocab_file = st.file_uploader(label + " (vocab.json)", type=["json"], key=K + "vocab")
            if vocab_file is not None:
                answers["vocabulary"] = parse_vocab(vocab_file.getvalue(), vocab_file.name)
            elif m.choices:
                answers["vocabulary"] = st.selectbox(
                    _("…or the vocabulary of a bundled model of the same size"),
                    m.choices,
                    key=K + "vocab_from",
                )
            else:
                return None
        else:
            choice = st.selectbox(
                label, m.choices, index=None if m.field == "architecture" else 0, key=K + m.field
            )
            if choice is None:
                return None
            answers[m.field] = choice
    return answers


def load_upload(name: str, data: bytes, limits: Limits) -> tuple[Upload, str]:
    """The checked and loaded upload and its cache key (SHA-256 and answers). Asks for the
    architecture first, then what that architecture lacks, retrying with each answer; stops
    the page on a refusal (one error) or while an answer is still missing."""
    answers: dict = {}
    note = st.empty()
    for _attempt in range(len(ARCHITECTURES) + 3):
        try:
            with st.spinner(_("Checking and loading {name}…", name=plain(name))):
                upload = load_bytes(data, name, answers, limits=limits)
            note.empty()
            digest = hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()
            return upload, upload.summary.sha256 + digest
        except NeedsAnswers as need:
            given = ask(need, note)
            if given is None or all(answers.get(k) == v for k, v in given.items()):
                st.stop()
            answers.update(given)
        except UploadError as err:
            st.error(_("Refused: {error}", error=plain(err)))
            st.stop()
    st.stop()


def show_summary(s: Summary) -> None:
    """What the upload is: architecture, size, hash, notices, config, and any NaN or ±inf tensors."""
    st.subheader(plain(s.file_name))
    c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
    c1.metric(_("architecture"), s.architecture, help=plain(s.description))
    c2.metric(_("parameters"), f"{s.parameters:,}")
    c3.metric(_("vocabulary"), f"{s.vocab_size:,}")
    c4.metric(
        _("layers × heads"), f"({s.layers}) × {s.heads}" if "+" in s.layers else f"{s.layers} × {s.heads}"
    )
    about = f"{plain(s.description)} · {plain(_(s.source))} · {size_text(s.size)}"  # a source is marked N_
    st.caption(_("{about} · model id `{model}`", about=about, model=s.model_id))
    st.code(f"SHA-256  {s.sha256}", language=None)
    for notice in s.notices:
        st.caption(f"ℹ️ {plain(notice)}")
    with st.expander(_("Config")):
        st.json(s.config, expanded=True)
    if s.nonfinite:
        shown = ", ".join(s.nonfinite[:5]) + (", …" if len(s.nonfinite) > 5 else "")
        count = len(s.nonfinite)
        st.warning(
            ngettext(
                "{count:,} tensor holds NaN or infinite values: {names}",
                "{count:,} tensors hold NaN or infinite values: {names}",
                count,
                count=count,
                names=plain(shown),
            )
        )


def size_text(n: int) -> str:
    """``'10.4 MB'``, ``'48.9 kB'``: bytes in the uploader's own megabytes (``MB``)."""
    return f"{n / MB:,.1f} MB" if n >= MB else f"{n / 1000:,.1f} kB"
