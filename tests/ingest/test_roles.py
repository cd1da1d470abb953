from __future__ import annotations

import datetime as dt

import pytest

from sleuth.ingest.roles import (
    KIND_LABEL_MAX_CHARS,
    ROLES,
    infer_role,
    kind_label,
    recorded_time,
    source_family,
)


def test_roles_are_the_seed_enum() -> None:
    assert ROLES == ("experiment_record", "result", "method", "log", "paper", "plan", "config", "source",
                     "report", "other")


# (rel_path, document kind, expected role, expected kind label): one row per rule of the table.
PATH_RULES = [
    ("papers/attention.pdf", "pdf", "paper", "paper"),
    ("decisions/scan.pdf", "pdf", "paper", "paper"),  # format beats folder for PDFs
    ("src/sleuth/engine.py", "code", "source", "code"),
    ("experiments/train.py", "code", "source", "code"),  # and for code
    ("plans/Makefile", "code", "source", "code"),
    ("out/run.log", "text", "log", "log"),
    ("docs/ADR-0001-use-sqlite.md", "markdown", "report", "decision"),
    ("docs/adr_12.md", "markdown", "report", "decision"),
    ("docs/decisions.md", "markdown", "report", "decision"),
    ("docs/plan.md", "markdown", "plan", "plan"),
    ("docs/plan-q3.md", "markdown", "plan", "plan"),
    ("docs/plans_2025.md", "markdown", "plan", "plan"),
    ("ROADMAP.md", "markdown", "plan", "plan"),
    ("docs/product-roadmap.txt", "text", "plan", "plan"),
    ("notes/exp-12.md", "markdown", "experiment_record", "experiment"),
    ("notes/exp_ablation.md", "markdown", "experiment_record", "experiment"),
    ("exp12-notes.md", "markdown", "experiment_record", "experiment"),
    ("Experiment-log.md", "markdown", "experiment_record", "experiment"),
    ("experiments/exp-3/results.md", "markdown", "result", "experiment"),  # file name beats folder
    ("report.md", "markdown", "report", "document"),
    ("reports-2024.md", "markdown", "report", "document"),
    ("methodology.md", "markdown", "method", "document"),
    ("docs/decisions/0007-graph-lane.md", "markdown", "report", "decision"),
    ("adr/0001.md", "markdown", "report", "decision"),
    ("docs/decision-records/x.md", "markdown", "report", "decision"),
    ("plans/q3.md", "markdown", "plan", "plan"),
    ("roadmap/2025.md", "markdown", "plan", "plan"),
    ("experiments/baseline.md", "markdown", "experiment_record", "experiment"),
    ("runs/42/notes.txt", "text", "experiment_record", "experiment"),
    ("experiments/exp1/config.yaml", "config", "experiment_record", "experiment"),  # folder beats config
    ("experiments/analysis.ipynb", "notebook", "experiment_record", "experiment"),
    ("results/metrics.json", "config", "result", "experiment"),
    ("logs/2024-05-01.md", "markdown", "log", "log"),
    ("reports/weekly.md", "markdown", "report", "document"),
    ("methods/sampling.md", "markdown", "method", "document"),
    ("papers/attention-notes.md", "markdown", "paper", "paper"),
    ("notes/meeting.md", "markdown", "other", "note"),
    ("notes/todo.txt", "text", "other", "note"),
    # a notes folder names prose: a notebook or config there keeps its format's kind and role
    ("mine/notes/churn.ipynb", "notebook", "other", "notebook"),
    ("note/settings.yaml", "config", "config", "config"),
    ("notes/incident-review.pdf", "pdf", "paper", "paper"),
    ("notes/exp-3.ipynb", "notebook", "experiment_record", "experiment"),  # a file name rule still wins
    ("notes/plans/q3.ipynb", "notebook", "plan", "plan"),  # as a deeper folder that is not notes/
    ("plans/experiments/x.md", "markdown", "experiment_record", "experiment"),  # deepest folder wins
    ("config/README.md", "markdown", "config", "document"),
    ("configs/train.yaml", "config", "config", "config"),
    ("pyproject.toml", "config", "config", "config"),
    ("analysis.ipynb", "notebook", "other", "notebook"),
    ("README.md", "markdown", "other", "document"),
    ("docs/guide.txt", "text", "other", "document"),
    ("explain.md", "markdown", "other", "document"),  # "exp" needs a separator or a digit
    ("planets.md", "markdown", "other", "document"),
    ("resultant.md", "markdown", "other", "document"),
    ("reporting/x.md", "markdown", "other", "document"),
    ("bundle.zip/plans/q1.md", "markdown", "plan", "plan"),  # archive members by their inner path
]


