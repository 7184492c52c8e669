"""User and model text shown as text wherever Streamlit renders Markdown (``plain``).

Its own module, with no streamlit import, so that ``ui.widgets`` (which re-exports it for the pages)
and ``ui.url_state`` (whose notice quotes a link's value) both import it without importing each other.
"""

from __future__ import annotations

import re

from attention_atlas.i18n import shown

# Streamlit renders labels, captions, notices and headings as Markdown, with $math$, :emoji:,
# :material/icons:, :color[directives] and bare-URL autolinks: user and model text passes
# through ``plain`` first. A backslash escapes the syntax (``_`` only where it could start or
# end emphasis, not inside a word). Some of it is found in the text after the escapes are
# gone, so a word joiner (U+2060, invisible) goes where it breaks the pattern instead: after
# a ``:`` that a word follows (shortcodes, directives, icons), and in ``http://``, ``www.``
# and ``a@b.c``, which would otherwise become live links.
_SYNTAX = re.compile(r"([\\`*\[\]<>#|~$&])|(?<!\w)_|_(?!\w)")
_LINE_START = re.compile(r"^([-+=]|\d+[.)])", re.MULTILINE)  # a list item or a setext underline
_JOIN = re.compile(r"(?i)(https?|ftp|mailto|xmpp|www)(?=:|\.)|@|:(?=\w)")
WORD_JOINER = "\u2060"


def plain(text) -> str:
    r"""``text`` escaped for ``st.markdown`` and every element that renders Markdown, so that it
    shows as typed: ``plain("**春**风")`` is ``\*\*春\*\*风``, never a bold 春, and no link,
    code, image, math, emoji or icon comes out of it either. A ``later`` message (a model's notice or
    refusal, or an error raised with one) is shown in the visitor's language (``i18n.shown``)."""
    lines = "\n".join(line.lstrip() for line in shown(text).splitlines())  # 4 spaces would make code
    escaped = _SYNTAX.sub(lambda m: "\\" + m[0], lines)
    escaped = _LINE_START.sub(lambda m: m[0][:-1] + "\\" + m[0][-1], escaped)
    return _JOIN.sub(lambda m: m[0] + WORD_JOINER, escaped)
