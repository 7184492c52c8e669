"""The Chinese catalog is whole and true to its sources: every string marked in the package
(``_``, ``N_``, ``ngettext``, ``later``, ``later_n``) is in ``atlas.po`` and translated, none fuzzy, each translation
keeps its source's ``{placeholders}``, and the ``atlas.mo`` the app reads is that ``.po`` compiled."""

from __future__ import annotations

import gettext
import re
import string
import unicodedata

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po

from attention_atlas import i18n
from tests.support import PACKAGE, ROOT

PO = i18n.LOCALES / "zh" / "LC_MESSAGES" / f"{i18n.DOMAIN}.po"
MO = PO.with_suffix(".mo")
KEYWORDS = {**DEFAULT_KEYWORDS, "later": None, "later_n": (1, 2)}  # make catalog's -k options


@pytest.fixture(scope="module")
def catalog():
    with PO.open("rb") as f:
        return read_po(f)


def texts(message) -> tuple[str, ...]:
    return message if isinstance(message, tuple) else (message,)


def fields(text: str) -> set[str]:
    """The names of ``text``'s ``{placeholders}`` (a field's format spec left out)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def placeholder_problems(source: tuple[str, ...], translated: tuple[str, ...]) -> list[str]:
    want = set().union(*map(fields, source))
    return [f"{t!r} has {sorted(fields(t))}, its source {sorted(want)}" for t in translated if fields(t) != want]


def test_every_marked_string_is_in_the_catalog(catalog):
    marked = {texts(m[2])[0] for m in extract_from_dir(PACKAGE, method_map=[("**.py", "python")], keywords=KEYWORDS)}
    present = {texts(m.id)[0] for m in catalog if m.id}
    assert marked, "no marked strings found"
    assert not marked - present, f"run `make catalog`: not in atlas.po: {sorted(marked - present)[:20]}"
    assert not present - marked, f"run `make catalog`: no longer marked: {sorted(present - marked)[:20]}"


def test_every_entry_is_translated_and_none_is_fuzzy(catalog):
    untranslated = [m.id for m in catalog if m.id and not all(texts(m.string))]
    fuzzy = [m.id for m in catalog if m.id and m.fuzzy]
    assert not untranslated, f"{len(untranslated)} untranslated: {untranslated[:20]}"
    assert not fuzzy, f"fuzzy: {fuzzy[:20]}"


def test_every_translation_keeps_its_placeholders(catalog):
    problems = [p for m in catalog if m.id for p in placeholder_problems(texts(m.id), texts(m.string))]
    assert not problems, problems[:20]


def test_the_placeholder_check_can_fail():
    assert placeholder_problems(("{n:,} tokens",), ("{n} 个词元",)) == []
    assert placeholder_problems(("{n} of {model}",), ("{model} 的 {count}",))


def unbold(text: str) -> list[str]:
    """Where ``text``'s ``**`` pairs do not make bold under CommonMark's flanking rules (which count
    full-width punctuation as punctuation): "**汇点（sink）**占" shows its asterisks, since a closing
    ``**`` after "）" must be followed by a space or punctuation."""

    def kind(c: str) -> str:
        return "space" if c.isspace() else "punct" if unicodedata.category(c)[0] in "PS" else "other"

    found = []
    for i, m in enumerate(re.finditer(r"(?<!\*)\*\*(?!\*)", text)):
        before = kind(text[m.start() - 1]) if m.start() else "space"
        after = kind(text[m.end()]) if m.end() < len(text) else "space"
        opening = after != "space" and (after != "punct" or before != "other")
        closing = before != "space" and (before != "punct" or after != "other")
        if not (closing if i % 2 else opening):
            found.append(text[max(0, m.start() - 12) : m.end() + 12])
    return found


def test_every_bold_translation_is_bold(catalog):
    problems = [(m.id, p) for m in catalog if m.id for t in texts(m.string) for p in unbold(t)]
    assert not problems, problems[:10]


def test_the_bold_check_can_fail():
    assert unbold("**汇点（sink）**占去") and unbold("**logit lens（逻辑透镜）**在")
    assert not unbold("**汇点**（sink）占去") and not unbold("这个**头**的 **weights** here.")


def test_the_compiled_catalog_is_the_source_compiled(catalog):
    with MO.open("rb") as f:
        compiled = gettext.GNUTranslations(f)
    for m in catalog:
        if not m.id:
            continue
        if isinstance(m.id, tuple):
            assert compiled.ngettext(*m.id, 1) == m.string[0], m.id
        else:
            assert compiled.gettext(m.id) == m.string, f"atlas.mo is older than atlas.po ({m.id!r}): run `make catalog`"
    assert MO.stat().st_size > 0 and ROOT in MO.parents


def test_strings_follow_the_language_in_force():
    assert i18n._("Attention pooling") == "Attention pooling"
    with i18n.language("zh"):
        assert i18n._("Attention pooling") == "注意力汇聚"
        assert i18n._("a string no catalog has") == "a string no catalog has"
        with i18n.language("en"):
            assert i18n._("Attention pooling") == "Attention pooling"
    assert i18n.current() == "en"


@pytest.mark.parametrize(("given", "code"), [("zh-CN", "zh"), ("zh_TW", "zh"), ("ZH", "zh"), ("en-GB", "en"),
                                             ("fr-FR", None), ("", None), (None, None)])  # fmt: skip
def test_a_browser_locale_names_its_language(given, code):
    assert i18n.normalise(given) == code


def test_an_unknown_language_is_refused_in_one_line():
    with pytest.raises(i18n.LanguageError, match="lang must be one of en, zh, not 'fr'"), i18n.language("fr"):
        pass


def test_a_message_made_once_is_shown_in_the_language_of_each_place_it_is_shown():
    """A cached model run's notice is made once, in English, and shown to visitors of both languages:
    ``later`` keeps what ``shown`` needs (its nested ``what``, its plural), through a pickle (the cache)."""
    import pickle

    from attention_atlas.models.tasks.couplet import UPPER, prepare_line

    line = prepare_line("两个 黄鹂" + "山" * 40, UPPER)
    spaces, cut = pickle.loads(pickle.dumps(line.notices))
    assert cut == "The upper line has 44 characters; only the first 32 are used."  # the text as made
    with i18n.language("zh"):
        assert i18n.shown(spaces) == "上联中的空格已去掉：一个字就是一个词元。"
        assert i18n.shown(cut) == "上联有 44 个字，只用前 32 个。"
        with pytest.raises(ValueError) as refused:
            prepare_line("  ")
        assert i18n.shown(refused.value) == "上联为空：请输入汉字，例如 两个黄鹂鸣翠柳"
        assert i18n.shown("typed text") == "typed text"
    one = i18n.later_n("{n} word", "{n} words", 1, n=1)
    assert (one, i18n.later_n("{n} word", "{n} words", 3, n=3)) == ("1 word", "3 words")
