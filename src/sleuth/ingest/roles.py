"""What a document is: its role (the seed's enum), its kind label, its source family and the time it
records. Read from front matter when given, else inferred from path and format. Pure functions.

Inference, first hit wins (role: :func:`infer_role`; kind: :func:`kind_label`)::

    rule                                                         | role              | kind
    -------------------------------------------------------------+-------------------+-----------
    front matter (see each function)                             | role:/type:/kind: | kind:/type:
    format: PDF                                                  | paper             | paper
    format: code (.py, .ts, Makefile, ...)                       | source            | code
    format: *.log                                                | log               | log
    file name: ADR-0001-*, adr_12, decision, decisions-*         | report (decision) | decision
    file name: plan, plan-*, plans_*, *roadmap*                  | plan              | plan
    file name: exp-*, exp_*, exp12*, experiment*                 | experiment_record | experiment
    file name: result, results-*                                 | result            | experiment
    file name: report, reports-*                                 | report            | document
    file name: method* (methods, methodology)                    | method            | document
    folder (deepest first): decisions/ decision/ adr/ adrs/      | report (decision) | decision
        decision-records/ decision_records/                      |                   |
    folder: plans/ plan/ planning/ roadmap/ roadmaps/            | plan              | plan
    folder: experiments/ experiment/ exps/ exp/ runs/            | experiment_record | experiment
    folder: results/ result/                                     | result            | experiment
    folder: logs/ log/                                           | log               | log
    folder: reports/ report/                                     | report            | document
    folder: methods/ method/ protocols/                          | method            | document
    folder: papers/ paper/ literature/                           | paper             | paper
    folder: notes/ note/ (prose: markdown, text, ...)            | other             | note
    folder: configs/ config/ conf/                               | config            | (by format)
    format: config (json, yaml, toml, ini, ...)                  | config            | config
    format: notebook                                             | other             | notebook
    anything else (markdown, text)                               | other             | document

File names are matched on the lowercased name without its last extension; folders on each folder
name of the path, lowercased. Format beats path for PDFs, code and logs (``experiments/train.py`` is
``source``), path beats format for notebooks and configs (``results/metrics.json`` is a ``result``),
except in a notes folder: ``note`` is a kind of prose, and ``notes/`` is a common name for any folder
of one's own files, so a notebook or config there keeps its format's kind and role
(``notes/churn.ipynb`` is a ``notebook``, as ``analysis/churn.ipynb`` is, and ``--kind notebook``
finds both; ``notes/settings.yaml`` is a ``config``). A folder that says what the document records
(``experiments/``, ``results/``, ``plans/``, ...) still beats a notebook's or config's format.

Decisions get role ``report``: the seed's role enum has no decision, and a decision record (ADR:
context, decision, consequences) is a written account of a conclusion reached, which is what a
report is; it is not a procedure (``method``) nor future work (``plan``). Decisions stay apart from
other reports through their kind label ``decision``, which is what counts and filters them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

ROLES: tuple[str, ...] = (
    "experiment_record",
    "result",
    "method",
    "log",
    "paper",
    "plan",
    "config",
    "source",
    "report",
    "other",
)
"""The roles of the seed's ``filters.roles`` enum, exactly."""

DECISION_ROLE = "report"
"""Role of decision records (ADRs); see the module docstring for why."""

SOURCE_FAMILIES: tuple[str, ...] = ("document", "code", "graph")
"""The seed's ``filters.source_families`` enum; ``graph`` is for graph nodes that are not files."""

KINDS: tuple[str, ...] = (
    "document", "note", "paper", "decision", "plan", "experiment", "result", "log", "code", "notebook", "config",
)
"""Every document kind, one vocabulary for the CLI (``--kind``), the Python API (``Hit.kind``,
``SearchFilters.kinds``) and MCP (``kind`` of results, the ``filters.kinds`` enum). The file format a
kind was read from (markdown, notebook, code, text, pdf, config) is ``Hit.format``."""

ENTITY_KIND = "entity"
"""The kind of graph entities (nodes that are not files); with :data:`KINDS`, what ``kinds`` filters take."""

