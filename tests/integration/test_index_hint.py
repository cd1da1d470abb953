"""`sleuth index content docs` from a parent folder puts the index in content/: the output says
where later commands find it, since a bare `sleuth status` run here would not."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import run_cli


def test_index_output_says_where_other_commands_find_the_index(tmp_path: Path) -> None:
    for name in ("content", "docs"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.md").write_text(f"# {name}\n\nsome words\n", encoding="utf-8")
    env = {"SLEUTH_INDEX_WAIT": "0"}
    out = run_cli("index", "content", "docs", "--project", "p", cwd=tmp_path, env=env).stdout
    target = tmp_path.resolve() / "content" / ".sleuth"
    assert f"other commands find this index from inside {target.parent}, or with --index {target}" in out
    assert run_cli("status", cwd=tmp_path, env=env, check=False).returncode != 0  # what the hint is about
    again = run_cli("index", ".", "--project", "p", cwd=tmp_path / "content", env=env).stdout
    assert "other commands find this index" not in again
    assert run_cli("status", cwd=tmp_path / "content", env=env).returncode == 0
