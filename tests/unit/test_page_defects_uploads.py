"""Issue 17, item 3: the upload cache, shared by every session of a server, carries no file name
(nor anything else a caller gave) from one caller to the next."""

from __future__ import annotations

from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.uploads import UploadCache, load_bytes
from tests.support import CPU, torch_bytes


def test_the_same_bytes_under_another_name_show_that_name_and_nothing_of_the_first(tiny_rnn):
    cm = tiny_rnn
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    data = torch_bytes({"state_dict": cm.model.state_dict(), **meta})  # rebuilt into a bundle on load
    cache = UploadCache(1 << 30)
    first = load_bytes(data, "couplet_of_alice.pt", device=CPU, cache=cache)
    second = load_bytes(data, "my_run_v2.pt", device=CPU, cache=cache)
    assert cache.loads == 1 and second.adapter is first.adapter  # the model is loaded once
    assert (first.summary.file_name, second.summary.file_name) == ("couplet_of_alice.pt", "my_run_v2.pt")
    shared = [repr(second.summary), repr(second.adapter.bundle.info), repr(second.adapter.bundle.meta())]
    assert not any("alice" in text for text in shared), shared
    assert "alice" not in repr(list(cache._items.values()))  # what the cache keeps names no one
