"""In Chromium: a participant's thumbs down with a tag on a reply is stored for that reply, and
the researcher's Trial results panel shows the report of a two-arm trial."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect, sync_playwright

from companion import auth, trials
from companion.turn import turn
from consent import records as consent
from companion.settings import Settings
from memory import feedback

pytestmark = pytest.mark.browser
expect.set_options(timeout=30_000)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
PW = "lab secret"


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("the browser test needs the `chromium` binary on PATH (apt-get install chromium)",
                    pytrace=False)
    return path


def test_thumbs_with_a_tag_and_the_trial_results_panel(serve_app, home):
    chromium = _chromium()
    url, store = serve_app(researcher_password=PW)
    s = Settings(home=home, model="echo", retriever="bm25", recent_window=0)
    for who in ("ana", "ben"):
        consent.accept(store, who, tz="Europe/Berlin")
        trials.randomize(store, who, ["never", "always"], 7, "bm25", "earlier_turns")
        for text in ["my sister Mia lives in Porto", "I told you my sister lives in Porto"]:
            turn(store, who, text, settings=s)
    consent.accept(store, "cleo", tz="Europe/Berlin", pass_hash=auth.hash_passphrase("correct horse battery"))

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url)
            # a participant rates a reply down with the tag "you forgot something I told you"
            page.locator("#signin-name textarea, #signin-name input").fill("cleo")
            page.locator("#signin-pass textarea, #signin-pass input").fill("correct horse battery")
            page.locator("#signin-btn").click()
            box = page.locator("#msg textarea, #msg input")
            expect(box).to_be_visible()
            box.fill("my dog is called Rex")
            page.locator("#send").click()
            bot = page.locator("#chat [data-testid=bot]").filter(has_text="You said: my dog is called Rex")
            expect(bot.first).to_be_visible(timeout=180_000)  # a loaded machine's first turn (see test_browser)
            bot.first.hover()
            page.locator("#chat").get_by_label("Dislike").first.click()
            expect(page.locator("#feedback-msg")).to_contain_text("👎 noted for reply day1-2")
            page.locator("#chat").get_by_role("button", name="Feedback").first.click()
            page.get_by_text("you forgot something I told you", exact=True).first.click()
            expect(page.locator("#feedback-msg")).to_contain_text("(you forgot something I told you)")
            [f] = feedback.current(store, "cleo")
            assert (f.dayid, f.rating, f.tag, f.via) == ("day1-2", -1, "forgot", "app")
            # one row per change: the thumb, then the tag (the page may deliver a click twice; issue 23)
            assert [(h.rating, h.tag) for h in feedback.history(store, "cleo")] == [(-1, None), (-1, "forgot")]

            # the researcher opens the panel
            page.get_by_role("tab", name="Researcher").click()
            page.locator("#r-pass textarea, #r-pass input").fill(PW)
            page.locator("#r-open").click()
            page.locator("#trial-results").get_by_text("Trial results").click()
            page.locator("#tr-go").click()
            report = page.locator("#tr-report")
            # cleo's turn ran the configured arm, in no trial: counted apart, not as an arm (issue 23.7)
            expect(report).to_contain_text("2 participants, 4 turns")
            expect(report).to_contain_text("never/bm25/earlier_turns")
            expect(report).to_contain_text("always/bm25/earlier_turns")
            expect(report).to_contain_text("only 2 participant(s)")
            expect(report).to_contain_text("Outside the trial")
            expect(page.locator("#tr-plots img").first).to_be_visible()
        finally:
            browser.close()
