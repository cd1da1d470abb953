"""project_memory_search input checks: every bound of seed 004's schema, errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.errors import QueryError
from sleuth.memory.arguments import DEADLINE_DEFAULT_MS, LIMIT_DEFAULT, MEMORY_LANES, parse_memory_request


def test_defaults() -> None:
    req = parse_memory_request({"query": " storage plan ", "project_id": "demo"})
    assert req.questions[0].query == "storage plan"
    assert (req.limit, req.deadline_ms, req.budget_bytes, req.grouped) == (LIMIT_DEFAULT, DEADLINE_DEFAULT_MS, None,
                                                                          False)
    assert req.filters.lanes == MEMORY_LANES and not req.filters.narrows_documents


def test_grouped_queries_and_filters() -> None:
    req = parse_memory_request({
        "queries": [{"id": "a", "query": "storage", "limit": 3, "query_variants": ["sqlite", "sqlite"]},
                    {"id": "b", "query": "plans"}],
        "limit": 4, "all_projects": True,
        "filters": {"kinds": ["Decision"], "roles": ["plan", "plan"], "source_families": ["code"],
                    "retrieval_lanes": ["bm25", "graph"], "recorded_after": "2026-09-01T00:00:00Z",
                    "recorded_before": "2026-09-30T12:00:00.5+02:00"},
        "response_deadline_ms": 1000, "response_budget_bytes": 1000, "request_id": "r-1",
    })
    assert [(q.id, q.limit, q.variants) for q in req.questions] == [("a", 3, ("sqlite",)), ("b", 4, ())]
    f = req.filters
    assert (f.kinds, f.roles, f.source_families, f.lanes) == (("decision",), ("plan",), ("code",), ("bm25", "graph"))
    assert f.recorded_after_ns == 1_788_220_800_000_000_000
    assert f.recorded_before_ns == 1_790_762_400_500_000_000
    assert (req.deadline_ms, req.budget_bytes, req.request_id, req.all_projects) == (1000, 1000, "r-1", True)


@pytest.mark.parametrize(("args", "message"), [
    ({"project_id": "p"}, "query or queries is required"),
    ({"query": "a", "queries": [{"id": "x", "query": "b"}], "project_id": "p"}, "not both"),
    ({"query": "a", "project_id": "p", "all_projects": True}, "all_projects cannot be combined"),
    ({"query": "a", "include_project_ids": ["q"], "all_projects": True}, "all_projects cannot be combined"),
    ({"query": "a", "project_id": "p", "limit": 0}, "limit must be an integer from 1 to 50; got 0"),
    ({"query": "a", "project_id": "p", "limit": 2.5}, "limit must be an integer"),
    ({"query": "a", "project_id": "p", "limit": True}, "limit must be an integer"),
    ({"query": "a", "project_id": "p", "response_deadline_ms": 999}, "response_deadline_ms must be an integer from"
                                                                        " 1000 to 300000"),
    ({"query": "a", "project_id": "p", "response_deadline_ms": 300_001}, "response_deadline_ms"),
    ({"query": "a", "project_id": "p", "response_budget_bytes": 999}, "response_budget_bytes must be an integer"),
    ({"query": "a", "project_id": "p", "response_budget_bytes": 1_000_001}, "response_budget_bytes"),
    ({"query": "a", "project_id": "p", "query_variants": ["x"] * 20}, "query_variants has 20 items; at most 19"),
    ({"query": "a", "project_id": "p", "query_variants": ["x" * 401]}, "query_variants[0] is 401 characters"),
    ({"query": "a", "project_id": "p", "query_variants": [""]}, "query_variants[0] must not be empty"),
    ({"queries": [], "project_id": "p"}, "queries must hold at least one item"),
    ({"queries": [{"id": "a", "query": "x"}] * 21, "project_id": "p"}, "queries has 21 items; at most 20"),
    ({"queries": [{"id": "a", "query": "x"}, {"id": "a", "query": "y"}], "project_id": "p"}, "queries[1].id 'a'"
                                                                                              " is used twice"),
    ({"queries": [{"id": "a", "query": "x", "limit": 21}], "project_id": "p"}, "queries[0].limit must be an"
                                                                                " integer from 1 to 20"),
    ({"queries": [{"id": "a"}], "project_id": "p"}, "queries[0].query is required"),
    ({"queries": [{"id": "a", "query": "x", "extra": 1}], "project_id": "p"}, "queries[0]: unknown field(s) extra"),
    ({"queries": [{"id": "a", "query": "x" * 401}], "project_id": "p"}, "queries[0].query is 401 characters"),
    ({"queries": [{"id": "a", "query": "x"}], "query_variants": ["y"], "project_id": "p"}, "query_variants goes"
                                                                                            " with query"),
    ({"query": "a", "project_id": "p", "filters": {"roles": ["decision"]}}, "filters.roles[0] must be one of"),
    ({"query": "a", "project_id": "p", "filters": {"source_families": ["web"]}}, "filters.source_families[0]"),
    ({"query": "a", "project_id": "p", "filters": {"retrieval_lanes": ["tfidf"]}}, "filters.retrieval_lanes[0]"),
    ({"query": "a", "project_id": "p", "filters": {"retrieval_lanes": []}}, "must name at least one lane"),
    ({"query": "a", "project_id": "p", "filters": {"kinds": ["x" * 101]}}, "filters.kinds[0] is 101 characters"),
    ({"query": "a", "project_id": "p", "filters": {"recorded_after": "2026-02-30T00:00:00Z"}},
     "filters.recorded_after must be an RFC 3339 date-time"),
    ({"query": "a", "project_id": "p", "filters": {"recorded_after": "2026-09-01"}}, "filters.recorded_after"),
    ({"query": "a", "project_id": "p", "filters": {"recorded_after": "2026-09-02T00:00:00Z",
                                                   "recorded_before": "2026-09-01T00:00:00Z"}}, "is later than"),
    ({"query": "a", "project_id": "p", "filters": {"colour": "red"}}, "filters: unknown field(s) colour"),
    ({"query": "a", "project_id": "p", "filters": "x"}, "filters must be an object"),
    ({"query": "a", "project_id": "p", "request_id": "r" * 201}, "request_id is 201 characters"),
    ({"query": "a", "project_id": "p", "all_projects": "yes"}, "all_projects must be true or false"),
    ({"query": "a", "project_id": "p", "bogus": 1}, "unknown field(s) bogus"),
    ({"query": 5, "project_id": "p"}, "query must be a string, got int"),
])
def test_bad_input_names_the_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(QueryError) as err:
        parse_memory_request(args)
    assert message in str(err.value)


def test_code_identifiers_and_phrases_become_variants() -> None:
    from sleuth.text import auto_variants, parse_query

    text = 'where is open_catalog used by Engine.search or parseQuery() for mRNAs, i.e. the "write lock"'
    assert auto_variants([text]) == ['"write lock"', "open_catalog", "Engine.search", "parseQuery"]
    assert parse_query(text).identifiers == ("open_catalog", "engine.search", "parsequery")
    assert parse_query("expression of mRNAs in iPSC cells").identifiers == ()


def test_dates_beyond_the_catalog_range_are_clamped_or_named() -> None:
    far = parse_memory_request({"query": "x", "project_id": "p",
                                "filters": {"recorded_before": "2300-01-01T00:00:00Z",
                                            "recorded_after": "1600-01-01T00:00:00Z"}}).filters
    assert (far.recorded_after_ns, far.recorded_before_ns) == (-(2**63), 2**63 - 1)
    with pytest.raises(QueryError, match="filters.recorded_after must be a date-time from year 0001 to 9999"):
        parse_memory_request({"query": "x", "project_id": "p", "filters": {"recorded_after": "0000-01-01T00:00:00Z"}})


def test_front_matter_dates_beyond_the_catalog_range_are_problems() -> None:
    from sleuth.ingest.roles import recorded_time

    ns, problem = recorded_time({"date": "2300-01-01"}, 123)
    assert ns == 123 and problem is not None and "2300-01-01" in problem