@pytest.mark.parametrize(("rel_path", "kind", "role", "label"), PATH_RULES)
def test_role_and_kind_from_path_and_format(rel_path: str, kind: str, role: str, label: str) -> None:
    assert infer_role(rel_path, kind, {}) == role
    assert kind_label(rel_path, kind, {}) == label
    assert role in ROLES


@pytest.mark.parametrize(
    ("front_matter", "role"),
    [
        ({"role": "method"}, "method"),
        ({"role": "Experiment Record"}, "experiment_record"),
        ({"role": "experiment"}, "experiment_record"),
        ({"role": "nonsense", "type": "paper"}, "paper"),  # unknown role: the next key decides
        ({"role": 3}, "plan"),  # not a string: ignored, path decides
        ({"type": "ADR"}, "report"),
        ({"type": "decision"}, "report"),
        ({"type": "note"}, "plan"),  # not a role: path decides
        ({"kind": "results"}, "result"),
        ({"role": "source", "type": "plan"}, "source"),  # role beats type
    ],
)
def test_role_from_front_matter(front_matter: dict[str, object], role: str) -> None:
    assert infer_role("plans/x.md", "markdown", front_matter) == role


@pytest.mark.parametrize(
    ("front_matter", "label"),
    [
        ({"kind": "Decision"}, "decision"),
        ({"type": "ADR"}, "decision"),
        ({"kind": "  Meeting   Notes "}, "note"),
        ({"kind": "experiment_record"}, "experiment"),
        ({"kind": "note", "type": "plan"}, "note"),  # kind beats type
        # One closed vocabulary (issue 17): a kind outside KINDS is ignored and the path decides.
        ({"type": "Retrospective"}, "document"),
        ({"kind": "x" * (KIND_LABEL_MAX_CHARS + 1)}, "document"),
        ({"kind": "x" * KIND_LABEL_MAX_CHARS}, "document"),
        ({"kind": "Result"}, "result"),
        ({"kind": ""}, "document"),
        ({"kind": ["a"]}, "document"),
        ({"role": "plan"}, "document"),  # role: does not set the kind label
    ],
)
def test_kind_label_from_front_matter(front_matter: dict[str, object], label: str) -> None:
    assert kind_label("docs/x.md", "markdown", front_matter) == label


@pytest.mark.parametrize(
    ("kind", "family"),
    [("code", "code"), ("notebook", "code"), ("markdown", "document"), ("text", "document"),
     ("pdf", "document"), ("config", "document")],
)
def test_source_family(kind: str, family: str) -> None:
    assert source_family(kind) == family


MTIME = 1_700_000_000_123_456_789
NS = 1_000_000_000


@pytest.mark.parametrize(
    ("front_matter", "expected"),
    [
        ({"date": "2024-03-01"}, 1_709_251_200 * NS),  # date only: midnight UTC
        ({"date": dt.date(2024, 3, 1)}, 1_709_251_200 * NS),
        ({"date": "2024-03-01T10:00:00Z"}, (1_709_251_200 + 36_000) * NS),
        ({"date": "2024-03-01t10:00:00z"}, (1_709_251_200 + 36_000) * NS),
        ({"date": "2024-03-01 10:00:00+02:00"}, (1_709_251_200 + 28_800) * NS),
        ({"date": "2024-03-01T10:00-0130"}, (1_709_251_200 + 36_000 + 5_400) * NS),
        ({"date": "2024-03-01T10:00:00"}, (1_709_251_200 + 36_000) * NS),  # naive: UTC
        ({"date": "2024-03-01T00:00:00.123456789Z"}, 1_709_251_200 * NS + 123_456_789),
        ({"date": "2024-03-01T00:00:00.5Z"}, 1_709_251_200 * NS + 500_000_000),
        ({"date": dt.datetime(2024, 3, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=-5)))},
         (1_709_251_200 + 54_000) * NS),
        ({"date": dt.datetime(2024, 3, 1, 0, 0, 0, 7)}, 1_709_251_200 * NS + 7_000),
        ({"date": "1969-12-31T23:59:59Z"}, -NS),
        ({"recorded": "2024-03-01", "created": "2020-01-01"}, 1_709_251_200 * NS),
        ({"created": "2024-03-01", "updated": "2025-01-01"}, 1_709_251_200 * NS),
        ({"date": None, "updated": "2024-03-01"}, 1_709_251_200 * NS),  # empty values are absent
        ({"date": "  ", "updated": "2024-03-01"}, 1_709_251_200 * NS),
        ({"title": "x"}, MTIME),
        ({}, MTIME),
    ],
)
def test_recorded_time(front_matter: dict[str, object], expected: int) -> None:
    assert recorded_time(front_matter, MTIME) == (expected, None)


