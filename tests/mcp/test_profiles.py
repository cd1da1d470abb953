"""Tool profiles: names, defaults, settings from config.toml and the environment, the tools each registers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sleuth.config import load_serve_settings
from sleuth.errors import ConfigError
from sleuth.guides.build import build_guides, write_guides
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.sdk import add_tools
from sleuth.mcp.server import DEFAULT_PROFILES, PROFILES, build_server, needs_index, parse_profiles
from sleuth.mcp.text_tools import text_tools
from tests.guides.fixture import BASE_URL, write_content


def test_parse_profiles() -> None:
    assert parse_profiles(None) == DEFAULT_PROFILES == ("memory", "project")
    assert parse_profiles("project,memory") == ("memory", "project")
    assert parse_profiles("text, Guides,text") == ("guides", "text")
    assert parse_profiles(["text", "project"]) == ("project", "text")
    assert needs_index(("project",)) and not needs_index(("guides", "text"))


@pytest.mark.parametrize(
    ("names", "message"),
    [("bogus", "unknown tool profile(s) bogus; choose from memory, project, guides, text"),
     ("text,nope,zz", "unknown tool profile(s) nope, zz; choose from memory, project, guides, text"),
     (" , ", "no tool profile given; choose from memory, project, guides, text")],
)
def test_bad_profile_names(names: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_profiles(names)


def tool_names(profiles: tuple[str, ...], context: ServeContext) -> list[str]:
    server = build_server(context, profiles)
    return [t.name for t in anyio.run(server.list_tools)]


def test_stateless_profiles_need_no_index(tmp_path: Path) -> None:
    guides = tmp_path / "guides.json"
    write_guides(build_guides(write_content(tmp_path / "blog"), BASE_URL).guides, guides)
    assert tool_names(("text",), ServeContext()) == ["search_documents", "search_index_query", "search_fuzzy"]
    assert tool_names(("guides", "text"), ServeContext(guides_path=guides))[0] == "search_guides"
    with pytest.raises(ConfigError, match="the guides tool profile needs a guides index: pass --guides FILE"):
        build_server(ServeContext(), ("guides",))
    with pytest.raises(ConfigError, match="the project tool profile needs an index"):
        build_server(ServeContext(), ("project",))
    with pytest.raises(ConfigError, match="the memory tool profile needs an index"):
        build_server(ServeContext(), ("memory",))
    assert set(PROFILES) == {"memory", "project", "guides", "text"}


def test_two_profiles_cannot_define_one_tool() -> None:
    server = build_server(ServeContext(), ("text",))
    with pytest.raises(ConfigError, match="two tool profiles both define the tool search_documents"):
        add_tools(server, text_tools())


def test_serve_settings_from_config_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_TOOLS", raising=False)
    monkeypatch.delenv("SLEUTH_GUIDES", raising=False)
    assert load_serve_settings(None) == load_serve_settings(tmp_path / "none")
    assert load_serve_settings(None).tools is None and load_serve_settings(None).guides is None
    (tmp_path / "config.toml").write_text('tools = ["text", "guides"]\nguides = "g/guides.json"\n', encoding="utf-8")
    settings = load_serve_settings(tmp_path)
    assert settings.tools == ("text", "guides") and settings.guides == tmp_path / "g" / "guides.json"
    monkeypatch.setenv("SLEUTH_TOOLS", "")  # empty: as if unset
    assert load_serve_settings(tmp_path).tools == ("text", "guides")
    monkeypatch.setenv("SLEUTH_TOOLS", "project,text")
    monkeypatch.setenv("SLEUTH_GUIDES", "/abs/guides.json")
    assert load_serve_settings(tmp_path).tools == ("project", "text")
    assert load_serve_settings(tmp_path).guides == Path("/abs/guides.json")


@pytest.mark.parametrize(("toml", "message"), [("tools = 3", "tools must be a list of tool profile names"),
                                               ("tools = [1]", "tools must be a list"),
                                               ("guides = 7", "guides must be the path of a guides.json file"),
                                               ("tools = [", "cannot read")])
def test_bad_serve_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, message: str) -> None:
    monkeypatch.delenv("SLEUTH_TOOLS", raising=False)
    monkeypatch.delenv("SLEUTH_GUIDES", raising=False)
    (tmp_path / "config.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_serve_settings(tmp_path)


def test_the_end_of_a_session_waits_for_the_model_warm_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An attack round's finding: ``sleuth serve </dev/null`` under load died of SIGABRT
    ("terminate called without an active exception"): the process ended while the warm-up thread
    was building onnxruntime's session. The session's end now waits for that thread (a model load
    slowed here by a delay injected into it)."""
    import threading
    import time

    from sleuth.config import Config
    from sleuth.engine import Engine

    started, finished = threading.Event(), threading.Event()

    def slow_embedder(self: Engine) -> None:
        started.set()
        time.sleep(1.0)
        finished.set()

    monkeypatch.setattr(Engine, "embedder", slow_embedder)
    engine = Engine(tmp_path / "idx", Config(model="none"))
    try:
        context = ServeContext(engine=engine)
        build_server(context, ("memory",))
        assert started.wait(30)
        context.close()
        assert finished.is_set()
        assert not any(t.name == "sleuth-warm-up" and t.is_alive() for t in threading.enumerate())
    finally:
        engine.close()
