"""The Attention pooling page's blocks: the kernel width learned by gradient descent (its sliders,
the Train button and its progress, the learned w, its loss curve and its weights).
Widget keys start with ``pool_``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.models.attention.demos import train_pooling
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.widgets import chart, intro, plain
from attention_atlas.viz_core.export import record_frame, series_frame
from attention_atlas.viz_core.figures import heatmap, lines

K = "pool_"
RATES = [0.01, 0.05, 0.1, 0.2, 0.5, 1.0]


def learn_kernel_width(link: Link, view, trained: dict | None, data_key: tuple, axes: dict) -> None:
    """The section "Learn the kernel width": epochs and learning rate (the page's last settings in
    ``link``, which this closes), Train, then the learned w, the loss and the learned weights.

    ``data_key`` is the page's (training points, noise, seed); ``trained`` the session's last
    training on that data, if any; ``axes`` the weight heatmaps' axis titles."""
    n_train, noise, seed = data_key
    st.subheader(_("Learn the kernel width"))
    intro(
        _(
            "The parametric version, softmax(−((x − xᵢ)·w)² / 2), learns w by gradient descent, "
            "predicting each training point from all the others."
        ),
        _("How w is learned"),
    )
    c1, c2 = st.columns(2)
    epochs = c1.slider(_("epochs"), 1, 200, key=link.number("epochs", K + "epochs", 1, 200, 50))
    lr = c2.select_slider(
        _("learning rate"), RATES, key=link.choice("lr", K + "lr", RATES, 0.5, "is not on offer")
    )
    link.done()
    if st.button(_("Train"), key=K + "train", type="primary"):
        bar = st.progress(0.0, text=_("training…"))

        def report(epoch: int, loss: float) -> None:
            bar.progress(
                (epoch + 1) / epochs,
                text=_("epoch {epoch}/{epochs}, loss {loss:.3f}", epoch=epoch + 1, epochs=epochs, loss=loss),
            )

        try:
            w, losses = train_pooling(n_train, noise, seed, epochs, lr, on_epoch=report)
        except ValueError as err:
            st.error(plain(err))
        else:
            st.session_state[K + "trained"] = {"w": w, "losses": losses, "data_key": data_key}
            st.rerun()

    if trained and view.learned is not None:
        st.metric(
            _("learned w (inverse bandwidth)"),
            f"{trained['w']:.2f}",
            help=_("bandwidth 1/w = {h:.3f}", h=1 / trained["w"]),
        )
        epoch_axis = np.arange(1, len(trained["losses"]) + 1)
        loss = {"loss": np.array(trained["losses"])}
        chart(
            lines(epoch_axis, {_("loss"): loss["loss"]}, _("epoch"), _("training loss")),
            series_frame(epoch_axis, loss, "epoch"),
            K + "loss",
            "training_loss",
        )
        learned = view.learned
        chart(
            heatmap(
                learned.head(), learned.query_tokens, learned.key_tokens, title=_("learned weights"), **axes
            ),
            record_frame(learned),
            K + "learned",
            "learned_weights",
        )
    else:
        st.info(
            _("Press **Train** to fit w and watch the loss fall; the learned estimate joins the plot above.")
        )
