"""``search_guides`` (seed 001): substring points over guide titles, excerpts and tags. Pure.

The seed's rules, kept exactly for ASCII input:

- The query is lowercased and split on every run of characters that are not letters or digits;
  tokens of one character are dropped; the tokens joined by spaces are the normalised query.
  (The seed keeps only ASCII letters and digits; here letters and digits of every script are
  kept, so ``café`` stays one token. ASCII queries tokenise exactly as in the seed.)
- Score of a guide: +8 when the normalised query (longer than one character) is a substring of
  the lowercased title; then for every token, +5 when it is a substring of the title, +3 when it
  is a substring of any tag, +1 when it is a substring of the excerpt.
- Guides scoring 0 are dropped; the rest are ordered by score (descending), then by title in
  locale order (``String.prototype.localeCompare``: the Unicode Collation Algorithm, root
  collation, via ``pyuca``), then by position in the index; the first ``limit`` are returned.
- The limit is clamped by :func:`clamp_limit` whatever the schema says.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sleuth.guides.entry import JS_WHITESPACE, GuideEntry, plain

#: Matches returned when the caller gives no usable limit.
GUIDES_LIMIT_DEFAULT = 5
#: Most matches one call returns.
GUIDES_LIMIT_MAX = 10
#: Points for the whole normalised query found in the title.
TITLE_QUERY_POINTS = 8
#: Points per query token found in the title.
TITLE_TERM_POINTS = 5
#: Points per query token found in any tag.
TAG_TERM_POINTS = 3
#: Points per query token found in the excerpt.
EXCERPT_TERM_POINTS = 1

_TOKEN_RE = re.compile(r"[^\W_]+")
# JavaScript's Number(string) grammar (StringNumericLiteral), after trimming.
_JS_DECIMAL_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_JS_RADIX_RE = re.compile(r"0(?:[xX](?P<hex>[0-9a-fA-F]+)|[oO](?P<oct>[0-7]+)|[bB](?P<bin>[01]+))")
_JS_INFINITY_RE = re.compile(r"[+-]?Infinity")


@dataclass(frozen=True)
class GuideMatch:
    """One match: the guide's title, its url, a one-line summary (the excerpt, else the title) and
    its points (not shown to agents; for tests and explanations)."""

    title: str
    url: str
    summary: str
    score: int


def _fold(text: str) -> str:
    """Lowercase as JavaScript's ``toLowerCase`` does (after NFC, so composed and decomposed
    accents compare equal; ASCII is unchanged)."""
    return unicodedata.normalize("NFC", text).lower()


def tokenize(query: str) -> list[str]:
    """Query tokens: lowercased runs of letters and digits, one-character tokens dropped, repeats kept.

    ``"fractional cto"`` → ``["fractional", "cto"]``; ``"zzzz-not-a-guide"`` → ``["zzzz", "not", "guide"]``.
    """
    return [t for t in _TOKEN_RE.findall(_fold(query)) if len(t) > 1]


def _js_number(text: str) -> float:
    """JavaScript's ``Number(text)`` for a string that is not blank (NaN when it is not a number)."""
    text = text.strip(JS_WHITESPACE)
    if _JS_INFINITY_RE.fullmatch(text):
        return math.inf
    if (m := _JS_RADIX_RE.fullmatch(text)) is not None:
        digits, base = next((m.group(g), b) for g, b in (("hex", 16), ("oct", 8), ("bin", 2)) if m.group(g))
        return float(int(digits, base))
    if _JS_DECIMAL_RE.fullmatch(text):
        return float(text)
    return math.nan


