"""Normalisation and tokenisation shared by indexing and querying (pure, no I/O)."""

from sleuth.text.analyze import Token, analyze, fold, identifiers, surface_tokens, tokenize, unique
from sleuth.text.query import QUERY_MAX_CHARS, QUERY_MAX_TERMS, ParsedQuery, parse_query

__all__ = [
    "QUERY_MAX_CHARS",
    "QUERY_MAX_TERMS",
    "ParsedQuery",
    "Token",
    "analyze",
    "fold",
    "identifiers",
    "parse_query",
    "surface_tokens",
    "tokenize",
    "unique",
]
