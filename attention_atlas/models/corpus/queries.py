"""What the Corpus page asks a finished store: every head summarised, one head's distribution,
and the search (exBERT's idea): where a head's attention *from* a token is strongest."""

from __future__ import annotations

from attention_atlas.models.corpus.stats import STAT_COLUMNS
from attention_atlas.models.corpus.store import Store

STATISTICS = STAT_COLUMNS  # the columns a page may place heads by
SEARCH_LIMIT = 50


def head_overview(store: Store):
    """One row per (layer, head): each statistic's mean over the corpus and the commonest pattern."""
    means = ", ".join(f"avg({c}) AS {c}" for c in STATISTICS)
    return store.frame(
        f"SELECT layer, head, {means}, mode(pattern) AS pattern, count(*) AS texts "
        "FROM stats GROUP BY layer, head ORDER BY layer, head"
    )


def head_values(store: Store, layer: int, head: int, statistic: str):
    """``statistic`` of one head over every text (the page's distribution)."""
    _check(statistic)
    return store.frame(
        f"SELECT text_id, {statistic} FROM stats WHERE layer = ? AND head = ? ORDER BY text_id",
        [layer, head],
    )


def layer_values(store: Store, statistic: str):
    """``statistic`` of every head over every text, with its layer (distributions side by side)."""
    _check(statistic)
    return store.frame(f"SELECT layer, head, {statistic} FROM stats")


def _check(statistic: str) -> None:
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; pick one of {', '.join(STATISTICS)}")


def _like(pattern: str) -> tuple[str, str]:
    """A token pattern as SQL: ``*`` and ``?`` are wildcards; case and surrounding spaces ignored."""
    p = pattern.strip().lower()
    if "*" in p or "?" in p:
        escaped = p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return "lower(trim({col})) LIKE ? ESCAPE '\\'", escaped.replace("*", "%").replace("?", "_")
    return "lower(trim({col})) = ?", p


def search(store: Store, layer: int, head: int, pattern: str, to: str = "", limit: int = SEARCH_LIMIT):
    """Occurrences of a token matching ``pattern`` (as the query), strongest top-1 weight of this
    head first: text, the token's position, the key it attends to most and that weight. ``to``
    keeps only those whose strongest key matches it too."""
    if not pattern.strip():
        raise ValueError("type a token to search for (a * matches any letters: walk*)")
    where, value = _like(pattern)
    params: list = [value, layer, head]
    extra = ""
    if to.strip():
        kwhere, kvalue = _like(to)
        extra = " AND " + kwhere.format(col="k.token")
        params.append(kvalue)
    sql = f"""
        WITH hits AS (SELECT text_id, pos, token FROM tokens WHERE {where.format(col="token")})
        SELECT l.text_id, l.pos, h.token, l.key1 AS key_pos, k.token AS key_token, l.w1 AS weight, t.text
        FROM links l
        JOIN hits h ON l.text_id = h.text_id AND l.pos = h.pos
        JOIN key_tokens k ON k.text_id = l.text_id AND k.pos = l.key1
        JOIN texts t ON t.text_id = l.text_id
        WHERE l.layer = ? AND l.head = ?{extra}
        ORDER BY l.w1 DESC, l.text_id, l.pos
        LIMIT {int(limit)}
    """
    return store.frame(sql, params)


def texts_sample(store: Store, n: int, seed: int = 0) -> list[tuple[int, str]]:
    """Up to ``n`` texts, a fixed pseudo-random choice (the queries-and-keys embedding's sample)."""
    rows = store.con.execute(
        "SELECT t.text_id, t.text FROM texts t JOIN facts f USING (text_id) ORDER BY hash(t.text_id + ?) LIMIT ?",
        [seed, n],
    ).fetchall()
    return sorted(rows)


def common_tokens(store: Store, n: int = 12) -> list[str]:
    """The corpus's commonest tokens that are words (no special tokens, no punctuation alone)."""
    rows = store.con.execute(
        "SELECT token, count(*) AS c FROM tokens WHERE NOT special AND regexp_matches(trim(token), '\\w') "
        "GROUP BY token ORDER BY c DESC, token LIMIT ?",
        [n],
    ).fetchall()
    return [r[0] for r in rows]
