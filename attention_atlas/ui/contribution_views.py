"""The "Inside a prediction" page's Contributions tab (``app_pages/prediction.py``): the contribution
graph of the page's text (``models.analysis.contributions``, computed once per model and text and shared by
sessions), the routes from a chosen token back to the input above a threshold, the heads ranked by
their contribution to one edge, and one head's contribution map beside its attention map.
Widget keys start with ``contrib_``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.ui import cached
from attention_atlas.ui.widgets import chart, fact, plain
from attention_atlas.viz_core import contribution_figures as cf
from attention_atlas.viz_core.figures import heatmap_row
from attention_atlas.viz_core.tokens import clean_token

K = "contrib_"
ABOUT = N_(
    "Where did the prediction come from? Each residual state is a sum of parts: the state before it, "
    "and each head's share of each earlier token (or the feed-forward block's output). A part's "
    "contribution is how much closer the whole gets by adding it (Ferrando & Voita 2024, as the LLM "
    "Transparency Tool computes it). The routes keep the parts above the threshold, from the chosen "
    "token's output back to the input tokens."
)


# A resource: every layer's [heads, n, n] contributions and attention are shared, never pickled per rerun.
@st.cache_resource(show_spinner=False, max_entries=4)
def computed(key: str, text: str, _source: cached.Source):
    from attention_atlas.models.analysis.contributions import contributions

    cached.janitor().on_quiet(computed.clear)
    with cached.lane_for(key, text).turn():
        return contributions(_source.adapter, text, keep_attention=True)


def contributions_tab(source: cached.Source, text: str) -> None:
    if not text.strip():
        st.info(_("Type a text to see where its prediction came from."))
        return
    st.caption(_(ABOUT))
    try:
        with st.spinner(_("Measuring every head's, token's and block's contribution…")):
            source.ready()
            result = computed(source.key, text, source)
    except ValueError as err:  # ContributionError (a model whose blocks do not add up), InputError
        st.warning(plain(err))
        return
    except (OSError, RuntimeError) as err:
        st.error(_("{model} cannot run here: {error}", model=source.name, error=plain(err)))
        return
    fact(
        _(
            "{tokens} × {blocks} × {heads}.",
            tokens=ngettext("{count:,} token", "{count:,} tokens", result.positions, count=result.positions),
            blocks=ngettext("{count:,} block", "{count:,} blocks", result.layers, count=result.layers),
            heads=ngettext("{count:,} head", "{count:,} heads", result.heads, count=result.heads),
        )
    )
    graph, position = _routes(result)
    opened = _edge_heads(result, graph, position)
    _head_maps(result, opened)


def _routes(result):
    from attention_atlas.models.analysis.contributions import routes

    tokens = [clean_token(t) for t in result.tokens]
    c1, c2 = st.columns(2)
    position = c1.select_slider(
        _("the token whose prediction to trace"),
        list(range(result.positions)),
        value=result.positions - 1,
        format_func=lambda p: f"{p} · {tokens[p]}",
        key=K + "position",
    )
    threshold = c2.slider(_("threshold"), 0.01, 0.5, 0.04, 0.01, key=K + "threshold")
    graph = routes(result, position, threshold)
    fig = cf.routes_figure(
        graph,
        result.tokens,
        result.layers,
        _("Routes into the output at {position} · {token}", position=position, token=tokens[position]),
    )
    frame = pd.DataFrame(
        [
            {
                "source": f"{e.source.kind} {e.source.layer} @ {e.source.position}",
                "target": f"{e.target.kind} {e.target.layer} @ {e.target.position}",
                "kind": e.kind,
                "weight": e.weight,
                "contribution": e.contribution,
            }
            for e in graph.edges
        ]
    )
    chart(fig, frame, K + "routes", f"contributions_routes_{position}")
    fact(
        _(
            "{edges} at or above {threshold:.2f}, each node's kept edges renormalised "
            "to sum to 1 (line width). Blue: attention (all heads of a block, one earlier token); grey: the "
            "residual; orange: the feed-forward block.",
            edges=ngettext("{count:,} edge", "{count:,} edges", len(graph.edges), count=len(graph.edges)),
            threshold=threshold,
        )
    )
    return graph, position


def _edge_heads(result, graph, position: int) -> tuple[int, int]:
    """The heads that carry one attention edge of the routes, first the strongest edge into the traced
    token from another token (a sink's edge from the first token into itself, strongest of all, taught
    nothing); returns that edge's block and its strongest head, or (0, 0) where there is no edge."""
    from attention_atlas.models.analysis.contributions import heads_of_edge

    attention = [e for e in graph.edges if e.kind == "attention"]
    if not attention:
        return 0, 0
    edges = sorted({(e.target.layer, e.target.position, e.source.position) for e in attention})
    into = [e for e in attention if e.target.position == position and e.source.position != position]
    top = max(into or attention, key=lambda e: e.contribution)
    tokens = [clean_token(t) for t in result.tokens]
    layer, target, source = st.selectbox(
        _("an attention edge of the routes: which heads carry it?"),
        edges,
        index=edges.index((top.target.layer, top.target.position, top.source.position)),
        format_func=lambda e: _(
            "block {layer}: {source} · {source_token} → {target} · {target_token}",
            layer=e[0],
            source=e[2],
            source_token=tokens[e[2]],
            target=e[1],
            target_token=tokens[e[1]],
        ),
        key=K + "edge",
    )
    ranked = heads_of_edge(result, layer, target, source)
    title = _(
        "block {layer}: the heads moving {source} into {target}",
        layer=layer,
        source=tokens[source],
        target=tokens[target],
    )
    frame = pd.DataFrame(ranked, columns=["head", "contribution"])
    chart(cf.heads_figure(ranked, title), frame, K + "heads", f"contributions_heads_block{layer}")
    return layer, int(ranked[0][0])


def _head_maps(result, opened: tuple[int, int]) -> None:
    """One head's contribution and attention maps, first the head that carries the edge ``opened``
    (block, head) most, not block 0's head 0 (almost blank)."""
    from attention_atlas.models.analysis.contributions import head_maps

    c1, c2 = st.columns(2)
    layer = c1.slider(_("block"), 0, result.layers - 1, opened[0], key=K + "layer")
    head = c2.selectbox(_("head"), list(range(result.heads)), index=opened[1], key=K + "head")
    contrib, attention = head_maps(result, layer, head)
    panels = {_("contribution"): contrib} | (
        {_("attention weight"): attention} if attention is not None else {}
    )
    fig = heatmap_row(
        panels,
        result.tokens,
        result.tokens,
        title=_("block {layer}, head {head}", layer=layer, head=head),
        zmax=1.0,
        label=_("share"),
    )
    frame = pd.DataFrame(contrib, columns=[f"{i} · {t}" for i, t in enumerate(result.tokens)])
    chart(fig, frame, K + "maps", f"contributions_block{layer}_head{head}")
    st.caption(
        _(
            "Left, each query row: how much of its residual after attention this head brings from each "
            "earlier token; right: where the head looked. A large weight that brings little is a head "
            "reading a token whose value is small."
        )
    )
