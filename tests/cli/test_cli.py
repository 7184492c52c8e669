"""The command line: its contract, and one clear line (never a traceback) for bad input."""

import json

from tests.support import run_cli as cli


def test_models_json_lists_every_registered_model():
    from attention_atlas.models.registry import available

    done = cli("models", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [m["id"] for m in listed] == [m.id for m in available()]


def test_unknown_command_and_option_give_one_line_and_nonzero_exit():
    for args in (["nonsense"], ["models", "--bogus"], []):
        done = cli(*args)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error:")
