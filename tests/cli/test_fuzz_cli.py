"""Fuzz the command line (issue 15): ``cli.py extract`` on hostile text, in-process through
``cli.main(argv)`` and as a subprocess. Every run either succeeds (exit 0, stdout as the contract
says, stderr only one-line notices) or fails with one ``error: …`` line on stderr and a non-zero
exit; an unexpected exception (the ``error: TypeError: …`` fallback) is a failure.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys

import pytest

from attention_atlas import cli
from tests.support import ROOT, fuzz_examples, one_line

MODELS = ["couplet-rnn-dot", "translate-gru-additive", "couplet-transformer"]
IN_PROCESS = {"couplet-rnn-dot": 300, "translate-gru-additive": 300, "couplet-transformer": 100}  # one --text
LINES = {
    "couplet-rnn-dot": 1_000,
    "translate-gru-additive": 1_000,
    "couplet-transformer": 100,
}  # --input-file
# (the Transformer's JSON lines hold 3 kinds x 3 layers x 4 heads of weights each: 100 lines are plenty)
BUG = re.compile(r"^error: \w*(Error|Exception|Warning)\b: ")  # cli.main's last-resort handler


@pytest.fixture(scope="module")
def loaded():
    """``models.registry.load``, remembered per model: the CLI path unchanged, the bundle read once."""
    from attention_atlas.models import registry

    real = registry.load
    registry.load = functools.cache(real)
    yield
    registry.load = real


def check_run(code: int, out: str, err: str, argv: list[str], json_out: bool) -> None:
    said = f"{argv[:4]} {argv[4][:80]!r}: exit {code}, stderr {err[:300]!r}"
    lines = err.splitlines()
    if code == 0:
        assert all(x.startswith("notice: ") for x in lines), said
        assert all(one_line(x, 500) for x in lines), said
        if json_out:
            obj = json.loads(out)
            assert obj["records"] and all(r["query_tokens"] and r["key_tokens"] for r in obj["records"]), said
        else:
            assert out.startswith("model   "), said
    else:
        assert len(lines) == 1 and lines[0].startswith("error: ") and one_line(lines[0], 500), said
        assert not BUG.match(lines[0]), said


@pytest.mark.parametrize("model_id", MODELS)
def test_extract_text_in_process(model_id, loaded, capsys, one_thread):
    """``extract --text=T`` (``--json`` for one model in two, the text table for the other), and
    every tenth input as a bare ``--text T`` (a leading ``-`` is then argparse's one-line error)."""
    for i, text in enumerate(fuzz_examples(IN_PROCESS[model_id], model_id)):
        json_out = i % 2 == 0
        argv = ["extract", "--model", model_id, *(["--text", text] if i % 10 == 9 else [f"--text={text}"])]
        argv += ["--json"] if json_out else []
        code = cli.main(argv)
        captured = capsys.readouterr()
        check_run(
            code, captured.out, captured.err, ["extract", "--model", model_id, "--text", text], json_out
        )


@pytest.mark.parametrize("model_id", MODELS)
def test_extract_input_file(model_id, loaded, capsys, tmp_path, one_thread):
    """One ``--input-file`` of ``LINES`` fuzzed lines (``\r`` and ``\n`` inside an input become spaces;
    U+2028, form feeds and the like stay):
    one JSON line out per line in, each a result or ``{"error": one line}``."""
    texts = [re.sub(r"[\r\n]", " ", t) for t in fuzz_examples(LINES[model_id], f"lines-{model_id}")]
    path = tmp_path / "inputs.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8", errors="surrogatepass")
    code = cli.main(["extract", "--model", model_id, "--input-file", str(path)])
    captured = capsys.readouterr()
    if code:  # a file with a lone surrogate is not UTF-8: refused in one line
        assert any(re.search("[\ud800-\udfff]", t) for t in texts)
        check_run(code, captured.out, captured.err, ["extract", "--model", model_id, "-", ""], True)
        texts = [t for t in texts if not re.search("[\ud800-\udfff]", t)]
        path.write_text("\n".join(texts) + "\n", encoding="utf-8")
        code = cli.main(["extract", "--model", model_id, "--input-file", str(path)])
        captured = capsys.readouterr()
    assert code == 0, captured.err[:500]
    out = captured.out.split("\n")
    ends, lines_out = out[-1] == "", len(out) - 1
    assert ends and lines_out == len(texts), f"{lines_out} lines out for {len(texts)} in"
    for text, line in zip(texts, out, strict=False):
        obj = json.loads(line)
        if "error" in obj:
            assert one_line(obj["error"]), (text[:80], obj["error"][:300])
        else:
            assert obj["records"], text[:80]


