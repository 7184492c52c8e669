"""What the commands share: the one-line error and its parser, the ``--model``/``--checkpoint``
options and the adapter they name, text from the command line or a file, ``--json``/``--out``
and the ``.npz`` files the commands write."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import orjson

# the help of --model and --checkpoint: any registered model, or a causal LM only
ANY_MODEL = ("a registry id (see: atlas models)", "a self-describing checkpoint file (atlas export)")
CAUSAL_LM = (
    "a registry id of a causal LM (see: atlas models)",
    "an uploadable file or zipped Hugging Face folder of a causal LM",
)


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own messages, one line, exit 2
        raise CliError(f"{self.prog}: {message}")

    def _get_values(self, action, arg_strings):
        if action.nargs is None and arg_strings == ["--"]:  # --text=--: Python 3.11 would give []
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def fail(message) -> None:
    """``error: MESSAGE`` on stderr, on one line whatever the message holds."""
    print("error: " + " ".join(str(message).split()), file=sys.stderr)


# -- options -------------------------------------------------------------------------------


def add_source(p: argparse.ArgumentParser, helps: tuple[str, str]) -> None:
    """``--model ID`` or ``--checkpoint FILE``, one of them required; ``helps``: their help."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help=helps[0])
    which.add_argument("--checkpoint", help=helps[1])


def add_output(
    p: argparse.ArgumentParser, out_help: str, json_help: str = "print one JSON object", required: bool = False
) -> None:
    """``--json`` or ``--out FILE``, at most one (exactly one where ``required``)."""
    fmt = p.add_mutually_exclusive_group(required=required)
    fmt.add_argument("--json", action="store_true", help=json_help)
    fmt.add_argument("--out", help=out_help)


# -- inputs --------------------------------------------------------------------------------


def load_adapter(args: argparse.Namespace):
    """The adapter for ``--model`` (registry) or ``--checkpoint`` (any file the upload page accepts:
    our bundle, a torch.save state dict + config, a zipped model folder; checked, no code run)."""
    from attention_atlas.models.device import pick_device

    device = pick_device()
    if args.model:
        from attention_atlas.models.registry import load

        return load(args.model, device)
    from attention_atlas.models.uploads import load_path

    path = Path(args.checkpoint)
    if path.is_dir() and (path / "model.safetensors").is_file():  # a bundle folder (atlas train --out)
        path = path / "model.safetensors"
    return load_path(path, device=device).adapter


def input_text(args: argparse.Namespace) -> str | None:
    """``--text``, or the contents of ``--text-file`` (UTF-8, trailing line breaks dropped)."""
    args.target = from_argv(getattr(args, "target", None))
    if getattr(args, "text_file", None) is None:
        return from_argv(args.text)
    try:
        return Path(args.text_file).read_text(encoding="utf-8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        raise CliError(f"--text-file {args.text_file}: not UTF-8 text ({err.reason})") from err


def from_argv(text: str | None) -> str | None:
    """Text from the command line as valid Unicode: bytes that were not UTF-8 (Python keeps them as
    lone surrogates, which nothing can print) read as U+FFFD, with a notice."""
    if text is None:
        return None
    from attention_atlas.viz_core.tokens import well_formed

    text, notices = well_formed(text)
    print_notices(notices)
    return text


def prompt(args: argparse.Namespace) -> str:
    """``--text`` read as ``from_argv`` does, with what can be refused before the model loads (a blank
    text, an ``--out`` that is not .npz) refused: a mistake is told in a second, not after the load."""
    text = from_argv(args.text)
    if not text.strip():
        raise CliError("the text is empty: type a sentence")
    check_out(args)
    return text


def print_notices(notices) -> None:
    for notice in notices:
        print(f"notice: {notice}", file=sys.stderr)


def check_head(args: argparse.Namespace, layers: int, heads: int) -> None:
    if not 0 <= args.layer < layers:
        raise CliError(f"--layer {args.layer} is out of range: the model has layers 0..{layers - 1}")
    if not 0 <= args.head < heads:
        raise CliError(f"--head {args.head} is out of range: the model has heads 0..{heads - 1}")


# -- outputs -------------------------------------------------------------------------------


def check_out(args: argparse.Namespace) -> None:
    """``--out`` must name a .npz file: said before the model loads."""
    if args.out and Path(args.out).suffix != ".npz":
        raise CliError(f"{args.command}: --out writes .npz files, got {Path(args.out).name}")


def save_npz(path: Path, arrays: dict, summary: str) -> None:
    """Every value as a numpy array in one compressed ``path``, then ``wrote PATH (SUMMARY)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    print(f"wrote {path} ({summary})")


def write_arrays(args: argparse.Namespace, arrays: dict, summary: str) -> bool:
    """``--out FILE.npz`` or ``--json`` (the same arrays as one JSON object); False when neither was given."""
    if args.out:
        save_npz(Path(args.out), arrays, summary)
    elif args.json:
        print_json(arrays)
    else:
        return False
    return True


def json_text(obj) -> str:
    """``obj`` as one line of JSON, its numpy arrays and numbers in it as they are: a float32 in the
    shortest decimal that reads back to the same float32 (half the digits of a float64's), NaN as
    null. orjson writes 512 tokens' attention in under a second, where ``json.dumps`` of ``tolist()``
    took 20 s; a text it refuses (a lone surrogate) goes through ``json`` as before."""
    try:
        return orjson.dumps(obj, default=_plain_json, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    except orjson.JSONEncodeError:
        return json.dumps(obj, default=_plain_json, ensure_ascii=False)


def _plain_json(value):
    """What orjson leaves to ``default``: an array it cannot write as it is (not C-contiguous, or of
    strings), a numpy scalar."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def print_json(obj) -> None:
    """``json_text(obj)`` on stdout, one line."""
    sys.stdout.write(json_text(obj) + "\n")
