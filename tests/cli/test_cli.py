"""The command line: its contract, and one clear line (never a traceback) for bad input."""

import argparse
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


def test_the_command_line_calls_itself_atlas():
    """Issue 40, item 13: a wheel user has only the ``atlas`` script, so usage, errors and every
    help say ``atlas …``, never ``cli.py`` (which still runs the same from a checkout)."""
    from attention_atlas.cli import build_parser

    done = cli("models", "--bogus")
    assert done.stderr.startswith("error: atlas: unrecognized arguments: --bogus")
    done = cli("lens", "--model", "smollm2")
    assert done.stderr.startswith("error: atlas lens: the following arguments are required: --text")
    done = cli("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: atlas ")

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    every = list(parsers(build_parser()))
    assert len(every) > 12 and all(p.prog.startswith("atlas") for p in every)
    assert [p.prog for p in every if "cli.py" in p.format_help()] == []
