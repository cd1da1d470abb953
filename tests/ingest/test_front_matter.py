"""Front matter under limits: an alias bomb, deep nesting or a huge block costs nothing, and real
front matter reads as PyYAML's safe loader reads it."""

from __future__ import annotations

import tarfile

import pytest
import yaml

from sleuth.ingest.front_matter import (
    FRONT_MATTER_MAX_CHARS,
    FRONT_MATTER_MAX_DEPTH,
    FrontMatterLimit,
    expanded_size,
    load_toml,
    load_yaml,
)
from sleuth.ingest.parsers import parse_markdown
from tests.integration.conftest import HUGO_TAR


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """The classic alias bomb: each anchor a list of ``width`` aliases to the one before (width^levels values)."""
    lines = [f"a0: &a0 [{','.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once() -> None:
    bomb = billion_laughs()
    assert len(bomb) < 420  # 9^9 = 387 million values in some 400 bytes
    with pytest.raises(FrontMatterLimit, match="more than 10000 values with aliases expanded"):
        load_yaml(bomb)
    page = f"---\n{bomb}title: Bomb\n---\n# Heading\n\nThe body is still indexed.\n"
    doc = parse_markdown("bomb.md", page)
    assert doc.front_matter == {} and doc.title == "Heading"
    assert doc.problems == ["front matter: not read, over a limit: more than 10000 values with aliases expanded"]
    assert [b.text for b in doc.blocks] == ["# Heading\n\nThe body is still indexed."]


def test_too_many_aliases_recursion_depth_and_length() -> None:
    many = "a: &a x\n" + "".join(f"k{i}: *a\n" for i in range(101))
    with pytest.raises(FrontMatterLimit, match="more than 100 aliases"):
        load_yaml(many)
    with pytest.raises(FrontMatterLimit, match="recursive alias"):
        load_yaml("a: &a [1, *a]\n")
    deep = "[" * (FRONT_MATTER_MAX_DEPTH + 1) + "]" * (FRONT_MATTER_MAX_DEPTH + 1)
    with pytest.raises(FrontMatterLimit, match="nested deeper than 32 levels"):
        load_yaml(deep)
    # depth reached only through aliases: each level refers to the one before
    chained = "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 40))
    with pytest.raises(FrontMatterLimit, match="nested deeper"):
        load_yaml(chained)
    with pytest.raises(FrontMatterLimit, match="more than the 65536 character limit"):
        load_yaml("k: " + "v" * FRONT_MATTER_MAX_CHARS)
    with pytest.raises(FrontMatterLimit, match="nested deeper"):
        load_toml("a = " + "[" * 5000 + "]" * 5000)


def test_toml_front_matter_has_the_yaml_limits() -> None:
    """Attack session 31: TOML front matter had only the length limit. Dotted keys nest a table a
    level for two characters and tomllib builds them without recursion, so ``a.a.a....b = 1`` (900
    levels, 1.8 KB) left the page out of the index ("parser failed: RecursionError" while the
    front matter was turned into JSON), and arrays 33 to ~900 levels deep, or 30,000 values, were
    read whole. Now the same depth and value limits as YAML's apply: the page is indexed without
    its front matter and the reason is listed."""
    for fm, reason in (("a." * 900 + "b = 1", "nested deeper than 32 levels"),
                       ("a = " + "[" * 31 + "1" + "]" * 31, "nested deeper than 32 levels"),
                       ("a = [" + "1, " * 9998 + "]", "more than 10000 values")):
        with pytest.raises(FrontMatterLimit) as raised:
            load_toml(fm)
        assert str(raised.value) == reason
        doc = parse_markdown("page.md", f"+++\n{fm}\n+++\n# Heading\n\nThe body.\n")
        assert doc.front_matter == {} and doc.problems == [f"front matter: not read, over a limit: {reason}"]
        assert doc.text.endswith("# Heading\n\nThe body.\n")
    # one level and one value fewer: read, as YAML reads its equivalent
    nested: object = 1
    for _ in range(30):
        nested = [nested]
    assert load_toml("a = " + "[" * 30 + "1" + "]" * 30) == {"a": nested}
    assert load_toml("a = [" + "1, " * 9997 + "]") == {"a": [1] * 9997}
    assert load_yaml("a: [" + "1, " * 9997 + "]") == {"a": [1] * 9997}
    with pytest.raises(FrontMatterLimit):
        load_yaml("a: [" + "1, " * 9998 + "]")


def test_shared_values_within_limits_are_read() -> None:
    assert load_yaml("base: &b {lang: en, tags: [a, b]}\npage: *b\n") == {
        "base": {"lang": "en", "tags": ["a", "b"]}, "page": {"lang": "en", "tags": ["a", "b"]}}
    assert load_yaml("") is None
    node = yaml.compose(billion_laughs(4, 3))
    # the mapping, its 4 keys, and lists of 3 values: a0 = 1 + 3, a1 = 1 + 3 * 4, a2 = 1 + 3 * 13, a3 = 1 + 3 * 40
    assert expanded_size(node) == 1 + 4 + (1 + 3) + (1 + 3 * 4) + (1 + 3 * 13) + (1 + 3 * 40)


def test_real_front_matter_reads_as_the_safe_loader_reads_it() -> None:
    """Every page of the Hugo docs: the bounded loader gives exactly what yaml.safe_load gives."""
    checked = 0
    with tarfile.open(HUGO_TAR) as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".md"):
                continue
            text = tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
            if not text.startswith("---\n"):
                continue
            fm = text[4 : text.index("\n---", 4)]
            assert load_yaml(fm) == yaml.safe_load(fm), member.name
            checked += 1
    assert checked > 900


def test_wider_bombs_are_refused_too() -> None:
    """However it is shaped, a bomb is refused by a count (its expansion is never built)."""
    for levels, width, reason in ((9, 9, "values with aliases expanded"), (30, 3, "values with aliases expanded"),
                                  (9, 40, "more than 100 aliases")):
        with pytest.raises(FrontMatterLimit, match=reason):
            load_yaml(billion_laughs(levels, width))
