"""The page of `sleuth ui` in headless Debian chromium: search by keyboard alone, the drawn lane bars
of "why it ranked", the document with its matched blocks marked, the index page, visible focus.
Screenshots are taken and checked (not blank; pixels of the bars, the marks and the focus ring)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sleuth.locks import WriteLock
from sleuth.store.folder import WRITE_LOCK_FILE
from tests.ui.conftest import UiServer, open_page, run_cli, screenshot_image

#: Colours of the page (static/app.js LANE_COLOURS, static/style.css).
LANE_RGB = {"bm25": (0x1F, 0x6F, 0xEB), "index": (0xE3, 0x62, 0x09), "vector": (0x1A, 0x7F, 0x37),
            "rm3": (0xBF, 0x87, 0x00)}
#: Bars narrower than this many CSS pixels are not sampled for their colour (antialiased edges).
COLOUR_SAMPLE_MIN_W_PX = 3
FOCUS_RGB = (0xD1, 0x49, 0x00)
MATCH_BORDER_RGB = (0xE0, 0xA8, 0x00)
#: The bar area of one chart, in CSS pixels (static/app.js BAR_W).
BAR_W_PX = 200
#: How far a sampled pixel may be from the expected colour (per channel; antialiasing, colour profiles).
COLOUR_TOLERANCE = 24
#: A page left waiting for the index page's 2 s poll: a generous safety net, not a measure.
POLL_WAIT_MS = 60_000


def near(pixel: tuple[int, ...], rgb: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(pixel[:3], rgb, strict=True))


def assert_not_blank(image: Any) -> None:
    """A screenshot that shows a page: many colours, and not nearly all one colour."""
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50
    top = max(count for count, _ in colours)
    assert top < 0.97 * image.width * image.height


def active(tab: Any, attribute: str = "id") -> str | None:
    return tab.evaluate(f"document.activeElement && document.activeElement.getAttribute({json.dumps(attribute)})")


def wait_until(tab: Any, expression: str) -> None:
    """Wait until the page's ``expression`` is true (polled with ``evaluate``: the page's
    Content-Security-Policy forbids the string evaluation of ``wait_for_function``)."""
    for _ in range(POLL_WAIT_MS // 50):
        if tab.evaluate(expression):
            return
        tab.wait_for_timeout(50)
    raise AssertionError(f"still false after {POLL_WAIT_MS} ms: {expression}")


def search_by_keyboard(tab: Any, query: str) -> None:
    assert active(tab) == "q"
    tab.keyboard.type(query)
    tab.keyboard.press("Enter")
    wait_until(tab, f"document.getElementById('search-status').textContent.includes({json.dumps(query)} + '”')")


def test_search_and_results_by_keyboard_alone(page: Any, ui_server: UiServer, tmp_path: Path) -> None:
    open_page(page, ui_server.url)
    # Focus order: the search box first (autofocus), then its button, then the filters in reading order.
    order = []
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(active(page))
    assert order == ["search-button", "f-project", "f-kind", "f-role", "f-path", "f-tag"]
    for _ in range(6):
        page.keyboard.press("Shift+Tab")
    search_by_keyboard(page, "zebrafinch")
    assert page.locator(".hit").count() == 3
    ranks = []
    for key in ("ArrowDown", "ArrowDown", "ArrowDown", "ArrowDown", "ArrowUp"):
        page.keyboard.press(key)
        ranks.append(active(page, "data-rank"))
    assert ranks == ["1", "2", "3", "3", "2"]
    second = page.locator(".hit").nth(1).get_attribute("data-doc")
    page.keyboard.press("Enter")  # opens the document of the focused result
    page.wait_for_selector("#doc-view:not([hidden]) .block.matched:focus")
    assert page.locator("#doc-view h2").text_content() == "Lanes"
    focused_block = active(page, "data-block")
    assert focused_block is not None and focused_block.startswith(second)
    page.keyboard.press("Escape")  # back to the results, on the result that was opened
    page.wait_for_selector("#search-view:not([hidden])")
    wait_until(page, f"document.activeElement.dataset.doc === {json.dumps(second)}")
    page.keyboard.press("/")
    assert active(page) == "q"
    page.keyboard.press("ArrowDown")
    assert active(page, "data-rank") == "1"
    image = screenshot_image(page, tmp_path / "keyboard.png")
    assert_not_blank(image)
    # The focused result shows a visible focus ring: its outline (3 px, 2 px outside the box).
    box = page.locator(".hit").first.bounding_box()
    assert near(image.getpixel((int(box["x"] - 3.5), int(box["y"] + box["height"] / 2))), FOCUS_RGB)
    assert near(image.getpixel((int(box["x"] + box["width"] / 2), int(box["y"] - 3.5))), FOCUS_RGB)


def test_the_search_box_shows_its_focus(page: Any, ui_server: UiServer, tmp_path: Path) -> None:
    open_page(page, ui_server.url)
    page.keyboard.press("Tab")  # to the button
    page.keyboard.press("Shift+Tab")  # back to the box, by keyboard
    assert active(page) == "q"
    image = screenshot_image(page, tmp_path / "focus.png")
    box = page.locator("#q").bounding_box()
    assert near(image.getpixel((int(box["x"] - 3.5), int(box["y"] + box["height"] / 2))), FOCUS_RGB)


def test_lane_bars_are_drawn_to_scale(page: Any, ui_server: UiServer, tmp_path: Path) -> None:
    open_page(page, ui_server.url)
    search_by_keyboard(page, "zebrafinch")
    status, body = ui_server.get("/api/search?q=zebrafinch")
    assert status == 200
    largest = max(abs(c["contribution"]) for h in body["hits"] for c in h["explain"])
    image = screenshot_image(page, tmp_path / "lanes.png")
    assert_not_blank(image)
    bars = page.locator(".hit").first.locator("rect.lane-bar")
    expected = {c["lane"]: c for c in body["hits"][0]["explain"]}
    assert bars.count() == len(expected) == 4  # the default lanes: bm25, index, rm3, vector
    for i in range(bars.count()):
        bar = bars.nth(i)
        lane = bar.get_attribute("data-lane")
        box = bar.bounding_box()
        contribution = expected[lane]["contribution"]
        assert bar.get_attribute("data-rank") == str(expected[lane]["rank"])
        assert box["width"] == pytest.approx(max(1.0, contribution / largest * BAR_W_PX), abs=0.6)
        centre = (int(box["x"] + box["width"] / 2), int(box["y"] + box["height"] / 2))
        if box["width"] >= COLOUR_SAMPLE_MIN_W_PX:
            assert near(image.getpixel(centre), LANE_RGB[lane]), (lane, image.getpixel(centre))
    # Every chart lists the lanes in the order they ran; the largest contribution of the page fills
    # the bar area; the chart says each lane's rank.
    for h in range(page.locator(".hit").count()):
        lanes = page.locator(".hit").nth(h).locator("rect.lane-bar")
        assert [lanes.nth(i).get_attribute("data-lane") for i in range(lanes.count())] == body["lanes"]
    widths = sorted(bars.nth(i).bounding_box()["width"] for i in range(bars.count()))
    assert widths[-1] == pytest.approx(BAR_W_PX, abs=0.6)
    label = page.locator(".hit").first.locator("svg.lane-chart").get_attribute("aria-label")
    assert label.startswith("Why it ranked: ") and "bm25: rank 1" in label


def test_the_status_line_says_each_notice_once(page: Any, ui_server: UiServer) -> None:
    """A trial: the page's status line showed the response's notice and then its word notice, which
    the notice begins with: "no word of the query occurs ..." twice in one line."""
    open_page(page, ui_server.url)
    search_by_keyboard(page, "zanzibar quokkas")
    status, body = ui_server.get("/api/search?q=zanzibar+quokkas")
    assert status == 200 and body["word_notice"] and body["notice"].startswith(body["word_notice"])
    line = page.locator("#search-status").text_content()
    assert line.count(body["word_notice"]) == 1 and line.endswith(" — " + body["notice"])


def test_results_show_locations_and_highlighted_passages(page: Any, ui_server: UiServer) -> None:
    open_page(page, ui_server.url + "#/search?q=okapiwombat")
    page.wait_for_selector(".hit")
    hit = page.locator(".hit").first
    assert hit.locator("h3").text_content() == "Retrieval evaluation"
    assert hit.locator(".loc").text_content() == "§ page 2"
    assert hit.locator(".passage mark").first.text_content() == "okapiwombat"
    assert hit.locator(".passage .ploc").first.text_content() == "§ page 2"


def test_the_document_view_marks_matched_blocks(page: Any, ui_server: UiServer, tmp_path: Path) -> None:
    _, body = ui_server.get("/api/search?q=zebrafinch&project=notes")
    hit = body["hits"][0]
    open_page(page, ui_server.url)
    page.evaluate(f"window.location.hash = '#/doc/{hit['doc_id']}?block={','.join(hit['block_ids'])}'")
    page.wait_for_selector(".block.matched:focus")
    matched = page.locator(".block.matched")
    assert matched.count() == len(hit["block_ids"])
    assert page.locator("#doc-matches").text_content() == f"{len(hit['block_ids'])} matched block" + (
        "s" if len(hit["block_ids"]) != 1 else "")
    assert "zebrafinch" in matched.first.text_content()
    assert page.locator(".block:not(.matched)").count() >= 1
    image = screenshot_image(page, tmp_path / "document.png")
    assert_not_blank(image)
    box = matched.first.bounding_box()
    assert near(image.getpixel((int(box["x"] + 1), int(box["y"] + box["height"] / 2))), MATCH_BORDER_RGB)
    unmatched = page.locator(".block:not(.matched)").first.bounding_box()
    assert near(image.getpixel((int(unmatched["x"] + 1), int(unmatched["y"] + unmatched["height"] / 2))),
                (255, 255, 255))


def test_the_index_page_shows_coverage(page: Any, ui_server: UiServer, tmp_path: Path) -> None:
    open_page(page, ui_server.url + "#/index")
    page.wait_for_selector("#count-stale")
    assert page.locator("#count-documents dd").text_content() == "9"
    assert page.locator("#count-skipped dd").text_content() == "1"
    assert page.locator("#count-stale dd").text_content() == "0"
    rows = page.locator("#coverage tbody tr")
    assert [rows.nth(i).locator("td").all_text_contents()[2:5] for i in range(rows.count())] == [
        ["6", "0", "1"], ["1", "0", "0"], ["1", "0", "0"], ["1", "0", "0"]]
    assert page.locator("#skipped-reasons tbody tr td").all_text_contents() == ["cannot parse (failed)", "1"]
    progress = page.locator("#embed-progress")
    assert progress.get_attribute("value") == progress.get_attribute("max")
    assert_not_blank(screenshot_image(page, tmp_path / "index.png"))


def test_the_index_page_follows_a_running_writer(page: Any, ui_server: UiServer, ui_index: Path) -> None:
    lock = WriteLock(ui_index / WRITE_LOCK_FILE, 5.0)
    assert lock.acquire()
    try:
        open_page(page, ui_server.url + "#/index")
        page.wait_for_selector("#writer")
        assert page.locator("#writer").text_content().startswith("Indexing now: process ")
    finally:
        lock.release()
    page.wait_for_selector("#writer", state="detached", timeout=POLL_WAIT_MS)  # the page polls while it runs


def test_a_search_error_is_shown_as_its_sentence(page: Any, ui_server: UiServer) -> None:
    open_page(page, ui_server.url)
    page.route("**/api/search?*", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": "since must be a date"})))
    page.keyboard.type("zebrafinch")
    page.keyboard.press("Enter")
    page.wait_for_selector("#search-status.error")
    assert page.locator("#search-status").text_content() == "since must be a date"
    assert page.locator(".hit").count() == 0


def test_a_project_with_two_roots_shows_which_root(page: Any, ui_server: UiServer) -> None:
    open_page(page, ui_server.url + "#/search?q=marmosetword")
    page.wait_for_selector(".hit >> nth=1")
    assert sorted(page.locator(".hit .path").all_text_contents()) == ["en/guide.md", "ja/guide.md"]


def test_a_query_no_word_of_which_occurs_says_so_once(page: Any, ui_server: UiServer) -> None:
    """A new user's screenshot: the status line said "no word of the query occurs in the searched
    documents ..." twice, from the answer's notice and its word_notice (which the notice holds)."""
    status, body = ui_server.get("/api/search?q=xyzzyplugh")
    assert status == 200 and body["hits"] == []
    assert body["word_notice"].startswith("no word of the query occurs in the searched documents")
    assert body["word_notice"] in body["notice"]
    open_page(page, ui_server.url)
    search_by_keyboard(page, "xyzzyplugh")
    shown = page.locator("#search-status").text_content()
    assert shown.startswith("0 results for “xyzzyplugh” in ")
    assert shown.endswith(f" ms — {body['notice']}")
    assert shown.count("no word of the query occurs") == 1


