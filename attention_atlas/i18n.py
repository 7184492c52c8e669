"""The interface's languages: English, the source strings, and Simplified Chinese (``zh``).

Strings are marked where they are written and looked up when shown::

    from attention_atlas.i18n import _, ngettext

    st.button(_("Run"))
    st.caption(_("{n} heads of {model}", n=heads, model=model_id))   # {name} placeholders
    ngettext("{n:,} token", "{n:,} tokens", count, n=count)           # plural forms

``N_`` marks a string that is translated later, where it is shown (a constant, a list of options:
``format_func=_``). ``later`` makes a message that is made once and shown to many, in each one's
language: a model run's notices and refusals, kept in a cache that every visitor shares. It is the
English text (a ``str``: printed, compared, saved as it is) that ``shown`` puts in the current
language; the app shows every notice and error through ``shown`` (``ui.plain_text.plain``). The catalogs are gettext's: ``locale/zh/LC_MESSAGES/atlas.po`` is the source,
``atlas.mo`` is compiled from it with Babel (``make catalog``); a test keeps the two equal.

Which language: ``language(lang)`` for a block (the notebook's ``lang=``), else what the resolver
says (the app registers one that reads the visitor's session), else English. The standard library
only: ``viz_core``, ``models`` and the notebook use it as the pages do.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
from collections.abc import Callable, Iterator
from pathlib import Path

LOCALES = Path(__file__).resolve().parent / "locale"
DOMAIN = "atlas"
LANGUAGES = {"en": "English", "zh": "中文"}  # code → its own name, as the language switch shows it
SOURCE = "en"

_chosen: contextvars.ContextVar[str | None] = contextvars.ContextVar("atlas_language", default=None)
_resolver: Callable[[], str | None] | None = None


class LanguageError(ValueError):
    """A language the interface does not speak; the message lists those it does."""


def check(lang: str) -> str:
    """``lang`` if the interface speaks it (``"en"``, ``"zh"``; ``"zh-CN"`` and ``"zh_TW"`` are ``"zh"``)."""
    code = normalise(lang)
    if code is None:
        raise LanguageError(f"lang must be one of {', '.join(LANGUAGES)}, not {lang!r}")
    return code


def normalise(lang: str | None) -> str | None:
    """The language code of a locale such as ``zh-CN``, ``en_GB`` or ``zh``; None when unknown."""
    if not isinstance(lang, str):
        return None
    code = lang.strip().replace("_", "-").split("-")[0].lower()
    return code if code in LANGUAGES else None


def set_resolver(resolver: Callable[[], str | None] | None) -> None:
    """Where the current language comes from outside a ``language`` block (the app: the session)."""
    global _resolver
    _resolver = resolver


def current() -> str:
    """The language strings are shown in now."""
    chosen = _chosen.get()
    if chosen is None and _resolver is not None:
        chosen = _resolver()
    return chosen if chosen in LANGUAGES else SOURCE


@contextlib.contextmanager
def language(lang: str) -> Iterator[None]:
    """Strings looked up in this block (this thread or task) are in ``lang``."""
    token = _chosen.set(check(lang))
    try:
        yield
    finally:
        _chosen.reset(token)


@functools.cache
def catalog(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of ``lang`` (none for English, whose strings are the source)."""
    if lang == SOURCE:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALES, languages=[lang], fallback=True)


def _(message: str, /, **fields: object) -> str:
    """``message`` in the current language, its ``{name}`` placeholders filled from ``fields``."""
    text = catalog(current()).gettext(message)
    return text.format(**fields) if fields else text


def ngettext(singular: str, plural: str, n: int, /, **fields: object) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the current language, placeholders filled."""
    text = catalog(current()).ngettext(singular, plural, n)
    return text.format(**fields) if fields else text


class Later(str):
    """``later``'s message: the English text, with what ``shown`` needs to translate it (its msgid,
    its plural's and the count when it has one, its fields)."""

    def __new__(cls, msgid: str, fields: dict[str, object], plural: str | None = None, n: int = 1) -> Later:
        text = msgid if plural is None or n == 1 else plural
        self = super().__new__(cls, text.format(**fields) if fields else text)
        self.msgid, self.fields, self.plural, self.n = msgid, fields, plural, n
        return self

    def __reduce__(self):  # cached results are pickled: the message travels whole
        return Later, (self.msgid, self.fields, self.plural, self.n)


def later(message: str, /, **fields: object) -> Later:
    """``message`` (placeholders filled from ``fields``) in English now, in the language of wherever
    it is shown later (``shown``). A field may be a ``later`` message itself (``what=later("upper line")``)."""
    return Later(message, fields)


def later_n(singular: str, plural: str, n: int, /, **fields: object) -> Later:
    """``later`` with a plural form, as ``ngettext`` chooses one for ``n``."""
    return Later(singular, fields, plural, n)


def shown(text: object) -> str:
    """``text`` as the current language shows it: a ``later`` message (or an error raised with one)
    translated, anything else as ``str`` gives it."""
    if isinstance(text, BaseException) and len(text.args) == 1 and isinstance(text.args[0], Later):
        text = text.args[0]
    if not isinstance(text, Later):
        return str(text)
    fields = {k: shown(v) if isinstance(v, Later) else v for k, v in text.fields.items()}
    if text.plural is None:
        return _(text.msgid, **fields)
    return ngettext(text.msgid, text.plural, text.n, **fields)


def N_(message: str) -> str:
    """``message`` marked for the catalog and left as it is: translated where it is shown."""
    return message
