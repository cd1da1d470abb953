"""Decision records as people write them: the date, status and supersession of adr-tools and MADR
files, read into the same front-matter fields a record with front matter has. Pure functions.

Layouts read (the first lines of the body, before the first section after ``## Status``)::

    adr-tools (npryce/adr-tools)        MADR 2 (adr/madr 2.x)            MADR 3+ / front matter
    # 2. Use PostgreSQL                 # Use PostgreSQL                 ---
                                                                         status: superseded by ADR-0005
    Date: 2020-01-01                    * Status: accepted               date: 2022-01-01
                                        * Date: 2020-01-01               ---
    ## Status                           (or "- Status:", "Status:")
                                                                         # Use PostgreSQL
    Superseded by [5. Use X](0005-x.md)     ## Status  (a section, as
    Supersedes [1. Y](0001-y.md)            Nygard's template has it)

What is found fills the keys the front matter lacks (front matter always wins): ``date`` (an ISO
8601 date: :func:`sleuth.ingest.roles.recorded_time` reads it), ``status`` (lowercased: ``accepted``,
``superseded by [5. Use X](0005-x.md)``, ...), ``supersedes`` and ``superseded_by`` (link targets:
:mod:`sleuth.ingest.links` makes them relations, the graph lane orders superseded records below
their replacements). A target is the markdown link's path, else the record number written
(``ADR-0005``, ``ADR 5``, ``5``), which :class:`sleuth.ingest.links.LinkResolver` matches to the
file numbered so (``0005-x.md``). Both spellings count: "superseded" and adr-tools' older
"superceded". ``Amended by`` / ``Amends`` / ``Clarified by`` lines become ``related`` links.

Only decision records are read so: a document whose kind is ``decision`` (its folder, file name or
front matter say so; :func:`sleuth.ingest.roles.kind_label`), or a numbered file (``0001-*.md``)
with a status line or section (then ``kind: decision`` is added too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

#: How much of the body is searched for the date and status lines, in characters.
DECISION_HEAD_MAX_CHARS = 8_000
#: Longest status kept, in characters.
STATUS_MAX_CHARS = 300

_LINE_FIELD = re.compile(r"^[ \t]*(?:[*+-][ \t]+)?(?:\*\*)?(status|date)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(.+?)[ \t]*$",
                         re.IGNORECASE | re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_NUMBERED = re.compile(r"^(?:adr[-_ ]?)?\d{1,5}[-_ ]")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_RELATION = re.compile(
    r"^(superseded by|superceded by|supersedes|supercedes|amended by|amends|clarified by|clarifies)\b[ \t:]*(.*)$",
    re.IGNORECASE)
_NUMBER_REF = re.compile(r"(?:adr|decision|record)?[-_ #]*0*(\d{1,5})\b", re.IGNORECASE)
_RELATIONS = {"superseded by": "superseded_by", "superceded by": "superseded_by", "supersedes": "supersedes",
              "supercedes": "supersedes"}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt ][0-9:.+\-Zz ]+)?")


def _targets(text: str) -> list[str]:
    """Link targets in a relation's text: markdown link paths, else record numbers (``ADR-0005``)."""
    links = [target for _, target in _MD_LINK.findall(text)]
    if links:
        return links
    return [f"ADR-{int(n):04d}" for n in _NUMBER_REF.findall(text)]


def _status_section(body: str) -> str | None:
    """The text of the ``## Status`` section (any heading level), None when there is none."""
    for match in _HEADING.finditer(body):
        if match.group(1).strip().lower().rstrip(":") == "status":
            start = match.end()
            following = _HEADING.search(body, start)
            return body[start : following.start() if following else len(body)]
    return None


def _read_status(text: str, found: dict[str, Any]) -> None:
    """Status and relations from a status line or section: each line either a relation
    (``Superseded by [5](0005-x.md)``) or, the first other one, the status word(s)."""
    for raw in text.splitlines():
        line = raw.strip().lstrip("*+-").strip()
        if not line:
            continue
        relation = _RELATION.match(line)
        if relation is not None:
            name = relation.group(1).lower()
            key = _RELATIONS.get(name, "related")
            for target in _targets(relation.group(2)):
                found.setdefault(key, [])
                if target not in found[key]:
                    found[key].append(target)
            if key == "superseded_by" and "status" not in found:
                found["status"] = "superseded"
            continue
        if "status" not in found:
            found["status"] = _clean_status(line)


def _clean_status(text: str) -> str:
    """A status for people and filters: lowercased, links reduced to their text, ``superseded``
    for any "superseded by ..." (the replacement is a relation, not part of the status)."""
    status = " ".join(_MD_LINK.sub(r"\1", text).split()).lower().replace("superceded", "superseded")
    if status.startswith("superseded"):
        return "superseded"
    return status[:STATUS_MAX_CHARS]


def _is_decision(rel_path: str, front_matter: Mapping[str, object]) -> bool:
    from sleuth.ingest.roles import kind_label

    return kind_label(rel_path, "markdown", front_matter) == "decision"


def decision_metadata(rel_path: str, body: str, front_matter: Mapping[str, object]) -> tuple[dict[str, Any], list[str]]:
    """The front-matter fields a decision record's body states (see the module docstring), and problems.

    Args:
        rel_path: the file's path relative to its root (forward slashes).
        body: the markdown after the front matter.
        front_matter: the parsed front matter (``{}`` when none); its keys are never overridden.
    Returns:
        ``(fields, problems)``: the keys to add (``date``, ``status``, ``supersedes``,
        ``superseded_by``, ``related``, ``kind``) -- empty for a document that is not a decision
        record -- and readable problems (a ``Date:`` that is not an ISO 8601 date).
    """
    head = body[:DECISION_HEAD_MAX_CHARS]
    section = _status_section(head)
    lines = {m.group(1).lower(): m.group(2) for m in reversed(list(_LINE_FIELD.finditer(head)))}
    numbered = bool(_NUMBERED.match(PurePosixPath(rel_path).name.lower()))
    decision = _is_decision(rel_path, front_matter)
    if not decision and not (numbered and (section is not None or "status" in lines)):
        return {}, []
    found: dict[str, Any] = {}
    problems: list[str] = []
    fm_status = front_matter.get("status")
    if isinstance(fm_status, str) and fm_status.strip():  # MADR 3: status: superseded by ADR-0005
        _read_status(fm_status, found)
        found.pop("status", None)
    if "status" in lines:
        _read_status(lines["status"], found)
    if section is not None:
        _read_status(section, found)
    date = lines.get("date")
    if date is not None:
        match = _ISO_DATE.match(date.strip())
        if match is not None:
            found["date"] = match.group(0).strip()
        else:
            problems.append(f"decision record Date: {date.strip()[:80]!r} is not an ISO 8601 date "
                            "(YYYY-MM-DD); using the file's modification time")
    if not decision:
        found["kind"] = "decision"
    out = {k: v for k, v in found.items() if k not in front_matter
           and not (k == "superseded_by" and "superseded-by" in front_matter)}
    return out, problems


def decision_status(front_matter: Mapping[str, object]) -> str | None:
    """A record's status as written in its (merged) front matter, lowercased; None when it states none."""
    status = front_matter.get("status")
    return _clean_status(status) if isinstance(status, str) and status.strip() else None


__all__ = ["DECISION_HEAD_MAX_CHARS", "STATUS_MAX_CHARS", "decision_metadata", "decision_status"]
