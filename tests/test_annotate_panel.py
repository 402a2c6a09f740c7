"""The annotation panel of the researcher tab, through the app's HTTP API (echo model, loopback)."""

import json

import pytest
from gradio_client import Client

from tests.conftest import export_garden_chat

LINES = ["my garden has tomatoes now", "work was long", "I cooked pasta", "the train was late",
         "what did I say grows in my garden?", "reading a novel"]


@pytest.fixture
def pending(serve_app, tmp_path):
    url, store = serve_app(researcher_password="open sesame")
    rel = tmp_path / "release"
    export_garden_chat(store, rel, LINES)  # every message is a probe
    return url, rel


def test_panel_refuses_without_the_researcher_password(pending):
    url, rel = pending
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="needs its password"):
        c.predict(str(rel), "rita", api_name="/an_load")


def test_panel_annotates_a_probe_stage_by_stage_and_finalizes(pending):
    url, rel = pending
    c = Client(url, verbose=False)
    c.predict("open sesame", api_name="/r_login")
    _, msg = c.predict(str(rel), "rita", api_name="/an_load")
    assert msg.startswith("6 probes pending")
    key = "U01/day1-9"  # "what did I say grows in my garden?"; its window is day1-7, day1-8
    head, hist, *_ = c.predict(str(rel), key, "rita", "", api_name="/an_pick")
    assert "what did I say grows in my garden?" in head and "`day1-8`" in head and "`day1-1`" not in head
    found = c.predict(str(rel), key, "garden", api_name="/an_search")
    assert [r[0] for r in found["data"]] == ["day1-1", "day1-2"]

    say = lambda stage, *args: c.predict(str(rel), key, "rita", *args, api_name=f"/an_save_{stage}")[0]  # noqa: E731
    assert say("B", ["day1-1"], [], ["day1-1"], "no", "n").startswith("Refused")  # A comes first
    assert "saved" in say("A", "episode", "asks what grows in the garden")
    with pytest.raises(Exception, match="not in the list of choices"):  # refs are picked from the history only
        say("B", ["day1-7"], [], ["day1-7"], "no", "on screen")
    assert "neither episode refs" in say("B", ["day1-1"], [], ["day1-3"], "no", "grounding not among the refs")
    assert "saved" in say("B", ["day1-1"], [], ["day1-1"], "no", "day1-1 says tomatoes")
    assert "saved" in say("C", "intermediate", "event_recall", "one earlier message answers it", "rule")
    assert "saved" in say("D", "Tomatoes, you said.", "from day1-1 only")
    _, stages = c.predict(str(rel), key, "rita", True, "checks pass", api_name="/an_save_E")
    assert "E (final check), confirmed by rita" in stages
    out = c.predict(str(rel), "rita", api_name="/an_finalize")
    assert out.startswith("1 probes finalized (1 scoreable)")
    row = next(json.loads(x) for x in (rel / "U01/chat_gold.jsonl").read_text().splitlines()
               if json.loads(x)["probe_dayid"] == "day1-9")
    assert row["scoreable"] and row["grounding_dayids"] == ["day1-1"] and row["trace"]["B"]["note"] == "day1-1 says tomatoes"


def test_a_hidden_draft_button_called_by_its_api_name_drafts_nothing_with_a_refused_model(pending):
    """Issue 23 item 8, the class: the panel does not offer drafting with the echo model (nor the
    embedded one), and its event, still served, refuses by name when called directly."""
    url, rel = pending
    c = Client(url, verbose=False)
    c.predict("open sesame", api_name="/r_login")
    c.predict(str(rel), "rita", api_name="/an_load")
    before = {p: p.read_bytes() for p in rel.rglob("*") if p.is_file()}
    msg, stages = c.predict(str(rel), "U01/day1-9", "rita", "A", api_name="/an_draft")
    assert msg.startswith("Refused") and "cannot draft" in msg, msg
    assert "DRAFT" not in stages
    assert {p: p.read_bytes() for p in rel.rglob("*") if p.is_file()} == before  # nothing written
