"""No user-visible English escapes translation: an AST pass over the pages, ``ui/`` and the figure
builders finds every string literal handed to a call that puts text on screen (Streamlit's elements:
labels, bodies, help, placeholders, options; Plotly's titles, axis titles, trace names and hover
templates) that is not the argument of ``_``/``ngettext``/``N_``, and holds an English word.

What is not an English word here (``ALLOWED``): model and format names, units and code that read the
same in a Chinese sentence; Plotly's ``%{field}`` and HTML tags; ``{placeholders}``; Markdown and LaTeX
markup; paths, file names and names with a hyphen or underscore (a thread's, a key's); a trace's name
where its legend is off; the text of a model's other language (``DATA``: a French example sentence).
"""

from __future__ import annotations

import ast
import re

from tests.support import PACKAGE

FILES = sorted(
    [*(PACKAGE / "app_pages").glob("*.py"), *(PACKAGE / "ui").glob("*.py")]
    + [p for p in (PACKAGE / "viz_core").glob("*.py") if "figure" in p.name or p.name in ("model_view.py",)]
)
MARKERS = {"_", "ngettext", "N_"}
# Streamlit's elements that show their first argument (label or body), and the keywords any element shows.
SHOWN_FIRST = {
    "markdown", "caption", "title", "header", "subheader", "write", "info", "warning", "error", "success",
    "button", "toggle", "checkbox", "radio", "selectbox", "multiselect", "slider", "select_slider",
    "text_input", "text_area", "number_input", "expander", "download_button", "spinner", "metric",
    "page_link", "segmented_control", "toast", "popover", "status", "file_uploader", "pills", "form_submit_button",
    "link_button", "progress", "tabs",
}  # fmt: skip
SHOWN_KEYWORDS = {
    "label", "help", "placeholder", "caption", "title", "title_text", "xaxis_title", "yaxis_title",
    "hovertemplate", "name", "legendgrouptitle_text", "colorbar_title", "text_title",
}  # fmt: skip
ALLOWED = {
    "CSV", "PNG", "JSON", "HTML", "BLEU", "GPU", "CPU", "CUDA", "MPS", "SmolLM2", "SmolLM", "minilm", "MiniLM",
    "Gemma", "GPT", "BERT", "BART", "GRU", "LSTM", "RNN", "CNN", "Transformer", "softmax", "logit", "px", "ms",
    "MB", "GB", "KB", "ALiBi", "Falcon", "BLOOM", "Qwen", "Llama", "Mistral", "Ray", "DuckDB", "npz", "txt",
    "csv", "jsonl", "safetensors", "pt", "zip", "top", "log", "exp", "max", "min", "argmax", "tanh", "cos",
    "sin", "ReLU", "GELU", "Nadaraya", "Watson", "Bahdanau", "Luong", "Kobayashi", "Ferrando", "Voita",
    "BertViz", "exBERT", "AttentionViz", "et", "al", "SOS", "EOS", "CLS", "SEP", "PAD", "UNK", "Atlas",
    "Attention", "lang", "zh", "en",
}  # fmt: skip
NOT_PROSE = re.compile(
    r"%\{[^}]*\}|<[^>]*>|\{[^}]*\}|\$[^$]*\$|`[^`]*`|https?://\S+|\?[a-z_]+=\S*|:[a-z_]+:"
    r"|(?<!\S)[~.]?/\S*|[\w.-]+\.(?:json|jsonl|txt|csv|pt|safetensors|zip|npz|gguf|md|html|png)\b"
    r"|\b[a-z0-9]+(?:[-_][a-z0-9]+)+\b"
)
DATA = {"Je suis chez moi."}  # the Translation page's French placeholder: the model's output language
WORD = re.compile(r"[A-Za-z][A-Za-z']+")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` outside markup, placeholders, code and the allowed names."""
    if text in DATA:
        return []
    return [
        w for w in WORD.findall(NOT_PROSE.sub(" ", text)) if w not in ALLOWED and w.strip("'") not in ALLOWED
    ]


def literal_text(node: ast.AST) -> str | None:
    """A string literal's text (an f-string's fields as placeholders); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{x}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [literal_text(node.left), literal_text(node.right)]
        return "".join(p for p in parts if p) or None
    return None


def shown_arguments(call: ast.Call) -> list[ast.AST]:
    """The arguments of ``call`` that reach the screen as text."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    hidden = (
        {"name"}
        if any(k.arg == "showlegend" and getattr(k.value, "value", None) is False for k in call.keywords)
        else set()
    )
    shown = [k.value for k in call.keywords if k.arg in SHOWN_KEYWORDS - hidden]
    first = call.args[0] if call.args else None
    if name == "tabs" and isinstance(first, ast.Constant):  # ``link.tabs("tab", key, TABS)``: a URL name
        return shown
    if name in SHOWN_FIRST and first is not None and _is_streamlit(call.func):
        shown += first.elts if isinstance(first, ast.List | ast.Tuple) else [first]
    return shown


def _is_streamlit(func: ast.AST) -> bool:
    """``st.x``, ``st.sidebar.x``, ``column.x``, ``tab.x``: any attribute call (a container's element)."""
    return isinstance(func, ast.Attribute)


def escaped(source: str) -> list[tuple[int, str]]:
    """(line, text) of every shown literal with an English word that no marker wraps."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or getattr(node.func, "id", None) in MARKERS:
            continue
        for arg in shown_arguments(node):
            text = literal_text(arg)
            if text is not None and english_words(text):
                found.append((arg.lineno, text[:70]))
    return found


def test_no_shown_string_escapes_translation():
    escapes = {
        f"{path.relative_to(PACKAGE)}:{line}": text
        for path in FILES
        for line, text in escaped(path.read_text(encoding="utf-8"))
    }
    assert len(FILES) > 30
    report = "\n".join(f"  {where}: {text!r}" for where, text in sorted(escapes.items()))
    assert not escapes, f"{len(escapes)} strings shown untranslated (wrap them in _()):\n{report}"


def test_the_check_finds_what_it_should():
    assert escaped('st.button("Run")') == [(1, "Run")]
    assert escaped('st.button(_("Run"))') == []
    assert escaped('fig.update_layout(xaxis_title=f"key ({n} tokens)")') == [(1, "key ({x} tokens)")]
    assert escaped('go.Heatmap(hovertemplate="%{x} → %{y}: %{z:.3f}<extra></extra>")') == []
    assert escaped('st.download_button("CSV", data)') == []
    assert escaped('st.tabs(["Heads", _("Statistics")])') == [(1, "Heads")]
    assert escaped('labels, key = link.tabs("tab", K + "tab", TABS)') == []
    assert escaped('go.Scatter(name="cells", showlegend=False)') == []
    assert escaped('go.Scatter(name="cells")') == [(1, "cells")]
    assert escaped('st.text_input(_("Folder"), placeholder="/models/bert-base-uncased")') == []
    assert escaped('threading.Thread(target=f, name="atlas-lens-fill")') == []
