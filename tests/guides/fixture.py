"""Guides rebuilding seed 001's worked examples (shared by unit and integration tests).

Points each row must score, as the seed explains them:
- "fractional cto": both "Fractional CTO ..." rows 8 + 2 x (5 title + 3 tag + 1 excerpt) = 26 (a
  tie that locale order breaks: "for" before "Rates", though "R" < "f" in code-point order);
  estimate_fractional_cto_cost 18 (an underscore between the words: no +8).
- "vendor": the two vendor rows 8 + 5 + 3 + 1 = 17, tied, "Software ..." before "Vendor ...".
- "zzzz-not-a-guide": search_guides 10 (title "guide" 5, tag "Guides" 3, excerpt "not" and "guide" 2).
Every row has the tag "Pineapples" (3 points for "pineapples"), and six filler rows make twelve,
so every limit clamp shows in the number of matches.
"""

from __future__ import annotations

from pathlib import Path

import yaml

BASE_URL = "https://pineapples.dev/blog/"

#: (slug, front matter) in the order of the files' sorted names.
SEED_GUIDES: list[tuple[str, dict[str, object]]] = [
    ("estimate-fractional-cto-cost-tool", {
        "title": "estimate_fractional_cto_cost: What the Tool Returns",
        "excerpt": "estimate_fractional_cto_cost turns days per month into a fractional CTO cost range.",
        "tags": ["WebMCP", "Fractional CTO", "Pineapples"],
    }),
    ("fractional-cto-roi-business-case-mid-market", {
        "title": "Fractional CTO Rates: What the Seat Returns",
        "excerpt": "Fractional CTO rates depend on the seat, the days, and the scope. "
                   "The return is the decision that gets made, and the spend that does not.",
        "tags": ["Fractional CTO", "Pineapples"],
    }),
    ("fractional-cto-services-mid-market-guide", {
        "title": "Fractional CTO for Mid-Market and PE Portcos",
        "excerpt": "A fractional CTO is the same senior operator week to week. Architecture, vendor, hiring, "
                   "board-ready tech. No full-time hire. Not a rotating bench.",
        "tags": ["Fractional CTO", "Pineapples"],
    }),
    ("search-guides-tool", {
        "title": "search_guides: What the Tool Returns",
        "excerpt": "search_guides searches a build-time JSON index of guide titles, excerpts, and tags. "
                   "It does not fetch the site, and it does not return the article.",
        "tags": ["WebMCP", "Guides", "Pineapples"],
    }),
    ("software-vendor-management", {
        "title": "Software Vendor Management for Non-Technical Executives: "
                 "How to Stop Bleeding Budget on Development Partners",
        "excerpt": "Vendor management \u2014 contracts, reviews and exits \u2013 for executives\nwho do not code.",
        "tags": ["Vendor Management", "Pineapples"],
    }),
    ("vendor-due-diligence", {
        "title": "Vendor Due Diligence for PE and Mid-Market Buyers",
        "excerpt": "What to check in a software vendor before the deal closes.",
        "tags": ["Vendor Due Diligence", "Pineapples"],
        "faq": [{"q": "Is this a nested FAQ?", "a": "It is never part of the index."}],
    }),
    *[
        (f"zz-filler-{n:02d}", {"title": f"Filler {n:02d}", "excerpt": f"Filler essay number {n}.",
                                "tags": ["Pineapples"]})
        for n in range(1, 7)
    ],
]


def write_content(folder: Path) -> Path:
    """Write the fixture guides as markdown files with YAML front matter into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for slug, meta in SEED_GUIDES:
        front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        (folder / f"{slug}.md").write_text(f"---\n{front}---\n\n# {meta['title']}\n\nThe body is never indexed.\n",
                                           encoding="utf-8")
    return folder