@pytest.mark.parametrize(
    "value",
    ["last week", "2024", 2024, "2024-02-30", "2024-13-01", "2024-03-01T25:00:00Z", "2024-03-01T10:00:00+24:00",
     "01/03/2024", "2024-03", ["2024-03-01"], True],
)
def test_bad_dates_fall_back_to_mtime_with_a_problem(value: object) -> None:
    ns, problem = recorded_time({"date": value, "created": "2024-03-01"}, MTIME)
    assert ns == MTIME
    assert problem == (
        f"front matter date: {value!r} is not an ISO 8601 date or date-time; using the file's modification time"
    )


@pytest.mark.parametrize("value", ["0001-01-01", "9999-12-31", "1677-09-01T23:59:59Z", "2262-05-01"])
def test_dates_outside_the_recorded_range_are_named_so(value: str) -> None:
    """Attack session 31: valid ISO 8601 dates the catalog cannot hold (64-bit nanoseconds) were
    reported as "not an ISO 8601 date"."""
    ns, problem = recorded_time({"date": value}, MTIME)
    assert ns == MTIME
    assert problem == (f"front matter date: {value!r} is outside the dates sleuth records (1677-09-22 to 2262-04-11);"
                       " using the file's modification time")


def test_recorded_time_from_parsed_front_matter() -> None:
    from sleuth.ingest.parsers import parse_document

    doc = parse_document("x.md", "---\ndate: 2024-03-01 10:00:00\nupdated: 2024-03-02T10:00:00+01:00\n---\nBody\n")
    assert recorded_time(doc.front_matter, MTIME) == ((1_709_251_200 + 36_000) * NS, None)


TRICKY_PATHS = (
    "a.md", "docs/ADR-0001-use-x.md", "plans/q3/roadmap.txt", ".bashrc", "notes/.hidden.md", "x/y.", "y.",
    "a//b/results.csv", "./exp1/run.log", "/abs/decisions/x.md", "a/./b/method.md", "a/b/", "a/.", ".", "",
    "Reports/Q1.REPORT.md", "deep/a/b/c/d/experiment-2.ipynb", "logs/..", "a/../plan.md", "exp_3", "v1.2.3/x.tar.gz",
)


def test_path_parts_are_those_of_pathlib() -> None:
    from pathlib import PurePosixPath

    from sleuth.ingest.roles import split_rel_path

    for rel in TRICKY_PATHS:
        path = PurePosixPath(rel)
        assert split_rel_path(rel) == (path.name, path.suffix, path.parts[:-1]), rel


def test_the_fast_path_category_is_that_of_every_rule() -> None:
    from pathlib import PurePosixPath

    from sleuth.ingest.roles import _FOLDER_RULES, _NAME_RULES, _path_category

    def reference(rel: str) -> str | None:  # the rules as written, on pathlib's parts
        path = PurePosixPath(rel.lower())
        stem = path.stem if path.suffix else path.name
        for pattern, category in _NAME_RULES:
            if pattern.search(stem):
                return category
        return next((_FOLDER_RULES[f] for f in reversed(path.parts[:-1]) if f in _FOLDER_RULES), None)

    names = ["adr12", "ADR-7", "adrian", "decision", "decisions.md", "decisionless", "plan", "plans-2", "my-roadmap",
             "exp3", "exp-a", "expert", "experiments_x", "result", "results.tsv", "report.md", "reporter",
             "methodology", "readme", "x.method", "roadmap.", ".plan"]
    for rel in [*TRICKY_PATHS, *names, *(f"runs/logs/{n}" for n in names), *(f"{n}/z.md" for n in names)]:
        assert _path_category(rel) == reference(rel), rel
