"""The project project_memory_search searches when a call names none, for a remote caller
(``per_caller``, as ``sleuth serve --http`` runs it): the configured ``default_project`` only when
the caller may see it; otherwise it is passed over and never named (found by an attack round: alice,
of project alpha only, read "project not found or access denied: beta"). A real index of three projects."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import QueryError
from sleuth.mcp.access import CURRENT_CALLER, Caller
from sleuth.mcp.memory_tools import MemoryTools


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    base = tmp_path_factory.mktemp("projects")
    eng = Engine(base / "idx", Config(model="none"))
    for project in ("alpha", "beta", "gamma"):
        (base / project).mkdir()
        (base / project / "notes.md").write_text(f"# {project} lighthouse\n\nThe {project} lighthouse log.\n")
        eng.index([base / project], project=project)
    (base / "idx" / "config.toml").write_text('default_project = "beta"\n', encoding="utf-8")
    yield eng
    eng.close()


def default_for(engine: Engine, projects: set[str]) -> str:
    """``default_project()`` as a remote caller of ``projects`` gets it."""
    token = CURRENT_CALLER.set(Caller("alice", frozenset(projects), frozenset({"read"})))
    try:
        return MemoryTools(engine, per_caller=True).default_project()
    finally:
        CURRENT_CALLER.reset(token)


def test_a_caller_who_may_see_the_default_gets_it(engine: Engine) -> None:
    assert default_for(engine, {"beta"}) == "beta"
    assert default_for(engine, {"alpha", "beta"}) == "beta"


def test_a_hidden_default_falls_back_to_the_callers_only_project(engine: Engine) -> None:
    assert default_for(engine, {"alpha"}) == "alpha"


def test_a_hidden_default_is_not_named_when_the_caller_must_choose(engine: Engine) -> None:
    with pytest.raises(QueryError) as caught:
        default_for(engine, {"alpha", "gamma"})
    assert str(caught.value) == ("project_id is required: no project_id given and the default project is not"
                                 " available to you; your projects: alpha, gamma; pass one, or all_projects: true")
    with pytest.raises(QueryError) as caught:
        default_for(engine, set())
    assert str(caught.value) == ("project_id is required: no project_id given and the default project is not"
                                 " available to you; you may search no project")
    assert "beta" not in str(caught.value)


def test_the_tool_searches_the_callers_project_when_the_default_is_hidden(engine: Engine) -> None:
    token = CURRENT_CALLER.set(Caller("alice", frozenset({"alpha"}), frozenset({"read"})))
    try:
        result = asyncio.run(MemoryTools(engine, per_caller=True).project_memory_search(query="lighthouse"))
    finally:
        CURRENT_CALLER.reset(token)
    assert not result.is_error
    payload = result.structured_content
    assert payload is not None and payload["meta"]["projects"] == ["alpha"]
    assert [r["title"] for r in payload["results"]] == ["alpha lighthouse"]
