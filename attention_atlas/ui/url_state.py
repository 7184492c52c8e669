"""Links that reproduce a view: a page's settings kept in the URL (``st.query_params``).

A page makes one ``Link`` near its top (the one-line notice about a bad link goes where it is
made) and declares each URL-backed widget once, right before drawing it, by passing the
declaration as the widget's ``key``. The declaration holds the default (so the widget itself
gets no ``value=``/``index=``/``default=``), the name in the URL and what a valid value is::

    from attention_atlas.ui.url_state import Link

    link = Link("couplets")                        # the page's url_path ("" for Home)
    ids = model_choices(task="couplet")
    model_id = st.selectbox("Model", ids, key=link.choice("model", K + "model", ids, ids[0]))
    text = st.text_input("Upper line", key=link.text("text", K + "upper", 32, example))
    beam = st.slider("Beam width", 1, 8, key=link.number("beam", K + "beam", 1, 8, 1))
    both = st.toggle("Side by side", key=link.flag("both", K + "both"))
    tab = st.tabs(TABS, key=link.choice("tab", K + "tab", TABS, TABS[0]), on_change="rerun")
    ...
    link.done()                                    # last line: drops settings this run did not use

Declare in the order the page draws, so that a range can depend on what came before (a layer's
range on the model chosen). How a value is chosen, each run:

- The URL wins when it changed since this session last wrote it (a link opened, a lesson link
  from Home, the browser's back button) or when the session holds no value yet; a setting
  missing from such a URL goes back to its default. Otherwise the session's value wins (the
  visitor just moved a widget).
- A URL value that does not fit (unknown model, number out of range or not a number, text over
  the limit, anything else) is replaced by the default, and ONE warning line lists them all:
  "This link's layer 9 is out of range (0–5); showing defaults for it." Never a traceback.
- After each declaration the URL holds every setting that differs from its default (defaults
  are left out, so links stay short); ``done()`` writes the final values once more and drops
  the settings this run did not draw. A page that stops early (``st.stop()``) keeps a URL that
  is right for everything it drew.
- The sidebar's "Link to this view" shows the whole URL to copy: ``ATLAS_PUBLIC_URL`` (the
  address the class uses, e.g. ``http://atlas.school.example:8501``) plus the page's path, else
  the address the browser used (``st.context.url``), else the path alone.

App-wide switches (projector mode, high-contrast colours) are ``app_flag``s: kept across pages,
never dropped by a page, and only an explicit ``?present=0`` turns one off.
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlencode

import streamlit as st

from attention_atlas.i18n import LANGUAGES, N_, _, language, ngettext, normalise

WRITTEN = "_url_written"  # session state: {scope: {name: text}} what this session last put in the URL
SEEN = "_url_names"  # session state: {scope: set of names} every setting a page has declared
SCOPE = "_url_scope"  # session state: the scope of the page that made the latest Link
APP = "app"  # the scope of the app-wide flags
LANG = "lang"  # the interface's language (?lang=zh), app-wide
KEPT = {"present", "contrast", LANG}  # app-wide names: kept across pages, never dropped by a page
BASE_ENV = "ATLAS_PUBLIC_URL"
QUOTED = 24  # characters of a bad value quoted in the notice
SECTION = "section"  # a lesson link's part of the page: scrolled into view once, then dropped from the URL
LANDING = "_url_section"  # session state: the section this run's URL asked for
# Scrolls the heading into view, again while the charts above it are still taking their height (for up
# to 20 s on a busy server), until the visitor scrolls, types or clicks. Streamlit itself scrolls to a
# heading's ``#anchor`` only on a fresh load: a page link switches pages without reloading and leaves no
# ``#`` in the URL.
SCROLL = """<script>(() => {
  const id = %s; let tries = 0, mine = true;
  for (const e of ["wheel", "touchmove", "keydown", "pointerdown"]) addEventListener(e, () => { mine = false; }, {once: true});
  const go = () => {
    const el = document.getElementById(id);
    if (!mine) return;
    if (el) el.scrollIntoView({block: "start"});
    if (++tries < 100) setTimeout(go, 200);
  };
  go();
})();</script>"""


@dataclass(frozen=True)
class _Kind:
    """How one setting travels: text → (value, problem) and value → text."""

    parse: Callable[[str], tuple[Any, str | None]]
    encode: Callable[[Any], str]
    valid: Callable[[Any], bool]


class Problem(str):
    """What is wrong with a link's value, in the visitor's language; ``msgid`` is its English source,
    which decides how the value is quoted (``_shown``)."""

    msgid: str

    @classmethod
    def of(cls, msgid: str, **fields) -> Problem:
        problem = cls(_(msgid, **fields))
        problem.msgid = msgid
        return problem


def _quote(raw: str) -> str:
    return _shown(raw, "").strip()


def _number_text(value) -> str:
    return str(int(value)) if isinstance(value, int) or float(value).is_integer() else f"{value:g}"


def _shown_number(value) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _written(scope: str) -> dict[str, str]:
    return st.session_state.setdefault(WRITTEN, {}).setdefault(scope, {})


def _put(scope: str, name: str, text: str | None) -> None:
    """Set (or, for ``None``, remove) ``name`` in the URL, and remember what was written."""
    if text is None:
        if name in st.query_params:
            del st.query_params[name]
        _written(scope).pop(name, None)
    else:
        if st.query_params.get(name) != text:
            st.query_params[name] = text
        _written(scope)[name] = text


def _settle(scope: str, name: str, key: str, default, kind: _Kind) -> str | None:
    """Give ``st.session_state[key]`` its value for this run (see the module's rules) and return
    the problem with the URL's value, if it had one."""
    raw = st.query_params.get(name)
    state = st.session_state
    problem = None
    if raw != _written(scope).get(name) or key not in state:  # the URL speaks
        value = default
        if raw is not None:
            parsed, problem = kind.parse(raw)
            value = default if problem else parsed
        state[key] = value
    else:  # set again even when unchanged: a slider whose range changed is a new widget to
        # Streamlit, which would otherwise start it at its minimum; out of a range that shrank
        # (another model, fewer tokens) it starts at its default
        state[key] = state[key] if kind.valid(state[key]) else default
    return problem


def app_flag(name: str, key: str | None = None) -> str:
    """An app-wide on/off switch kept in the URL as ``?name=1`` across pages; returns the widget key.

    ``st.sidebar.toggle("Projector mode", key=app_flag("present"))``. Unlike a page's settings a
    missing flag does not reset it (moving to another page drops the URL's query): only
    ``?name=0`` (or the toggle) turns it off.
    """
    key = key or name
    raw = st.query_params.get(name)
    if raw is not None and raw != _written(APP).get(name):
        on, problem = _flag_kind().parse(raw)
        if not problem:
            st.session_state[key] = on
    st.session_state.setdefault(key, False)
    _put(APP, name, "1" if st.session_state[key] else None)
    return key


def app_language(browser: str) -> str:
    """The interface's language for this run, kept in the URL across pages as ``?lang=zh``; its widget
    key is ``LANG``. A link's ``lang`` wins when it changed (a shared link, the back button); a first
    visit without one follows ``browser``, the code of the browser's own language. The URL names the
    language whenever it is not what this browser would open in, so that a link opens the same."""
    raw = st.query_params.get(LANG)
    code = normalise(raw)
    if raw is not None and raw != _written(APP).get(LANG) and code:
        st.session_state[LANG] = code
    st.session_state.setdefault(LANG, browser)
    chosen = st.session_state[LANG]
    _put(APP, LANG, chosen if chosen != browser or raw == chosen else None)
    return chosen


def kept() -> dict[str, str]:
    """The app-wide flags that are on, for a link to another page (``st.page_link(query_params=…)``)."""
    return {name: text for name, text in _written(APP).items() if name in KEPT}


def _flag_kind() -> _Kind:
    def parse(raw: str):
        low = raw.strip().lower()
        if low in ("1", "true", "on", "yes"):
            return True, None
        if low in ("0", "false", "off", "no", ""):
            return False, None
        return None, Problem.of(N_("is not 1 or 0"))

    return _Kind(parse, lambda v: "1" if v else "0", lambda v: isinstance(v, bool))


class Link:
    """A page's URL-backed settings; see the module's docstring for the rules and an example."""

    def __init__(self, page: str):
        self.page = page
        self.scope = page or "home"
        st.session_state[SCOPE] = self.scope
        self.declared: dict[str, tuple[str, Any, _Kind]] = {}
        self.problems: list[str] = []
        self._notice = st.empty()
        st.session_state[LANDING] = st.query_params.get(SECTION)
        with st.sidebar.expander(_("🔗 Link to this view")):
            self._url = st.empty()
        self._show()

    # -- declarations: each returns the widget key -----------------------------------------------

    def choice(
        self, name: str, key: str, options: Sequence, default, what: str = N_("is unknown"), text=str
    ) -> str:
        """One of ``options`` (a selectbox, radio, select_slider, segmented control or st.tabs); in
        the URL as ``text(option)`` (``str`` unless given: ``text=lambda o: o.removeprefix("real: ")``)."""
        by_text = {text(o): o for o in options}

        def parse(raw: str):
            return (by_text[raw], None) if raw in by_text else (None, Problem.of(what))

        return self._declare(name, key, default, _Kind(parse, text, lambda v: v in options))

    def tabs(self, name: str, key: str, sources: Sequence[str]) -> tuple[list[str], str]:
        """``st.tabs``' labels in this run's language and its key, the first tab the default:
        ``labels, key = link.tabs("tab", K + "tab", TABS)``, then ``st.tabs(labels, key=key, ...)``.
        In the URL a tab is its English label (``sources``, marked with ``N_``), so a link opens the same
        tab in either language; the open tab stays open when the visitor switches language."""
        shown = tab_labels(key, sources)
        source_of = dict(zip(shown, sources, strict=True))
        return shown, self.choice(name, key, shown, shown[0], text=lambda label: source_of.get(label, label))

    def choices(self, name: str, key: str, options: Sequence, default: Sequence) -> str:
        """Several of ``options`` (a multiselect), comma-separated in the URL: ``cols=6,7,8,9``."""
        by_text = {str(o): o for o in options}

        def parse(raw: str):
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            if not all(p in by_text for p in parts):
                return None, Problem.of(N_("has entries that are not on offer"))
            return list(dict.fromkeys(by_text[p] for p in parts)), None

        def valid(v) -> bool:
            return isinstance(v, list) and all(str(x) in by_text for x in v)

        return self._declare(name, key, list(default), _Kind(parse, lambda v: ",".join(map(str, v)), valid))

    def number(self, name: str, key: str, lo, hi, default, step=None, checks_itself: bool = False) -> str:
        """A number from ``lo`` to ``hi``: whole when ``lo``, ``hi`` and ``default`` are ints, else a
        float (snapped to ``step`` when given). ``checks_itself``: the widget says what it does with
        a number typed out of range (``ui.widgets.whole_number``), so such a value is left to it."""
        whole = all(isinstance(v, int) for v in (lo, hi, default))

        def parse(raw: str):
            try:
                value = int(raw) if whole else float(raw)
            except ValueError:
                return None, Problem.of(N_("is not a whole number") if whole else N_("is not a number"))
            if not math.isfinite(value) or not lo <= value <= hi:
                return None, Problem.of(
                    N_("is out of range ({lo}–{hi})"), lo=_shown_number(lo), hi=_shown_number(hi)
                )
            if step and not whole:
                value = round(lo + round((value - lo) / step) * step, 10)
            return value, None

        def valid(v) -> bool:
            number = isinstance(v, int | float) and not isinstance(v, bool)
            return number and (checks_itself or lo <= v <= hi)

        return self._declare(name, key, default, _Kind(parse, _number_text, valid))

    def text(self, name: str, key: str, limit: int, default: str = "") -> str:
        """Text of at most ``limit`` characters, on one line (no control characters)."""

        def parse(raw: str):
            if len(raw) > limit:
                return None, Problem.of(N_("is longer than {limit:,} characters"), limit=limit)
            if any(unicodedata.category(ch) == "Cc" for ch in raw):
                return None, Problem.of(N_("holds control characters"))
            return raw, None

        return self._declare(name, key, default, _Kind(parse, str, lambda v: isinstance(v, str)))

    def flag(self, name: str, key: str, default: bool = False) -> str:
        """On or off (a toggle or checkbox): ``1`` or ``0`` in the URL."""
        return self._declare(name, key, default, _flag_kind())

    def spoke(self, name: str) -> bool:
        """Whether this run's URL sets ``name`` anew (a link opened, the back button): asked before
        the setting is declared, it tells a value the link brings from one the session holds."""
        return st.query_params.get(name) != _written(self.scope).get(name)

    # -- the URL ---------------------------------------------------------------------------------

    def _declare(self, name: str, key: str, default, kind: _Kind) -> str:
        problem = _settle(self.scope, name, key, default, kind)
        if problem:
            shown = _shown(st.query_params.get(name, ""), problem)
            self._problem(_("{name}{value} {problem}", name=name, value=shown, problem=problem))
        self.declared[name] = (key, default, kind)
        st.session_state.setdefault(SEEN, {}).setdefault(self.scope, set()).add(name)
        self._write(name)
        self._show()
        return key

    def _write(self, name: str) -> None:
        key, default, kind = self.declared[name]
        value = st.session_state.get(key, default)
        text = None if value == default or not kind.valid(value) else kind.encode(value)
        # only what a link can bring back: a typed page of 100,000 characters stays in the session (in
        # the URL it made a query string Streamlit ignores, and the page forgot every setting)
        _put(self.scope, name, None if text is None or kind.parse(text)[1] else text)

    def sync(self, *names: str) -> None:
        """Write these settings' current values to the URL (from a fragment's own rerun, which
        does not reach ``done()``)."""
        for name in names:
            self._write(name)
        self._show()

    def done(self) -> None:
        """Write every setting's final value and drop the ones this run did not declare."""
        for name in self.declared:
            self._write(name)
        seen = st.session_state.get(SEEN, {}).get(self.scope, set())
        for name in list(st.query_params):
            if name in self.declared or name in KEPT:
                continue
            if name == SECTION:  # read when the page was opened (``section``): not a setting
                _put(self.scope, name, None)
                continue
            if name not in seen:
                self._problem(_("setting {name} does not apply here", name=_quote(name)))
            _put(self.scope, name, None)
        self._show()

    def _problem(self, text: str) -> None:
        self.problems.append(text)
        self._notice.warning(notice(self.problems), icon="🔗")

    def url(self) -> str:
        """The address of this view: the base (see the module's docstring), ``?`` and the settings."""
        query = urlencode({k: st.query_params.get(k) for k in st.query_params})
        public = os.environ.get(BASE_ENV)
        base = public.rstrip("/") + "/" + self.page if public else st.context.url or "/" + self.page
        return base + ("?" + query if query else "")

    def _show(self) -> None:
        self._url.code(self.url(), language=None, wrap_lines=True)


def rerun_page() -> NoReturn:
    """``st.rerun()`` of the whole page from a fragment's run (a timer's, above all). Streamlit gives
    that rerun the query string the fragment's run came with: the URL the browser had when its timer
    fired, which may predate a setting written since (a click's run moved the layer). The full rerun
    would take that older URL for a link that speaks and undo the setting, so the URL this session
    last wrote is put back first."""
    scope = st.session_state.get(SCOPE)
    if scope is not None:
        written = _written(scope)
        for name in sorted(st.session_state.get(SEEN, {}).get(scope, ())):
            _put(scope, name, written.get(name))
    st.rerun()


def section(title: str, anchor: str) -> None:
    """A subheader a lesson link can land on: ``?section=anchor`` (``st.page_link(query_params=…)``)
    scrolls it into view once; ``#anchor`` in an address typed or opened afresh does too (Streamlit)."""
    st.subheader(title, anchor=anchor)
    if st.session_state.get(LANDING) == anchor:
        st.session_state[LANDING] = None
        st.html(SCROLL % json.dumps(anchor), unsafe_allow_javascript=True)


def _shown(raw: str, problem: str) -> str:
    """The URL's value as the notice quotes it: a number bare, other values in quotes, long or
    unprintable text not at all."""
    source = getattr(problem, "msgid", problem)
    if source.startswith(("is longer", "holds control")) or not _one_line(raw[:QUOTED]):
        return ""
    from attention_atlas.ui.plain_text import plain

    short = raw if len(raw) <= QUOTED else raw[: QUOTED - 1] + "…"
    return " " + (plain(short) if source.startswith("is out of range") else "“" + plain(short) + "”")


def _one_line(text: str) -> bool:
    """Whether ``text`` quoted stays on one line: no control character, no line or paragraph separator."""
    return not any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in text)


