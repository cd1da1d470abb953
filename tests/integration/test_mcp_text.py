"""The text profile over a real MCP stdio session, without any index (seed 003's envelope)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.mcp_session import envelope_of, session

RATE_DOCS = ["Rate limiting protects APIs", "Authentication guide", "API rate limits"]
DEPLOY_DOCS = ["Production deployment steps", "Development setup guide", "Deployment best practices"]


def test_text_profile_answers_the_seeds_examples(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_documents", {"query": "rate limiting API", "documents": RATE_DOCS, "top_k": 3}),
        ("search_index_query", {"query": "deployment guide", "documents": DEPLOY_DOCS, "top_k": 2}),
        ("search_index_query", {"query": "machine learning",
                                "documents": ["Python ML guide", "Deep learning tutorial"]}),
        ("search_fuzzy", {"query": "pythn", "candidates": ["python", "java", "rust"]}),
        ("search_fuzzy", {"query": "contanerization",
                          "candidates": ["containerization", "configuration", "compilation"], "threshold": 0.7}),
        ("search_documents", {"query": "the and of", "documents": RATE_DOCS}),
        ("search_fuzzy", {"query": "zig", "candidates": []}),
    ]
    out = session(["--tools", "text"], calls, cwd=tmp_path)
    assert list(out["tools"]) == ["search_documents", "search_index_query", "search_fuzzy"]
    for tool in out["tools"].values():
        ann = tool.annotations
        assert (ann.read_only_hint, ann.idempotent_hint, ann.destructive_hint, ann.open_world_hint) == (
            True, True, False, False)
        assert tool.input_schema["additionalProperties"] is False
    docs_schema = out["tools"]["search_documents"].input_schema
    assert docs_schema["required"] == ["query", "documents"] and docs_schema["properties"]["top_k"]["default"] == 5
    assert out["tools"]["search_index_query"].input_schema["properties"]["top_k"]["default"] == 10
    assert out["tools"]["search_fuzzy"].input_schema["properties"]["threshold"]["default"] == 0.6
    payloads = [envelope_of(r) for r in out["results"]]
    assert payloads[0] == {"status": "ok", "query": "rate limiting API", "results": [
        {"doc_id": "2", "score": 1.0, "snippet": "API rate limits", "highlights": ["API rate limits"]},
        {"doc_id": "0", "score": 0.6816, "snippet": "Rate limiting protects APIs",
         "highlights": ["Rate limiting protects APIs"]},
    ]}
    assert payloads[1] == {"status": "ok", "query": "deployment guide", "index_size": 3, "results": [
        {"doc_id": "1", "score": 0.4595, "snippet": "Development setup guide",
         "highlights": ["Development setup guide"]},
        {"doc_id": "0", "score": 0.2867, "snippet": "Production deployment steps",
         "highlights": ["Production deployment steps"]},
    ]}
    assert payloads[2] == {"status": "ok", "query": "machine learning", "index_size": 2, "results": [
        {"doc_id": "1", "score": 0.5774, "snippet": "Deep learning tutorial", "highlights": ["Deep learning tutorial"]},
    ]}
    assert payloads[3] == {"status": "ok", "query": "pythn", "best_match": "python",
                           "matches": [{"candidate": "python", "score": 0.8333}]}
    assert payloads[4] == {"status": "ok", "query": "contanerization", "best_match": "containerization",
                           "matches": [{"candidate": "containerization", "score": 0.9375}]}
    assert payloads[5] == {"status": "ok", "query": "the and of", "results": []}
    assert payloads[6] == {"status": "ok", "query": "zig", "best_match": None, "matches": []}


def test_bad_input_gets_the_error_envelope(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_documents", {"documents": RATE_DOCS}),
        ("search_documents", {"query": "rate"}),
        ("search_documents", {"query": "rate", "documents": "Rate limiting"}),
        ("search_documents", {"query": "rate", "documents": ["ok", 7]}),
        ("search_documents", {"query": "rate", "documents": RATE_DOCS, "top_k": 0}),
        ("search_index_query", {"query": 3, "documents": RATE_DOCS}),
        ("search_index_query", {"query": "rate", "documents": RATE_DOCS, "k": 3}),
        ("search_fuzzy", {"query": "pythn", "candidates": ["python"], "threshold": 1.5}),
        ("search_fuzzy", {"query": "  ", "candidates": ["python"]}),
        ("search_documents", {"query": "rate", "documents": ["x"] * 10_001}),
        ("search_index_query", {"query": "rate", "documents": ["x" * 2_500_000, "y" * 2_500_001]}),
        ("search_fuzzy", {"query": "q", "candidates": ["c" * 1_000_001]}),
    ]
    out = session(["--tools", "text"], calls, cwd=tmp_path)
    errors = [envelope_of(r) for r in out["results"]]
    assert all(set(e) == {"status", "error"} and e["status"] == "error" for e in errors)
    assert [e["error"] for e in errors] == [
        "query is required: a non-blank string",
        "documents is required: an array of strings",
        "documents must be an array of strings, got string",
        "documents[1] must be a string, got int",
        "top_k must be an integer from 1 to 10000; got 0",
        "query must be a string, got int",
        "unknown argument(s) k; search_index_query takes documents, query, top_k",
        "threshold must be a number from 0.0 to 1.0; got 1.5",
        "query is required: a non-blank string",
        "too many documents: 10001; the limit is 10000 per call",
        "documents hold 5000001 characters in all; the limit is 5000000 per call",
        "candidates hold 1000001 characters in all; the limit is 1000000 per call",
    ]
