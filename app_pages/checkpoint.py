"""Checkpoint inspector: upload a model file, see what it is, its attention, and ours beside it.

Every check and the loading live in ``models.uploads`` (no code from an upload ever runs);
this page is widgets → guard → cached call → figure. Tests drive it with AppTest's
``file_uploader(key="ckpt_file").upload(...)`` and the demo button ``ckpt_demo``.
"""

import hashlib
import json

import streamlit as st

from models.registry import available
from models.uploads import Limits, NeedsAnswers, UploadError, export_bytes, load_bytes, parse_vocab
from models.uploads.architectures import ARCHITECTURES
from ui.cached import run_model
from ui.live_heads import HINT, head_view_chart, model_view_chart
from ui.widgets import chart, csv_button
from viz_core.export import matrix_frame, record_frame
from viz_core.figures import head_view, heatmap
from viz_core.model_view import model_view
from viz_core.wire import all_heads, record_id

K = "ckpt_"
DEMO = "couplet-rnn-additive"
BIG = 22  # couplet characters read from the back of the room, as on the Couplets page
AXES = {"x_title": "input (keys)", "y_title": "output (queries)"}
MB = 1 << 20


@st.cache_resource(show_spinner="Exporting the bundled checkpoint…")
def demo_checkpoint() -> tuple[str, bytes]:
    return export_bytes(DEMO)  # what `python cli.py export --model couplet-rnn-additive` writes


@st.cache_data(show_spinner="Running the upload…", max_entries=64)
def run_upload(key: str, _adapter, text: str, target: str | None):
    """Records of the upload identified by ``key`` (its SHA-256 and answers) for one input."""
    return _adapter.run(text, target=target)


def alignment_figure(rec, title: str = ""):
    fig = heatmap(rec.head(), rec.query_tokens, rec.key_tokens, title=title, **AXES)
    fig.update_xaxes(tickfont_size=BIG)
    fig.update_yaxes(tickfont_size=BIG)
    return fig


