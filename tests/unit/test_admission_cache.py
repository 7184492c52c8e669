"""ui.cached with the admission queue: a model result is computed once while cached, and
release_results (what the janitor does once no page asked for a while) really drops it."""

from __future__ import annotations

from attention_atlas.ui import cached


class Counting:
    model_id = "fake"

    def __init__(self):
        self.runs = 0

    def run(self, text, target=None, **options):
        self.runs += 1
        return f"{text}:{self.runs}"


def test_results_are_cached_until_released(monkeypatch):
    fake = Counting()
    monkeypatch.setattr(cached, "adapter", lambda model_id: fake)
    cached.release_results()
    first = cached.run_model("fake", "春风又绿江南岸")
    assert cached.run_model("fake", "春风又绿江南岸") == first and fake.runs == 1
    assert ("run", "fake", "春风又绿江南岸", None, 1) in cached._SEEN
    cached.release_results()
    assert ("run", "fake", "春风又绿江南岸", None, 1) not in cached._SEEN
    assert cached.run_model("fake", "春风又绿江南岸") != first and fake.runs == 2


def test_a_long_input_goes_to_the_small_heavy_cache(monkeypatch):
    fake = Counting()
    monkeypatch.setattr(cached, "adapter", lambda model_id: fake)
    cached.release_results()
    long = "x" * 2000
    cached.run_model("fake", long)
    cached.run_model("fake", long)
    assert fake.runs == 1
    assert cached._run_model_heavy("fake", long, None, 1) == "x" * 2000 + ":1"  # it is in the heavy one
    assert fake.runs == 1
    cached.release_results()
