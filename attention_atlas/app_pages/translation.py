"""Translation (the Bahdanau tutorial): English in, French out, with the alignment the decoder attended by."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui import translation_views as tv
from attention_atlas.ui.cached import capabilities, first_index, model_choices
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_notices
from attention_atlas.ui.widgets import intro, text_box

K = tv.K  # the page's widget-key prefix, shared with its blocks
TEXT_LIMIT = 5000

st.title("🗼 " + _("Translation"))
intro(
    _(
        "The Bahdanau tutorial: a GRU encoder reads the English sentence, a GRU decoder writes French one word "
        "at a time, and before each word it **attends** to the English words with Bahdanau's "
        "additive attention. Its variant swaps in an LSTM and the scaled dot product. Each row of "
        "the heatmap is one French word; its colours say which English words the decoder read to "
        "write it. Word order differs between the languages, so the alignment bends where French does."
    )
)

link = Link("translation")
ids = model_choices(task="translation")
if not ids:
    st.info(_("No translation model is registered."))
    st.stop()

st.caption(_("The Bahdanau tutorial's four sentences:"))
for col, sentence in zip(
    st.columns(len(tv.SEED_SENTENCES) + 3)[: len(tv.SEED_SENTENCES)], tv.SEED_SENTENCES, strict=True
):
    col.button(sentence, key=K + "ex_" + sentence, on_click=tv.use_example, args=(sentence,))

first = ids[first_index(ids)]
example = capabilities(first).example
c1, c2 = st.columns([3, 2])
english = text_box(
    c1, _("English"), link.text("text", K + "english", TEXT_LIMIT, example), TEXT_LIMIT, example
)
french = c1.text_input(
    _("Force a French sentence (optional; empty: the model translates)"),
    key=link.text("target", K + "french", TEXT_LIMIT),
    placeholder=_("e.g. {example} (leave empty: the model translates)", example="Je suis chez moi."),
).strip()
both = c2.toggle(_("Both models side by side"), key=link.flag("both", K + "both"))
model_id = c2.selectbox(_("Model"), ids, key=link.choice("model", K + "model", ids, first), disabled=both)
beam = c2.slider(
    _("Beam width (1 = greedy)"), 1, 8, key=link.number("beam", K + "beam", 1, 8, 1), disabled=bool(french)
)
link.done()  # every setting is above; the rest of the page only reads them

if not english.strip():
    st.info(
        _(
            "Type an English sentence, e.g. {example} (or click one of the tutorial's sentences)",
            example=example,
        )
    )
    st.stop()

shown = ids if both else [model_id]
results = {m: tv.run(m, english, french, beam) for m in shown}
show_notices((n for r in results.values() for n in r.notices), warn=True)
how = _("forced") if french else (_("greedy") if beam == 1 else _("beam {n}", n=beam))
tv.translations(results, shown, both, how)
if both:
    tv.difference(results, shown, english, french)
tv.seed_sentences(shown)
tv.swap_cost(ids)