def ask(need: NeedsAnswers, note) -> dict | None:
    """Widgets for what a bare state dict lacks; None until every answer is given.

    ``note`` holds one warning, the latest: answering the architecture raises the next question.
    """
    note.warning(str(need))
    if need.inferred:
        st.caption(
            "Inferred from the tensor shapes: " + ", ".join(f"{k} = {v}" for k, v in need.inferred.items())
        )
    answers = {}
    for m in need.missing:
        label = f"{m.field}: {m.why}"
        if m.field == "vocabulary":
            vocab_file = st.file_uploader(label + " (vocab.json)", type=["json"], key=K + "vocab")
            if vocab_file is not None:
                answers["vocabulary"] = parse_vocab(vocab_file.getvalue(), vocab_file.name)
            elif m.choices:
                answers["vocabulary"] = st.selectbox(
                    "…or the vocabulary of a bundled model of the same size", m.choices, key=K + "vocab_from"
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


st.title("🧳 Checkpoint inspector")
st.markdown(
    "Upload a checkpoint and see its attention with the same views our bundled models get, then "
    "beside the bundled model of its family on the same input. Files are checked and loaded "
    "**without running any code from them**: safetensors, or `torch.load(weights_only=True)` "
    "after the pickle's imports are read and allowed; zips unpack data files only."
)
with st.expander("How to produce a checkpoint"):
    lines = [f"- **{a.title}**: `{a.how_to}`" for a in ARCHITECTURES.values()]
    st.markdown(
        "\n".join(lines)
        + "\n- **PyTorch**: `torch.save({'state_dict': model.state_dict(), 'config': cfg.to_dict(), "
        "'src_vocab': vocab.tokens, 'format': ..., 'task': 'couplet'}, 'mine.pt')` (translation: "
        "`'task': 'translation'` and a `'tgt_vocab'` too); a bare "
        "`model.state_dict()` works too: pick the architecture, the rest is read from the shapes."
        "\n- **Hugging Face**: zip the folder `save_pretrained` wrote (config.json, "
        "model.safetensors, tokenizer files); encoders, causal LMs and encoder–decoders."
    )

try:
    limits = Limits.from_env()
except UploadError as err:  # a server setting, e.g. ATLAS_UPLOAD_MAX_MB=abc
    st.error(f"The server's upload limits are misconfigured: {err}")
    st.stop()
upload_file = st.file_uploader(
    f"Checkpoint (.safetensors, .pt / .pth, or a model folder as .zip; up to {limits.max_bytes // MB} MB)",
    type=["safetensors", "pt", "pth", "zip"],
    key=K + "file",
    max_upload_size=max(1, limits.max_bytes // MB),
)
if upload_file is not None:
    name, data = upload_file.name, upload_file.getvalue()
elif st.session_state.get(K + "demo_on"):
    try:
        name, data = demo_checkpoint()
    except (OSError, UploadError) as err:
        st.info(f"The demo needs the bundled {DEMO} weights: {err}")
        st.stop()
else:
    st.info(
        "No checkpoint yet. Upload one above, or load our bundled couplet model exactly as "
        f"`python cli.py export --model {DEMO} --out demo.safetensors` writes it, to see what "
        "the page shows."
    )
    st.button(
        f"Load the exported {DEMO} as a demo",
        key=K + "demo",
        on_click=lambda: st.session_state.update({K + "demo_on": True}),
    )
    st.stop()

answers: dict = {}
upload = None
note = st.empty()
for _ in range(len(ARCHITECTURES) + 3):  # architecture first, then what that architecture lacks
    try:
        with st.spinner(f"Checking and loading {name}…"):
            upload = load_bytes(data, name, answers, limits=limits)
        note.empty()
        break
    except NeedsAnswers as need:
        given = ask(need, note)
        if given is None or all(answers.get(k) == v for k, v in given.items()):
            st.stop()
        answers.update(given)
    except UploadError as err:
        st.error(f"Refused: {err}")
        st.stop()
if upload is None:
    st.stop()

s = upload.summary
st.subheader(f"{s.file_name}")
c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
c1.metric("architecture", s.architecture, help=s.description)
c2.metric("parameters", f"{s.parameters:,}")
c3.metric("vocabulary", f"{s.vocab_size:,}")
c4.metric("layers × heads", f"({s.layers}) × {s.heads}" if "+" in s.layers else f"{s.layers} × {s.heads}")
size = f"{s.size / MB:,.1f} MB" if s.size >= MB else f"{s.size / 1024:,.1f} kB"
st.caption(f"{s.description} · {s.source} · {size} · model id `{s.model_id}`")
st.code(f"SHA-256  {s.sha256}", language=None)
for notice in s.notices:
    st.caption(f"ℹ️ {notice}")
with st.expander("Config"):
    st.json(s.config, expanded=True)
if s.nonfinite:
    shown = ", ".join(s.nonfinite[:5]) + (", …" if len(s.nonfinite) > 5 else "")
    st.warning(f"{len(s.nonfinite)} tensor(s) hold NaN or infinite values: {shown}")

c1, c2 = st.columns([3, 2])
text = c1.text_input("Input", s.example, key=K + "text_" + s.architecture, max_chars=5_000)
target = c2.text_input("Force this output (optional)", "", key=K + "target").strip() if s.seq2seq else ""
if not text.strip():
    st.info("Type an input to see its attention.")
    st.stop()
cache_key = s.sha256 + hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()
try:
    result = run_upload(cache_key, upload.adapter, text, target or None)
except (ValueError, RuntimeError) as err:  # empty input, weights that give no valid attention (NaN)…
    st.error(f"The upload gives no attention for this input: {err}")
    st.stop()
for notice in result.notices:
    st.caption(f"ℹ️ {notice}")
if result.output is not None:
    st.markdown(f"**Output:** {result.output}")

kinds = list(result.records)
kind = (
    st.radio(
        "attention",
        kinds,
        index=kinds.index("cross") if "cross" in kinds else 0,
        horizontal=True,
        key=K + "kind",
    )
    if len(kinds) > 1
    else kinds[0]
)
rec = result.records[kind]
layer, head = 0, "0"
if s.view == "alignment":
    st.subheader("Alignment")
    chart(alignment_figure(rec), record_frame(rec), K + "heat", "upload_alignment")
else:
    st.subheader(f"Model view: {rec.n_layers} layers × {rec.n_heads} heads ({kind})")
    st.caption(HINT)
    layer_key, head_key = f"{K}layer_{s.model_id}_{kind}", f"{K}head_{s.model_id}"  # head counts differ
    rid = record_id(cache_key, kind, text, target)
    grid = (rec.n_layers, rec.n_heads)
    model_view_chart(model_view(rec), K + "heads", grid, (layer_key, head_key), heads=all_heads(rec, rid))
    c1, c2 = st.columns(2)
    layer = (
        c1.slider("layer", 0, rec.n_layers - 1, rec.n_layers - 1, key=layer_key) if rec.n_layers > 1 else 0
    )
    head = c2.selectbox("head", [str(h) for h in range(rec.n_heads)] + ["average"], key=head_key)
    head_view_chart(head_view(rec, layer, head), K + "heads", rid, layer, head, single=True)
    matrix = rec.weights[layer].mean(0) if head == "average" else rec.head(layer, int(head))
    csv_button(matrix_frame(matrix, "query_pos", "key_pos", "weight"), K + "headview", "upload_head")

st.subheader("Beside the bundled model")
registered = {m.id for m in available()}
others = [m for m in s.compare if m in registered]
if not others:
    st.info("No bundled model of this family to compare with.")
    st.stop()
other = st.selectbox("bundled model", others, key=K + "compare")
try:
    theirs = run_model(other, text, target or None)
except (OSError, RuntimeError, ValueError) as err:  # weights not installed here, or input it cannot take
    st.info(f"{other} cannot run here: {err}")
    st.stop()
their_rec = theirs.records.get(kind) or next(iter(theirs.records.values()))
cols = st.columns(2)
for col, (label, r, out) in zip(
    cols, [(s.model_id, rec, result.output), (other, their_rec, theirs.output)], strict=True
):
    with col:
        if out is not None:
            st.markdown(f"**{label}:** {out}")
        if s.view == "alignment":
            chart(
                alignment_figure(r, title=label),
                record_frame(r),
                K + "side_" + label,
                label.replace(":", "_"),
            )
        else:
            lay = min(layer, r.n_layers - 1)
            hd = head if head == "average" or int(head) < r.n_heads else "0"
            fig = head_view(r, lay, hd)
            fig.update_layout(title_text=f"{label}: layer {lay}, head {hd}")
            chart(fig, record_frame(r), K + "side_" + label, label.replace(":", "_"))