FILTER_KINDS: tuple[str, ...] = (*KINDS, ENTITY_KIND)
"""What ``kinds`` filters accept: every document kind and ``entity``."""

KIND_LABEL_MAX_CHARS = 100
"""Longest front-matter ``kind:``/``type:`` value read as a kind (the seed's filter limit)."""

RECORDED_TIME_KEYS: tuple[str, ...] = ("date", "recorded", "created", "updated")
"""Front-matter keys read by :func:`recorded_time`, in order; the first one present is used."""

# Front-matter role/type/kind values (normalised: lowercase, "-" and spaces as "_") -> role.
ROLE_ALIASES: dict[str, str] = {
    **{role: role for role in ROLES},
    "experiment": "experiment_record", "experiments": "experiment_record", "exp": "experiment_record",
    "run": "experiment_record", "experiment_log": "experiment_record",
    "results": "result", "finding": "result", "findings": "result", "outcome": "result",
    "methods": "method", "methodology": "method", "protocol": "method", "procedure": "method",
    "logs": "log", "journal": "log",
    "papers": "paper", "article": "paper", "publication": "paper", "preprint": "paper",
    "plans": "plan", "roadmap": "plan", "proposal": "plan",
    "configuration": "config", "settings": "config",
    "code": "source", "src": "source",
    "reports": "report", "summary": "report",
    "decision": DECISION_ROLE, "decisions": DECISION_ROLE, "adr": DECISION_ROLE,
    "decision_record": DECISION_ROLE,
}
"""Front-matter values accepted for a role, after normalisation (lowercase, ``-``/spaces as ``_``)."""

KIND_ALIASES: dict[str, str] = {
    "adr": "decision", "decision record": "decision", "decision-record": "decision",
    "decision_record": "decision", "decisions": "decision",
    "experiment_record": "experiment", "experiment-record": "experiment", "experiment record": "experiment",
    "experiments": "experiment", "exp": "experiment",
    "plans": "plan", "roadmap": "plan",
    "notes": "note",
    "papers": "paper", "article": "paper", "publication": "paper", "preprint": "paper",
    "meeting notes": "note", "meeting note": "note", "journal": "log", "source": "code",
    "experiment_log": "experiment", "results": "result",
    **{kind: kind for kind in KINDS},
}
"""Front-matter kind values (lowercased, whitespace collapsed) that name a kind of :data:`KINDS`."""

# Categories found from path: name -> (role, kind label or None to fall back to the format's).
_CATEGORIES: dict[str, tuple[str, str | None]] = {
    "decision": (DECISION_ROLE, "decision"),
    "plan": ("plan", "plan"),
    "experiment": ("experiment_record", "experiment"),
    "result": ("result", "experiment"),
    "log": ("log", "log"),
    "report": ("report", "document"),
    "method": ("method", "document"),
    "paper": ("paper", "paper"),
    "note": ("other", "note"),
    "config": ("config", None),
}

_NAME_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), category)
    for pattern, category in (
        (r"^adr[-_ ]?\d+", "decision"),
        (r"^decisions?([-_ .]|$)", "decision"),
        (r"^plans?([-_ .]|$)", "plan"),
        (r"roadmap", "plan"),
        (r"^exp([-_ ]|\d)", "experiment"),
        (r"^experiments?([-_ .]|$)", "experiment"),
        (r"^results?([-_ .]|$)", "result"),
        (r"^reports?([-_ .]|$)", "report"),
        (r"^method", "method"),
    )
)

_FOLDER_RULES: dict[str, str] = {
    **dict.fromkeys(("decisions", "decision", "adr", "adrs", "decision-records", "decision_records"), "decision"),
    **dict.fromkeys(("plans", "plan", "planning", "roadmap", "roadmaps"), "plan"),
    **dict.fromkeys(("experiments", "experiment", "exps", "exp", "runs"), "experiment"),
    **dict.fromkeys(("results", "result"), "result"),
    **dict.fromkeys(("logs", "log"), "log"),
    **dict.fromkeys(("reports", "report"), "report"),
    **dict.fromkeys(("methods", "method", "protocols"), "method"),
    **dict.fromkeys(("papers", "paper", "literature"), "paper"),
    **dict.fromkeys(("notes", "note"), "note"),
    **dict.fromkeys(("configs", "config", "conf"), "config"),
}

