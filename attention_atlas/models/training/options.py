"""A recipe's arguments dataclass is its ``atlas train <family>`` options (stdlib only).

Each field of ``RunArgs`` and of a family's subclass is one option, in the manner of
transformers' ``HfArgumentParser``: ``batch_size`` is ``--batch-size``, its type the field's
type (``int``, ``float``, ``str``, ``Path``, ``X | None`` as ``X``), a ``Literal[...]`` gives the
choices, a ``bool`` a flag, and the help is the field's ``metadata["help"]`` followed by its
default. Write a field with ``option``::

    hidden: int = option(256, "hidden size")
    rnn: Literal["gru", "lstm"] = option("gru", "the recurrent cell", required=True)

``required`` means the command line must name it (it picks the model id); the dataclass keeps
its default for code that builds the arguments itself. Adding a field to a recipe adds its
option; nothing else lists them.

Every option defaults to None on the command line, so ``given(namespace, cls)`` holds only
what was typed and the dataclass supplies the rest (``--preset`` checks what was typed).
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal

from attention_atlas.paths import PACKAGE

MISSING = dataclasses.MISSING


def option(default: Any = MISSING, help: str = "", *, required: bool = False) -> Any:
    """A dataclass field with its command-line help (``help`` as in ``argparse``)."""
    if not help:
        raise TypeError("an option needs its help text")
    return dataclasses.field(default=default, metadata={"help": help, "required": required})


def add_options(parser: argparse.ArgumentParser, cls: type) -> None:
    """One option per field of the dataclass ``cls``: the required ones first, then the family's
    own, then its parents' (``RunArgs`` last); a field goes with the class that last set it."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    order = [name for klass in cls.__mro__ for name in vars(klass).get("__annotations__", {})]
    order = sorted(dict.fromkeys(n for n in order if n in fields), key=lambda n: not _required(fields[n]))
    for name in order:
        parser.add_argument("--" + name.replace("_", "-"), dest=name, **_argument(fields[name], hints[name]))


def given(namespace: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` that the command line set (the rest keep the dataclass's defaults)."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return {k: v for k, v in vars(namespace).items() if k in names and v is not None}


def _argument(f: dataclasses.Field, kind: Any) -> dict[str, Any]:
    if "help" not in f.metadata:
        raise TypeError(f"{f.name}: a recipe field needs its help (write it with options.option)")
    kind = _without_none(kind)
    out: dict[str, Any] = {"default": None, "help": _help(f)}
    if _required(f):
        out["required"] = True
    if kind is bool:
        out["action"] = argparse.BooleanOptionalAction if f.default is True else "store_true"
    elif typing.get_origin(kind) is Literal:
        choices = list(typing.get_args(kind))
        out.update(choices=choices, type=type(choices[0]))
    elif kind in (int, float, str, Path):
        out["type"] = kind
    else:
        raise TypeError(f"{f.name}: no command-line option for a field of type {kind!r}")
    return out


def _required(f: dataclasses.Field) -> bool:
    return bool(f.metadata.get("required"))


def _without_none(kind: Any) -> Any:
    """``X | None`` (or ``Optional[X]``) as ``X``."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return kind


def _help(f: dataclasses.Field) -> str:
    """The field's help, with its default where it has one worth showing (``%`` escaped for argparse)."""
    text = f.metadata["help"]
    default = f.default
    if not _required(f) and default is not None and default is not MISSING and default is not False:
        text = f"{text} (default {_shown(default)})"
    return text.replace("%", "%%")


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Path):
        return str(value.relative_to(PACKAGE)) if value.is_relative_to(PACKAGE) else str(value)
    return str(value)