def notice(problems: list[str]) -> str:
    """One line for every problem of a link: ``This link's layer 9 is out of range (0–5) and its
    model “gpt-9” is unknown; showing defaults for them.``"""
    parts = [problems[0]] + [_("its {problem}", problem=p) for p in problems[1:]]
    listed = parts[0] if len(parts) == 1 else _(", ").join(parts[:-1]) + _(" and ") + parts[-1]
    return ngettext(
        "This link's {listed}; showing defaults for it.",
        "This link's {listed}; showing defaults for them.",
        len(problems),
        listed=listed,
    )


def tab_labels(key: str, sources: Sequence[str]) -> list[str]:
    """``sources`` in this run's language; a tab the session holds in another language (Streamlit knows
    a tab by its label) moved to the same tab's label in this one."""
    shown = [_(s) for s in sources]
    held = st.session_state.get(key)
    if held is not None and held not in shown:
        for code in LANGUAGES:
            with language(code):
                names = [_(s) for s in sources]
            if held in names:
                st.session_state[key] = shown[names.index(held)]
                break
    return shown


class Unlinked:
    """A ``Link``'s declarations with no URL behind them, for views of an input that no link can carry
    (an upload): each sets its widget's value to the default when the session holds none that fits,
    and returns the key."""

    def _declare(self, key: str, default, fits: Callable[[Any], bool]) -> str:
        if not fits(st.session_state.get(key, default)):
            st.session_state[key] = default
        st.session_state.setdefault(key, default)
        return key

    def spoke(self, name: str) -> bool:
        return False  # no URL: the session's value is the only one

    def choice(self, name: str, key: str, options: Sequence, default, *_, **__) -> str:
        return self._declare(key, default, lambda v: v in options)

    def tabs(self, name: str, key: str, sources: Sequence[str]) -> tuple[list[str], str]:
        shown = tab_labels(key, sources)
        return shown, self._declare(key, shown[0], lambda v: v in shown)

    def number(self, name: str, key: str, lo, hi, default, *_, **__) -> str:
        return self._declare(key, default, lambda v: isinstance(v, int | float) and lo <= v <= hi)

    def text(self, name: str, key: str, limit: int, default: str = "") -> str:
        return self._declare(key, default, lambda v: isinstance(v, str) and len(v) <= limit)

    def flag(self, name: str, key: str, default: bool = False) -> str:
        return self._declare(key, default, lambda v: isinstance(v, bool))
