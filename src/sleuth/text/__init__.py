"""Normalisation and tokenisation shared by indexing and querying (pure, no I/O)."""

from sleuth.text.analyze import (
    Token,
    analyze,
    block_terms,
    fold,
    identifiers,
    is_code_identifier,
    surface_tokens,
    tokenize,
    unique,
)
from sleuth.text.query import (
    QUERY_MAX_CHARS,
    QUERY_MAX_TERMS,
    ParsedQuery,
    auto_variants,
    parse_query,
    quoted_phrases,
)

__all__ = [
    "QUERY_MAX_CHARS",
    "QUERY_MAX_TERMS",
    "ParsedQuery",
    "Token",
    "analyze",
    "auto_variants",
    "block_terms",
    "fold",
    "identifiers",
    "is_code_identifier",
    "parse_query",
    "quoted_phrases",
    "surface_tokens",
    "tokenize",
    "unique",
]