def test_a_replacement_moved_above_what_it_supersedes_says_so_in_its_chart(page: Any, tmp_path: Path) -> None:
    """A new user's trial: ADR 0002 (superseding 0001) was #1 with "score 0.000" and every lane bar
    +0.000, nothing saying why. Its chart now has a "moved" row (the raise of its score to 0001's)
    and a line naming the record it was moved above."""
    adr = tmp_path / "adr"
    adr.mkdir()
    (adr / "0002-use-postgresql.md").write_text(
        "# 2. Use PostgreSQL\n\nDate: 2020-01-01\n\n## Status\n\nSuperseded by [3. Use SQLite](0003-use-sqlite.md)\n\n"
        "## Context\n\nThe catalog database: PostgreSQL for the catalog database, a catalog server.\n",
        encoding="utf-8")
    (adr / "0003-use-sqlite.md").write_text(
        "# 3. Use SQLite\n\nDate: 2021-06-15\n\n## Status\n\nAccepted\n\nSupersedes [2. Use PostgreSQL]"
        "(0002-use-postgresql.md)\n\n## Context\n\nThe catalog database is one file.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(adr), "--project", "adr", "--index", str(index))
    server = UiServer(index)
    try:
        status, body = server.get("/api/search?q=catalog+database")
        assert status == 200
        new, old = body["hits"]
        assert (new["path"], old["path"]) == ("0003-use-sqlite.md", "0002-use-postgresql.md")
        assert new["score"] == old["score"] > 0 and new["moved_above"] == [old["doc_id"]]
        (moved,) = [c for c in new["explain"] if c["lane"] == "supersedes"]
        assert moved["moved_above"] == old["doc_id"] and moved["contribution"] > 0
        open_page(page, server.url)
        search_by_keyboard(page, "catalog database")
        first = page.locator(".hit").first
        assert first.locator(".why h4").text_content() == f"Why it ranked · score {new['score']:.3f}"
        assert first.locator(".why .moved").text_content() == (
            f"Moved above #2 “2. Use PostgreSQL”, which it supersedes: score raised by {moved['contribution']:.3f}"
            f" to that one's {old['score']:.3f}")
        bar = first.locator("rect.lane-bar[data-lane='supersedes']")
        assert bar.count() == 1 and float(bar.get_attribute("data-contribution")) == moved["contribution"]
        assert "moved" in first.locator("svg.lane-chart text").all_text_contents()
        assert f"above #2 · +{moved['contribution']:.3f}" in first.locator("svg.lane-chart text").all_text_contents()
        label = first.locator("svg.lane-chart").get_attribute("aria-label")
        assert "moved above #2 “2. Use PostgreSQL”, which it supersedes" in label
        assert page.locator(".hit").nth(1).locator(".why .moved").count() == 0
    finally:
        server.stop()