# Format rules that beat the path: (document kind or file suffix) -> (role, kind label).
_FORMAT_FIRST: tuple[tuple[str, str, str], ...] = (
    ("kind", "pdf", "paper"),
    ("kind", "code", "source"),
    ("suffix", ".log", "log"),
)
_FORMAT_LABELS: dict[str, str] = {"pdf": "paper", "code": "code", "notebook": "notebook", "config": "config"}
#: Path categories that name prose only: a document of a format with a kind of its own (notebook,
#: config; PDFs and code beat every path already) gets its format's kind and role there instead.
_PROSE_CATEGORIES = frozenset({"note"})


def _normalize(value: str) -> str:
    return re.sub(r"[\s-]+", "_", value.strip().lower())


def split_rel_path(rel_path: str) -> tuple[str, str, tuple[str, ...]]:
    """``(name, suffix, folders)`` of a relative path as :class:`pathlib.PurePosixPath` gives them
    (``name``, ``suffix``, ``parts[:-1]``), by string operations when the path is plain (no empty,
    ``.`` or leading ``/`` part), which is what the walker and the archive reader give."""
    if "//" in rel_path or rel_path.startswith(("/", "./")) or rel_path.endswith(("/", "/.")) or "/./" in rel_path \
            or rel_path in ("", "."):
        path = PurePosixPath(rel_path)
        return path.name, path.suffix, path.parts[:-1]
    folders, _, name = rel_path.rpartition("/")
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""
    return name, suffix, tuple(folders.split("/")) if folders else ()


#: What a file name's stem starts with (or holds) when one of _NAME_RULES can match it.
_NAME_RULE_PREFIXES = ("adr", "decision", "plan", "exp", "result", "report", "method")
_NAME_RULE_INFIX = "roadmap"


def _format_first(rel_path: str, kind: str) -> str | None:
    """The role decided by format alone (PDF, code, ``.log``), else None."""
    suffix = split_rel_path(rel_path)[1].lower()
    for what, value, role in _FORMAT_FIRST:
        if (what == "kind" and kind == value) or (what == "suffix" and suffix == value):
            return role
    return None


def _path_category(rel_path: str, kind: str | None = None) -> str | None:
    """The category a path's file name, else its deepest matching folder, names; None if none does,
    or if it names prose (:data:`_PROSE_CATEGORIES`) and ``kind`` (the document's format) has a kind
    label of its own (notebook, config)."""
    category = _named_category(rel_path)
    if category in _PROSE_CATEGORIES and kind in _FORMAT_LABELS:
        return None
    return category


def _named_category(rel_path: str) -> str | None:
    """The category a path's file name, else its deepest matching folder, names; None if none does."""
    name, suffix, folders = split_rel_path(rel_path.lower())
    stem = name[: -len(suffix)] if suffix else name
    if stem.startswith(_NAME_RULE_PREFIXES) or _NAME_RULE_INFIX in stem:  # else no rule can match
        for pattern, category in _NAME_RULES:
            if pattern.search(stem):
                return category
    for folder in reversed(folders):
        if folder in _FOLDER_RULES:
            return _FOLDER_RULES[folder]
    return None


def infer_role(rel_path: str, kind: str, front_matter: Mapping[str, object]) -> str:
    """The document's role, one of :data:`ROLES`.

    ``rel_path``: path relative to its root, forward slashes; ``kind``: the document kind
    (``markdown``, ``notebook``, ``code``, ``text``, ``pdf``, ``config``); ``front_matter``: parsed
    front matter (``{}`` when none).

    Front matter first: ``role:``, then ``type:``, then ``kind:``, each a string matched after
    lowercasing (``-`` and spaces read as ``_``) against :data:`ROLES` and :data:`ROLE_ALIASES`
    (``role: experiment`` is ``experiment_record``, ``type: ADR`` is ``report``). A value that is
    not a known role is ignored and the next rule applies. Else the table of the module docstring.
    Never raises.
    """
    for key in ("role", "type", "kind"):
        value = front_matter.get(key)
        if isinstance(value, str) and _normalize(value) in ROLE_ALIASES:
            return ROLE_ALIASES[_normalize(value)]
    role = _format_first(rel_path, kind)
    if role is not None:
        return role
    category = _path_category(rel_path, kind)
    if category is not None:
        return _CATEGORIES[category][0]
    return "config" if kind == "config" else "other"


