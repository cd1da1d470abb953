"""Turning a user's query into what the lanes search for. Pure; never an engine query syntax.

Quotes, colons, parentheses, asterisks, ``OR``, ``NOT`` and ``-`` are literal text. The one
operator is a balanced pair of double quotes (straight or curly): the quoted words are an exact
phrase that every result must contain. An unbalanced quote is plain text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from sleuth.errors import QueryError
from sleuth.text.analyze import analyze, identifier_spans, surface_tokens, unique

#: Longest query accepted, in code points; longer input gets a QueryError, not a truncation.
QUERY_MAX_CHARS = 4_000
#: At most this many distinct terms are searched (the first ones in query order).
QUERY_MAX_TERMS = 64
#: Parsed queries remembered (the last ones parsed; each at most ``QUERY_MAX_CHARS``).
PARSED_QUERIES_KEPT = 64

_PHRASE_RE = re.compile(r"[\"“”„]([^\"“”„]*)[\"“”„]")


@dataclass(frozen=True)
class ParsedQuery:
    """A query after analysis.

    ``terms``: distinct index terms (stemmed) in query order, at most ``QUERY_MAX_TERMS``.
    ``qtf``: each term's query term frequency (how often the query says it), aligned with
    ``terms``; empty means 1 for every term. The lexical lanes weight a term by it, as BM25 does
    (Robertson & Zaragoza 2009, eq. 3.5 with k3 → ∞: the term's weight is linear in qtf).
    ``phrases``: each quoted phrase as its surface-token sequence (required verbatim).
    ``identifiers``: folded whole code identifiers (``snake_case``, ``os.getenv``, ``openCatalog``;
    see :func:`sleuth.text.analyze.is_code_identifier`) for the exact lane; ``identifier_surfaces``
    the same identifiers as written.
    """

    text: str
    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]
    identifiers: tuple[str, ...]
    identifier_surfaces: tuple[str, ...] = ()
    qtf: tuple[int, ...] = ()

    def weighted_terms(self) -> list[tuple[str, int]]:
        """``[(term, qtf)]`` in query order (qtf 1 for every term when ``qtf`` is empty)."""
        if len(self.qtf) != len(self.terms):
            return [(t, 1) for t in self.terms]
        return list(zip(self.terms, self.qtf, strict=True))

    @property
    def is_empty(self) -> bool:
        """True when nothing in the query can match (only stop words, punctuation, blanks)."""
        return not self.terms and not self.phrases


def parse_query(text: str) -> ParsedQuery:
    """Analyse a user's query with the same tokenizer as indexing.

    Each distinct term is listed once in ``terms`` (the seed's normalisation), with how often the
    query says it in ``qtf``: ``"cell cells cell death"`` → terms ``("cell", "death")``, qtf ``(3, 1)``.

    Raises:
        QueryError: the query is not a string or is longer than ``QUERY_MAX_CHARS``.
    """
    if not isinstance(text, str):
        raise QueryError(f"query must be a string, got {type(text).__name__}")
    text = text.strip()
    if len(text) > QUERY_MAX_CHARS:
        raise QueryError(f"query is {len(text)} characters long; the limit is {QUERY_MAX_CHARS}")
    return _parse(text)


@lru_cache(maxsize=PARSED_QUERIES_KEPT)
def _parse(text: str) -> ParsedQuery:
    """:func:`parse_query` of a stripped text within the length limit (remembered: a search parses
    its query when it checks it and again when it plans its variants)."""
    phrases: list[tuple[str, ...]] = []
    for m in _PHRASE_RE.finditer(text):
        tokens = tuple(surface_tokens(m.group(1)))
        if tokens and tokens not in phrases:
            phrases.append(tokens)
    analysed = analyze(text)
    terms = unique(analysed)[:QUERY_MAX_TERMS]
    counts = Counter(analysed)
    found = identifier_spans(text)[:QUERY_MAX_TERMS]
    return ParsedQuery(
        text=text,
        terms=tuple(terms),
        qtf=tuple(counts[t] for t in terms),
        phrases=tuple(phrases),
        identifiers=tuple(folded for folded, _ in found),
        identifier_surfaces=tuple(surface for _, surface in found),
    )


def quoted_phrases(text: str) -> list[str]:
    """The quoted phrases of ``text`` as written (straight or curly quotes), stripped, in order,
    without repeats: the same pairs of quotes :func:`parse_query` makes required phrases of."""
    return list(dict.fromkeys(p for m in _PHRASE_RE.finditer(text) if (p := " ".join(m.group(1).split()))))


def auto_variants(texts: list[str] | tuple[str, ...]) -> list[str]:
    """Extra query variants found in ``texts`` (seed 004: "exact identifiers and quoted phrases are
    added deterministically"): each quoted phrase of two or more words, with its quotes (so it stays
    required), and each code identifier as written, in order of appearance, without repeats."""
    out: list[str] = []
    for text in texts:
        out.extend(f'"{p}"' for p in quoted_phrases(text) if len(p.split()) > 1)
        out.extend(surface for _, surface in identifier_spans(text))
    return list(dict.fromkeys(out))
