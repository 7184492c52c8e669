"""Records, token labels, figure builders, statistics and export. numpy, pandas and plotly only.

Import from the submodules, so that a caller pulls in only what it uses: ``viz_core.record``
and ``viz_core.stats`` need numpy alone (``models`` imports the record without plotly),
``viz_core.export`` pandas, ``viz_core.figures`` and ``viz_core.model_view`` plotly.

>>> import numpy as np
>>> from attention_atlas.viz_core.figures import heatmap
>>> from attention_atlas.viz_core.record import AttentionRecord
>>> rec = AttentionRecord(np.full((1, 1, 2, 2), 0.5), ["风", "风"], ["a", "b"], "cross", "demo")
>>> heatmap(rec.head(), rec.query_tokens, rec.key_tokens).data[0].y
('0 · 风', '1 · 风')
"""
