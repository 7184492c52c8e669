"""``cli.py figure`` in-process with minilm: the page's own figure, in JSON, HTML or PNG; bad numbers
refused in one line."""

import json


def run_main(capsys, *args) -> tuple[int, str]:
    """The CLI in-process (no interpreter start-up per call); returns (exit code, stderr)."""
    from attention_atlas import cli as cli_module

    code = cli_module.main(list(args))
    return code, capsys.readouterr().err


def test_figure_json_is_exactly_the_page_figure(tmp_path, capsys):
    import plotly.io as pio
    import torch

    from attention_atlas.models.registry import load
    from attention_atlas.viz_core.figures import head_view

    out = tmp_path / "head.json"
    code, err = run_main(
        capsys,
        "figure",
        "--model",
        "minilm",
        "--text",
        "The cat sat.",
        "--view",
        "head",
        "--layer",
        "2",
        "--head",
        "3",
        "--out",
        str(out),
    )
    assert code == 0, err
    record = load("minilm", torch.device("cpu")).run("The cat sat.").records["self"]
    assert json.loads(out.read_text()) == json.loads(pio.to_json(head_view(record, 2, "3"), validate=False))


def test_figure_model_view_html_and_png(tmp_path, capsys):
    html, png = tmp_path / "m.html", tmp_path / "m.png"
    assert (
        run_main(
            capsys, "figure", "--model", "minilm", "--text", "hi", "--view", "model", "--out", str(html)
        )[0]
        == 0
    )
    assert "plotly" in html.read_text()[:100_000].lower()
    code, err = run_main(
        capsys, "figure", "--model", "minilm", "--text", "hi", "--view", "head", "--out", str(png)
    )
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_says_what_it_wrote_on_stdout_in_every_format(tmp_path, capsys):
    """Each format's "wrote …" line is on stdout, like every other command's (figure's went to
    stderr: whatever kept only stdout showed nothing)."""
    from attention_atlas import cli as cli_module

    for name in ("f.json", "f.html", "f.png"):
        out = tmp_path / name
        args = ["figure", "--model", "minilm", "--text", "hi", "--view", "head", "--out", str(out)]
        assert cli_module.main(args) == 0
        printed = capsys.readouterr().out.strip()
        assert printed == f"wrote {out} ({out.stat().st_size:,} bytes)"


def test_figure_refuses_bad_numbers_and_names_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "f.json")
    for extra in (
        ["--layer", "6"],
        ["--head", "12"],
        ["--head", "-1"],
        ["--kind", "cross"],
        ["--layer", "x"],
    ):
        code, err = run_main(
            capsys, "figure", "--model", "minilm", "--text", "x", "--view", "head", "--out", out, *extra
        )
        assert code != 0 and len(err.strip().splitlines()) == 1 and err.startswith("error:"), err
    code, err = run_main(
        capsys, "figure", "--model", "minilm", "--text", "x", "--view", "head", "--out", "f.gif"
    )
    assert code != 0 and ".gif" in err
