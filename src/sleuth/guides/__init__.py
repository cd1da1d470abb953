"""Guides (seed 001): a build-time index of guide titles, excerpts and tags, and its search."""

from sleuth.guides.entry import GuideEntry, load_guides, parse_guides, plain
from sleuth.guides.search import GuideMatch, clamp_limit, format_matches, search_guides

__all__ = [
    "GuideEntry",
    "GuideMatch",
    "clamp_limit",
    "format_matches",
    "load_guides",
    "parse_guides",
    "plain",
    "search_guides",
]