# Bytes a shell may pass that are not UTF-8 (Python hands them over as lone surrogates), and
# texts that are awkward on a real command line.
ODD_ARGS = [
    b"\xff\xfe",
    b"\xe4\xb8",  # half of 两
    b"\xe4\xb8\xa4\xe4\xb8\xaa\xed\xa0\x80",  # 两个 and an encoded surrogate
    b"\xc0\xaf",
    "两个黄鹂鸣翠柳\u202e".encode(),
    b"<img src=x onerror=alert(1)>",
    "👨\u200d👩\u200d👧\u200d👦".encode(),
    b"-",
    b"--",
    b"--json",
    b" ",
    b"\t\xe3\x80\x80",
    ("两" * 40_000).encode(),  # 120,000 bytes: Linux takes at most 131,072 in one argument
    b"word " * 20_000,  # 100,000 characters
]


# One process that runs ``cli.py`` as ``__main__`` once per argv given in hex on stdin, each argv's
# bytes decoded as Python decodes a command line (``os.fsdecode``), on the process's own stdout and
# stderr; after each run it writes ``END`` and the exit code to both. Loading torch and a model once
# instead of once per argv: 14 of minilm's processes took 166 s on a loaded machine.
END = "\x00end "
DRIVER = f"""
import os, runpy, sys
for line in sys.stdin:
    sys.argv = ["cli.py", *(os.fsdecode(bytes.fromhex(a)) for a in line.split())]
    try:
        runpy.run_path("cli.py", run_name="__main__")
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    for stream in (sys.stdout, sys.stderr):
        stream.write({END!r} + str(code) + "\\n")
        stream.flush()
"""
ENV = {**os.environ, "ATLAS_THREADS": "1", "PYTHONIOENCODING": ""}


def argv_of(model_id: str, raw: bytes) -> list[bytes]:
    return [b"extract", b"--model", model_id.encode(), b"--text=" + raw, b"--json"]


def split_runs(stream: bytes) -> tuple[list[int], list[str]]:
    """One of the driver's streams split at ``END``: each run's exit code and text (must be UTF-8)."""
    pieces = stream.decode("utf-8").split(END)
    assert pieces[-1].endswith("\n") and "\n" not in pieces[-1][:-1]
    return [int(p.split("\n", 1)[0]) for p in pieces[1:]], [pieces[0]] + [p.split("\n", 1)[1] for p in pieces[1:-1]]


@pytest.mark.parametrize(
    "model_id",
    [
        "couplet-rnn-dot",
        pytest.param("translate-gru-additive", marks=pytest.mark.slow),
        pytest.param("minilm", marks=pytest.mark.slow),
    ],
)
@pytest.mark.timeout(600)
def test_extract_subprocess_with_bytes_that_are_not_utf8(model_id):
    """The real process, its argv from raw bytes: exit 0 with JSON on stdout, or one error line. The
    first argv runs as ``python cli.py`` of its own; every argv, the first again, in one driver
    process (``DRIVER``), which must answer the first exactly as the real command did."""
    own = subprocess.run(
        [sys.executable.encode(), b"cli.py", *argv_of(model_id, ODD_ARGS[0])],
        cwd=ROOT, capture_output=True, timeout=300, env=ENV,
    )  # fmt: skip
    lines = "\n".join(" ".join(a.hex() for a in argv_of(model_id, raw)) for raw in ODD_ARGS) + "\n"
    driven = subprocess.run(
        [sys.executable, "-c", DRIVER], cwd=ROOT, input=lines.encode(), capture_output=True, timeout=500, env=ENV
    )
    assert driven.returncode == 0, driven.stderr[-2000:]
    (codes, outs), (codes_again, errs) = split_runs(driven.stdout), split_runs(driven.stderr)
    assert codes == codes_again and len(codes) == len(ODD_ARGS)
    runs = list(zip(codes, outs, errs, strict=True))
    assert runs[0] == (own.returncode, own.stdout.decode("utf-8"), own.stderr.decode("utf-8"))
    for raw, (code, out, err) in zip(ODD_ARGS, runs, strict=True):
        shown = raw.decode("utf-8", "surrogateescape")
        check_run(code, out, err, ["extract", "--model", model_id, "--text", shown], True)