def kind_label(rel_path: str, kind: str, front_matter: Mapping[str, object]) -> str:
    """The document's kind, one of :data:`KINDS` (what ``kinds`` filters match).

    Front matter ``kind:``, else ``type:``: a string, lowercased with whitespace collapsed, that is
    a kind or one of its spellings in :data:`KIND_ALIASES` (``type: ADR`` gives ``decision``,
    ``kind: Meeting Notes`` gives ``note``); any other value is ignored (the vocabulary is closed,
    so that filters can list it). Else one of :data:`KINDS` by the table of the module docstring.
    Never raises.
    """
    for key in ("kind", "type"):
        value = front_matter.get(key)
        if isinstance(value, str):
            label = " ".join(value.split()).lower()
            if 0 < len(label) <= KIND_LABEL_MAX_CHARS and label in KIND_ALIASES:
                return KIND_ALIASES[label]
    role = _format_first(rel_path, kind)
    if role is not None:
        return {"paper": "paper", "source": "code", "log": "log"}[role]
    category = _path_category(rel_path, kind)
    if category is not None and _CATEGORIES[category][1] is not None:
        return str(_CATEGORIES[category][1])
    return _FORMAT_LABELS.get(kind, "document")


def source_family(kind: str) -> str:
    """``"code"`` for document kinds ``code`` and ``notebook``, else ``"document"``.

    Notebooks count as code: they are executable source that lives with a codebase, and their
    rendered text is mostly fenced code cells. Configs count as documents (as the seed's roles
    keep ``config`` apart from ``source``). ``"graph"`` is never returned: it is the family of graph
    nodes that are not files, which the graph lane creates.
    """
    return "code" if kind in ("code", "notebook") else "document"


# --------------------------------------------------------------------------- recorded time

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|[+-]\d{2}:?\d{2})?)?"
)


