"""Attention Atlas in a notebook: BertViz's calls (``head_view``, ``model_view``, ``line_view``) and
``neuron_view.show`` (BertViz's neuron view, for the user's own model as it is),
``show(model, tokenizer, text)``, ``patch_view`` (activation patching) and
``attribution_view(model, tokenizer, text, target=…)`` (attention beside attribution methods for one
output), each drawing a view where it is called, as BertViz does: live (``notebook.widget``, in
JupyterLab and Notebook 7) or as a self-contained interactive HTML file (``notebook.page``);
``display`` chooses."""

from attention_atlas.notebook import neuron_view
from attention_atlas.notebook.attribution import attribution_view
from attention_atlas.notebook.inputs import NotebookError
from attention_atlas.notebook.page import View, display
from attention_atlas.notebook.patching import patch_view
from attention_atlas.notebook.run import show
from attention_atlas.notebook.views import head_view, line_view, model_view

__all__ = [
    "NotebookError",
    "View",
    "attribution_view",
    "display",
    "head_view",
    "line_view",
    "model_view",
    "neuron_view",
    "patch_view",
    "show",
]
