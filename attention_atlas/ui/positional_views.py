"""The Positional encoding page's blocks: a model's learned position embeddings beside the
sinusoids, each as its positions' cosine similarity. Widget keys start with ``pe_``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui.cached import learned_positions
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.export import panels_frame
from attention_atlas.viz_core.figures import heatmap_row
from attention_atlas.viz_core.stats import cosine_similarity

K = "pe_"


def learned_beside(model_id: str, P: np.ndarray, length: int) -> None:
    """``model_id``'s learned position embeddings beside the sinusoidal ``P``: both cosine
    similarities over the first ``length`` positions (fewer where the model has fewer), or a
    warning where the model is not available here."""
    try:
        learned = learned_positions(model_id)
    except (OSError, KeyError) as err:
        st.warning(_("{model} is not available here: {error}", model=model_id, error=plain(err)))
    else:
        n = min(length, learned.shape[0])
        sinusoidal, ours = cosine_similarity(P[:n]), cosine_similarity(learned[:n])
        dims = learned.shape[1]
        panels = {
            _("sinusoidal (cosine similarity)"): sinusoidal,
            _("{model}, learned ({dims} dims)", model=model_id, dims=dims): ours,
        }
        csv_panels = {  # the CSV's, in English whatever the page's language
            "sinusoidal (cosine similarity)": sinusoidal,
            f"{model_id}, learned ({dims} dims)": ours,
        }
        pos = [str(i) for i in range(n)]
        chart(
            heatmap_row(panels, pos, pos, zmin=-1, zmax=1, colorscale="RdBu_r", label=_("cosine")),
            panels_frame(csv_panels, "position_a", "position_b"),  # every cell of both matrices
            K + "learned_sim",
            "position_similarity",
        )
        st.caption(
            _(
                "Both put near positions close together; the learned table was never told to, it found it. "
                "Its band is uneven and fades at positions rarely seen in training."
            )
        )
