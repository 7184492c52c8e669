"""Home's Lessons section: one link per tutorial lesson the app grows from (docs/LESSONS.md), each
opening its page with the settings the lesson discusses and landing on the part it discusses (the
page's settings in the link's query, read by ``ui.url_state``)."""

from __future__ import annotations

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.paths import page
from attention_atlas.ui.cached import default_model
from attention_atlas.ui.url_state import kept


def lessons() -> list[tuple[str, str, dict[str, str | None]]]:
    """(page, label, the page's settings and the section it lands on), one per lesson; a model
    setting is the registry's default model for the task (None where none is installed)."""
    return [
        (
            page("scoring.py"),
            _("**Scoring functions and √d**: at d = 128 the unscaled dot product is one-hot; ÷√d is not."),
            {"source": "random", "d": "128", "n": "12", "section": "why-divide-by-sqrt-d"},
        ),
        (
            page("positional.py"),
            _("**Sinusoidal columns 6–9** and the binary-counter analogy (60 positions, d = 32)."),
            {"len": "60", "d": "32", "cols": "6,7,8,9", "section": "columns-of-p"},
        ),
        (
            page("pooling.py"),
            _("**Nadaraya–Watson pooling**: 50 noisy points, a Gaussian kernel of width 0.5."),
            {"kernel": "gaussian", "h": "0.5", "n": "50", "noise": "0.5", "section": "estimate"},
        ),
        (
            page("scoring.py"),
            _("**Sparse masks and relative position bias**: a local window of 2, a bias per offset."),
            {
                "source": "random",
                "n": "12",
                "mask": "local window",
                "window": "2",
                "relbias": "1",
                "section": "weights",
            },
        ),
        (
            page("couplets.py"),
            _("**The couplet seq2seq**: 两个黄鹂鸣翠柳 through additive attention, at its third step."),
            {
                "model": default_model(task="couplet"),
                "text": "两个黄鹂鸣翠柳",
                "step": "3",
                "section": "step-through",
            },
        ),
        (
            page("translation.py"),
            _("**Bahdanau translation**: He's calm. into French, with the GRU and additive attention."),
            {"model": default_model(task="translation"), "text": "He's calm."},
        ),
        (
            page("attribution.py"),
            _(
                "**Is attention an explanation?** (1) The couplet's last character 天: where attention and "
                "occlusion point at different characters, which of them is faithful?"
            ),
            {
                "model": default_model(task="couplet"),
                "text": "两个黄鹂鸣翠柳",
                "target": "一行白鹭上青天",
                "position": "6",
                "section": "faithfulness",
            },
        ),
        *(
            [
                (
                    page("attribution.py"),
                    _(
                        "**Is attention an explanation?** (2) A sentence through SmolLM2: what made "
                        "“The capital of France is” end in Paris?"
                    ),
                    {"model": causal, "text": "The capital of France is", "section": "faithfulness"},
                )
            ]
            if (causal := default_model(family="causal"))
            else []
        ),
    ]


# Streamlit draws a page link on one line and cuts what does not fit ("…"): Home's links are
# sentences, which wrap instead (issue 40 item 7).
_WRAP = """<style>
[data-testid="stMain"] [data-testid="stPageLink-NavLink"] * { white-space: normal; overflow: visible; text-overflow: clip; }
[data-testid="stMain"] [data-testid="stPageLink-NavLink"] { height: auto; }
</style>"""


def wrapped_links() -> None:
    """Home's page and lesson links wrap at the column's edge instead of being cut."""
    st.html(_WRAP)


def lesson_links() -> None:
    """The Lessons heading, one line on what the links do, and the links (the app-wide settings
    such as ``?present=1`` carried along)."""
    st.subheader(_("Lessons"))
    st.markdown(
        _("Each link opens its page as the tutorial's lesson discusses it, at the part it discusses.")
    )
    for script, label, params in lessons():
        given = {k: v for k, v in params.items() if v is not None}  # a lesson's model may not be installed
        st.page_link(script, label=label, icon="📖", query_params=given | kept())