def clamp_limit(limit: Any) -> int:
    """The seed's ``clampGuideLimit``: never trusts the schema.

    A number is used as it is; a string that is not blank goes through JavaScript's ``Number``;
    anything else (missing, ``None``, a boolean, a list) and every non-finite result gives
    ``GUIDES_LIMIT_DEFAULT``. Then floor, and clamp to ``[1, GUIDES_LIMIT_MAX]``.

    ``None``, ``""``, ``" "``, ``"nope"`` → 5; ``0``, ``0.9``, ``-3``, ``1.9`` → 1; ``"8"`` → 8; ``100`` → 10.
    """
    numeric: float
    if isinstance(limit, int | float) and not isinstance(limit, bool):
        try:
            numeric = float(limit)
        except OverflowError:  # an integer too large for a double is Infinity in JavaScript
            numeric = math.inf
    elif isinstance(limit, str) and limit.strip(JS_WHITESPACE) != "":
        numeric = _js_number(limit)
    else:
        numeric = math.nan
    if not math.isfinite(numeric):
        return GUIDES_LIMIT_DEFAULT
    whole = math.floor(numeric)
    return max(1, min(GUIDES_LIMIT_MAX, whole))


@lru_cache(maxsize=1)
def _collator() -> Any:
    import pyuca  # loaded on first use (about 0.2 s): servers without the guides profile never pay it

    return pyuca.Collator()


def locale_key(title: str) -> tuple[int, ...]:
    """Sort key ordering strings as ``a.localeCompare(b)`` does (UCA root collation, tertiary strength)."""
    return _collator().sort_key(title)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Row:
    entry: GuideEntry
    title: str
    excerpt: str
    tags: tuple[str, ...]
    order: tuple[int, ...]


class GuideIndex:
    """The guides, lowercased and with their sort keys computed once, ready to be searched.

    Args:
        entries: the guides in index order (as in ``guides.json``).
    """

    def __init__(self, entries: Sequence[GuideEntry]) -> None:
        self.entries = list(entries)
        self._rows = [
            _Row(e, _fold(e.title), _fold(e.excerpt), tuple(_fold(t) for t in e.tags), locale_key(e.title))
            for e in self.entries
        ]

    def __len__(self) -> int:
        return len(self.entries)

    @staticmethod
    def _score(row: _Row, terms: Sequence[str], normalized_query: str) -> int:
        score = 0
        if len(normalized_query) > 1 and normalized_query in row.title:
            score += TITLE_QUERY_POINTS
        for term in terms:
            if term in row.title:
                score += TITLE_TERM_POINTS
            if any(term in tag for tag in row.tags):
                score += TAG_TERM_POINTS
            if term in row.excerpt:
                score += EXCERPT_TERM_POINTS
        return score

    def search(self, query: str, limit: Any = None) -> list[GuideMatch]:
        """The best guides for ``query``, at most ``clamp_limit(limit)`` of them (see the module doc).

        A blank or one-character query has no tokens and matches nothing.
        """
        terms = tokenize(query)
        normalized_query = " ".join(terms)
        scored = [(self._score(row, terms, normalized_query), i, row) for i, row in enumerate(self._rows)]
        ranked = sorted(((s, i, row) for s, i, row in scored if s > 0), key=lambda x: (-x[0], x[2].order, x[1]))
        return [
            GuideMatch(row.entry.title, row.entry.url, plain(row.entry.excerpt) or row.entry.title, score)
            for score, _, row in ranked[: clamp_limit(limit)]
        ]


def search_guides(entries: Sequence[GuideEntry] | GuideIndex, query: str, limit: Any = None) -> list[GuideMatch]:
    """Search ``entries`` for ``query`` (see :class:`GuideIndex`); builds the index when given a list."""
    index = entries if isinstance(entries, GuideIndex) else GuideIndex(entries)
    return index.search(query, limit)


def format_matches(query: str, matches: Sequence[GuideMatch]) -> str:
    """The seed's ``formatGuideMatches``: the text an agent reads.

    ``No guides matched "<q>".`` when empty; else ``N guide(s) matched "<q>".`` and, per match,
    three lines: ``<n>. <title>``, the url, the summary. ``<q>`` is the query after :func:`plain`.
    """
    shown = plain(query)
    if not matches:
        return f'No guides matched "{shown}".'
    lines = [f'{len(matches)} {"guide" if len(matches) == 1 else "guides"} matched "{shown}".']
    for n, match in enumerate(matches, start=1):
        lines.extend((f"{n}. {match.title}", match.url, match.summary))
    return "\n".join(lines)
