"""One row of the guides index (``guides.json``) and the text clean-up the seed applies to it.

``guides.json`` is a JSON array of objects ``{"title", "excerpt", "tags", "url"}``, one per guide,
written by ``sleuth guides build`` (:mod:`sleuth.guides.build`) and read by the ``guides`` tool
profile. Only :func:`load_guides` touches the file system.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sleuth.errors import ConfigError

#: JavaScript's whitespace (``\s``, ``trim()``: WhiteSpace and LineTerminator), which the seed collapses
#: and trims. Python's ``\s`` differs in a few code points (it has U+001C..U+001F, lacks U+FEFF).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WHITESPACE_RUN_RE = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def plain(text: str) -> str:
    """The seed's ``plain()`` / ``oneLineSummary()``: one line of text.

    U+2014 (em dash) becomes ``" - "``, U+2013 (en dash) ``"-"``; then every run of whitespace
    (newlines included) becomes one space and the ends are trimmed.
    """
    text = text.replace("\u2014", " - ").replace("\u2013", "-")
    return _JS_WHITESPACE_RUN_RE.sub(" ", text).strip(JS_WHITESPACE)


class GuideEntry(BaseModel):
    """One guide: what the search sees and what a match returns. Nothing of the article body."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    title: str = Field(min_length=1, description="The guide's title (one line).")
    excerpt: str = Field(min_length=1, description="Its excerpt from the front matter (one line).")
    tags: list[str] = Field(default_factory=list, description="Its tags; may be empty.")
    url: str = Field(min_length=1, description="Absolute URL of the guide: base URL + file slug.")


def parse_guides(data: Any, source: str = "guides index") -> list[GuideEntry]:
    """Validate the decoded JSON of a guides index.

    Args:
        data: the decoded ``guides.json`` (must be a list of objects).
        source: how to name the file in error messages.
    Raises:
        ConfigError: not a list, or an entry without a title, excerpt or url (the entry's
            position, counted from 1, is named).
    """
    if not isinstance(data, list):
        raise ConfigError(f"{source}: expected a JSON array of guides, got {type(data).__name__}")
    entries: list[GuideEntry] = []
    for position, row in enumerate(data, start=1):
        try:
            entries.append(GuideEntry.model_validate(row))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'entry'}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(f"{source}: guide {position} is invalid ({problems})") from None
    return entries


def load_guides(path: Path) -> list[GuideEntry]:
    """Read and validate a ``guides.json`` file.

    Raises:
        ConfigError: the file is missing, unreadable, not JSON, or holds an invalid entry.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"guides index not found: {path} (build one with `sleuth guides build`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read guides index {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"guides index {path} is not valid JSON: {exc}") from None
    except RecursionError:  # arrays or objects nested past the decoder's recursion limit
        raise ConfigError(f"guides index {path} is not valid JSON: arrays or objects nested too deeply") from None
    return parse_guides(data, str(path))
