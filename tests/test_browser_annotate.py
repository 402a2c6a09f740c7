"""The annotation panel in a real browser (headless system Chromium through Playwright): the
researcher opens a release, picks a pending probe, sees its recent window, searches the history,
and sets stages A and B, picking the grounding from the history by dayid."""

from __future__ import annotations

import json
import shutil

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.conftest import export_garden_chat

pytestmark = pytest.mark.browser
expect.set_options(timeout=30_000)  # a loaded 2-core machine can take seconds per event

HOSTILE = ('the train <img src="http://127.0.0.1:9/a.png" onerror="alert(1)"> was late '
           '![x](http://127.0.0.1:9/b.png) [click](javascript:alert(1))')
LINES = ["my garden has tomatoes now", "work was long", "I cooked pasta", "the train was late",
         "what grows in my garden again?", "reading a novel"]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _field(page, elem_id):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


def _pick(page, elem_id, value):
    box = page.locator(f"#{elem_id} input").first
    box.click()
    box.fill(value)
    page.locator(f"#{elem_id}").get_by_role("option", name=value, exact=True).click()
    box.press("Escape")  # close the list, or the next dropdown's options sit beside it


def test_annotation_panel_in_the_browser(serve_app, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("the browser test needs the `chromium` binary on PATH", pytrace=False)
    url, store = serve_app(researcher_password="open sesame")
    rel = tmp_path / "release"
    export_garden_chat(store, rel, LINES)  # every message is a probe
    # the recent window of the probe holds a participant's hostile text (issue 22 item 7)
    conv = rel / "U01" / "conversation.jsonl"
    rows = [json.loads(x) for x in conv.read_text(encoding="utf-8").splitlines() if x.strip()]
    row = next(r for r in rows if r["dayid"] == "day1-7")
    row["text"] = HOSTILE
    conv.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2400})
            page.goto(url)
            page.get_by_role("tab", name="Researcher").click()
            _field(page, "r-pass").fill("open sesame")
            page.locator("#r-open").click()
            expect(page.locator("#r-msg")).to_contain_text("Researcher page open.")
            _field(page, "an-folder").fill(str(rel))
            _field(page, "an-who").fill("rita")
            page.locator("#an-load").click()
            expect(page.locator("#an-msg")).to_contain_text("6 probes pending")
            _pick(page, "an-key", "U01/day1-9")
            expect(page.locator("#an-probe")).to_contain_text("what grows in my garden again?")
            expect(page.locator("#an-probe")).to_contain_text("day1-8")  # the recent window
            probe = page.locator("#an-probe")
            expect(probe).to_contain_text('<img src="http://127.0.0.1:9/a.png" onerror="alert(1)">')
            expect(probe).to_contain_text("[click](javascript:alert(1))")
            assert probe.locator("img, a[href], iframe, script").count() == 0
            _field(page, "an-query").fill("tomatoes")
            page.locator("#an-search").click()
            expect(page.locator("#an-history")).to_contain_text("my garden has tomatoes now")
            expect(page.locator("#an-history")).not_to_contain_text("I cooked pasta")

            page.locator("#an-a-locus").get_by_label("episode").check()
            _field(page, "an-a-note").fill("asks what grows in the garden")
            page.locator("#an-a-save").click()
            expect(page.locator("#an-msg")).to_contain_text("Stage A saved and confirmed by rita")
            _pick(page, "an-b-episode", "day1-1")
            _pick(page, "an-b-ground", "day1-1")
            _field(page, "an-b-note").fill("day1-1 names the tomatoes")
            page.locator("#an-b-save").click()
            expect(page.locator("#an-msg")).to_contain_text("Stage B saved and confirmed by rita")
            expect(page.locator("#an-stages")).to_contain_text("'grounding_dayids': ['day1-1']")
        finally:
            browser.close()