def _to_ns(moment: dt.datetime) -> int:
    """Nanoseconds since the epoch of an aware datetime, exactly (integer arithmetic)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def parse_time_ns(value: object) -> int | None:
    """Nanoseconds since the epoch of a date, datetime or ISO 8601 / RFC 3339 string; None if not one.

    Naive values are UTC; string fractions of a second keep up to nanosecond precision.
    """
    if isinstance(value, dt.datetime):
        return _to_ns(value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return _to_ns(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC))
    if not isinstance(value, str):
        return None
    match = _DATE_TIME.fullmatch(value.strip().upper())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    tz = dt.UTC
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        hours, minutes = int(offset[1:3]), int(offset[-2:])
        if hours > 23 or minutes > 59:
            return None
        tz = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
    try:
        moment = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                             int(second or 0), tzinfo=tz)
    except ValueError:  # month 13, February 30, hour 24, ...
        return None
    return _to_ns(moment) + int((fraction or "0")[:9].ljust(9, "0"))


#: Nanoseconds in a day (a date alone as an upper bound reaches the last of them).
_DAY_NS = 86_400 * 1_000_000_000


#: The recorded times the catalog can store: 64-bit signed nanoseconds since the epoch (about
#: 1677-09-21 to 2262-04-11).
RECORDED_NS_MIN = -(2**63)
RECORDED_NS_MAX = 2**63 - 1


def clamp_recorded_ns(ns: int) -> int:
    """``ns`` (nanoseconds since the epoch) clamped to what the catalog stores
    (:data:`RECORDED_NS_MIN` to :data:`RECORDED_NS_MAX`): a search bound beyond that range holds
    every record on its side, so the clamped bound selects the same records."""
    return max(RECORDED_NS_MIN, min(RECORDED_NS_MAX, ns))


def recorded_at_text(ns: int, from_file: bool) -> str | None:
    """The recorded time ``ns`` (nanoseconds since the epoch) as RFC 3339 UTC to the second
    (``1970-01-01T00:00:00Z``), or None when the document records no time.

    A document read from a file (``from_file``: it has a root) always has one, its date or its
    modification time, so 0 is the epoch itself (a reproducible build's, the Nix store's or an
    extracted archive's mtime) and a negative value a date before 1970. A record given as text
    (no root, ``sleuth eval``'s corpora) has none unless its front matter dates it: 0 stands for
    that. Never raises for a value the catalog stores (:data:`RECORDED_NS_MIN` to
    :data:`RECORDED_NS_MAX`).
    """
    if ns == 0 and not from_file:
        return None
    return ns_to_rfc3339(ns)


def ns_to_rfc3339(ns: int) -> str:
    """``ns`` (nanoseconds since the epoch, negative before 1970) as RFC 3339 UTC to the second,
    ``2026-12-06T21:27:42Z``, the year in four digits; the fraction of a second dropped."""
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=ns // 1000)
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%SZ")


def time_bound_ns(text: str, end_of_day: bool = False) -> int | None:
    """A ``--since`` / ``--until`` bound (the CLI's and the page's): a date (``2024-03-01``) or an
    ISO 8601 / RFC 3339 date-time (``2024-03-01T10:00``, ``2024-03-01 10:00:30Z``,
    ``...+02:00``; no zone: UTC) as nanoseconds since the epoch; None when it is neither. A date
    alone with ``end_of_day`` (an upper bound) means the last nanosecond of that UTC day. Years
    0001 to 9999 are taken, clamped to the catalog's range (:func:`clamp_recorded_ns`), as MCP's
    ``filters.recorded_after`` / ``recorded_before`` are."""
    text = text.strip()
    ns = parse_time_ns(text)
    if ns is not None and end_of_day and len(text) == 10:
        ns += _DAY_NS - 1
    return None if ns is None else clamp_recorded_ns(ns)


def recorded_time(front_matter: Mapping[str, object], mtime_ns: int) -> tuple[int, str | None]:
    """When the document was recorded, as ``(nanoseconds since the epoch, problem or None)``.

    Read from the first of :data:`RECORDED_TIME_KEYS` present in ``front_matter`` with a value other
    than None or an empty string. Accepted values: ``datetime.date`` / ``datetime.datetime`` objects
    (as YAML gives them) and strings in ISO 8601 / RFC 3339 form: ``2024-03-01`` (a date-only value
    is midnight UTC), ``2024-03-01T10:00:00Z``, ``2024-03-01 10:00:00+02:00``, fractions of a
    second allowed (kept to the nanosecond); a value without a UTC offset is taken as UTC. Without any of those keys the
    result is ``(mtime_ns, None)``. A present value that is not such a date (e.g. ``"last week"``,
    ``2024``, ``"2024-02-30"``) gives ``(mtime_ns, problem)`` where ``problem`` names the key and the
    value, for the index report. Never raises.
    """
    for key in RECORDED_TIME_KEYS:
        value = front_matter.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        ns = parse_time_ns(value)
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        if ns is not None and not RECORDED_NS_MIN <= ns <= RECORDED_NS_MAX:
            # outside what the catalog stores (64-bit nanoseconds: RECORDED_NS_MIN, RECORDED_NS_MAX)
            return mtime_ns, (f"front matter {key}: {shown} is outside the dates sleuth records (1677-09-22"
                              " to 2262-04-11); using the file's modification time")
        if ns is None:
            return mtime_ns, (
                f"front matter {key}: {shown} is not an ISO 8601 date or date-time; "
                "using the file's modification time"
            )
        return ns, None
    return mtime_ns, None


__all__ = [
    "DECISION_ROLE",
    "ENTITY_KIND",
    "FILTER_KINDS",
    "KINDS",
    "KIND_ALIASES",
    "KIND_LABEL_MAX_CHARS",
    "RECORDED_TIME_KEYS",
    "ROLES",
    "ROLE_ALIASES",
    "SOURCE_FAMILIES",
    "infer_role",
    "kind_label",
    "parse_time_ns",
    "recorded_time",
    "source_family",
]
