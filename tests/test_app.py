"""The served app through its HTTP API (Gradio's), on loopback, with the echo model."""


import pytest
from gradio_client import Client

from consent import records as consent
from companion import auth


@pytest.fixture
def served(serve_app):
    url, store = serve_app(researcher_password="open sesame")
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    return url, store


def test_researcher_page_is_refused_without_its_password(served):
    url, store = served
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="needs its password"):
        c.predict("", "", "", api_name="/r_rows")
    msg, _ = c.predict("guess", api_name="/r_login")
    assert msg == "wrong researcher password"
    with pytest.raises(Exception, match="needs its password"):
        c.predict(1, api_name="/r_one")
    # a participant chats; the researcher, once in, sees that turn
    p = Client(url, verbose=False)
    p.predict("ana", "ana-pass", api_name="/sign_in")
    chat = p.predict("my sister lives in Porto", "personal", [], api_name="/respond")[0]
    assert chat[-2]["content"][0]["text"] == "You said: my sister lives in Porto"
    msg, _ = c.predict("open sesame", api_name="/r_login")
    assert msg == "Researcher page open."
    rows = c.predict("ana", "", "", api_name="/r_rows")
    assert [r[1:3] for r in rows["data"]] == [["ana", "day1-1"]]


def test_participant_downloads_their_data_and_withdraws(served):
    import json

    url, store = served
    p = Client(url, verbose=False)
    p.predict("ana", "ana-pass", api_name="/sign_in")
    p.predict("my sister lives in Porto", "personal", [], api_name="/respond")
    link = p.predict(api_name="/my_data")
    got = fetch_download(url, link)
    assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
    data = json.loads(got.text)
    assert "my sister lives in Porto" in json.dumps(data)
    assert fetch_download(url, link).status_code == 404  # delivered once, then gone
    out = p.predict(False, api_name="/withdraw")
    assert "erase everything" in out[-3]
    assert store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 2
    out = p.predict(True, api_name="/withdraw")
    told = [x for x in out if isinstance(x, str) and "erased" in x.lower()]
    assert told and "message" in told[0]  # the participant is told what was erased, in counts
    assert store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    with pytest.raises(Exception, match="Sign in first"):
        p.predict(api_name="/my_data")


def fetch_download(url: str, link_markdown: str):
    """Follow the one-time link the app shows for a download."""
    import re

    import httpx

    (path,) = re.findall(r"\((download/[0-9a-f]+)\)", link_markdown)
    return httpx.get(url + path, timeout=30)


def _table(out) -> list[list]:
    return out[0]["data"] if isinstance(out[0], dict) else out[0]


def test_what_i_remember_lists_sources_corrects_deletes_and_stays_private(served):
    from companion.scheduler import consolidate_all

    url, store = served
    consent.accept(store, "bob", pass_hash=auth.hash_passphrase("bob-pass"))
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("I live in Lisbon", "personal", [], api_name="/respond")
    a.predict("please keep it short", "personal", [], api_name="/respond")
    consolidate_all(store)

    out = a.predict(api_name="/mem_view")
    rows = {(r[1], r[2]): r for r in _table(out)}
    claim = rows["profile", "Lives in Lisbon"]
    assert claim[0].startswith("claim:") and claim[4] == "day1-1"  # day1-2 is the companion's reply
    assert rows["file memory", "Lives in Lisbon"][4] == "day1-1"
    cell = next(r for r in rows.values() if r[1] == "preference")
    assert cell[2].startswith("verbosity = terse") and cell[4] == "day1-3"  # brief is the personal default: "keep it short" steps to terse (6da3c5c)
    persona_md, file_md = out[2], out[3]
    assert "residence: Lisbon" in persona_md and "day1-1" in persona_md
    assert "Lives in Lisbon" in file_md and "sources: day1-1" in file_md
    src = a.predict(claim[0], api_name="/mem_sources")
    assert "**day1-1** (you, personal" in src and "I live in Lisbon" in src

    # B sees none of it, and cannot reach A's items by their keys
    b = Client(url, verbose=False)
    b.predict("bob", "bob-pass", api_name="/sign_in")
    out_b = b.predict(api_name="/mem_view")
    assert _table(out_b) == [] and "Lisbon" not in out_b[2] + out_b[3]
    for api in ("/mem_sources", "/mem_delete"):
        with pytest.raises(Exception, match=r"no claim \d+ for participant 'bob'"):
            b.predict(claim[0], api_name=api)
    with pytest.raises(Exception, match="no claim"):
        b.predict(claim[0], "I live in Oslo", api_name="/mem_edit")
    assert "Lives in Lisbon" in [r[2] for r in _table(a.predict(api_name="/mem_view"))]

    # a preference gets a new setting; a wrong one is refused with the settings it could be
    with pytest.raises(Exception, match="settings:"):
        a.predict(cell[0], "loud", api_name="/mem_edit")
    from memory import extract, filememory, ix_attributes

    brief, detailed = (ix_attributes.describe("verbosity", x) for x in ("terse", "detailed"))
    before_edit = filememory.versions(store, "ana")[-1]["version"]
    assert brief in a.predict(before_edit, api_name="/mem_version")
    msg = a.predict(cell[0], "detailed", api_name="/mem_edit")
    assert "from terse to detailed" in msg
    out = a.predict(api_name="/mem_view")
    assert any(r[2].startswith("verbosity = detailed") for r in _table(out))
    assert not any(r[2].startswith("verbosity = terse") for r in _table(out))
    assert detailed in out[3] and brief not in out[3]  # the memory document says the new setting
    # restoring the version before the edit brings the old line back into the document
    msg = a.predict(before_edit, api_name="/mem_restore")
    assert msg.startswith(f"Restored version {before_edit} ")
    assert brief in a.predict(api_name="/mem_view")[3]
    with pytest.raises(Exception, match="no file-memory version 999"):
        a.predict(999, api_name="/mem_restore")

    # a claim gets the participant's wording; then deleting it removes it for good
    msg = a.predict(claim[0], "Lives in Porto since May", api_name="/mem_edit")
    assert "Lives in Porto since May" in msg
    new_claim = next(r for r in _table(a.predict(api_name="/mem_view"))
                     if r[1] == "profile" and r[2] == "Lives in Porto since May")
    assert new_claim[4] == "day1-1"
    assert "Lives in Lisbon" in a.predict(new_claim[0], api_name="/mem_sources")  # earlier value shown
    with pytest.raises(Exception, match="Choose an item"):
        a.predict("everything", api_name="/mem_delete")
    assert "Deleted" in a.predict(new_claim[0], api_name="/mem_delete")
    consolidate_all(store)
    extract.rebuild(store, "ana")  # even derived again from the whole history, day1-1 yields no residence
    out = a.predict(api_name="/mem_view")
    assert not [r for r in _table(out) if "Porto" in r[2] or "Lisbon" in r[2]]
    assert "Porto" not in out[3] and "Lisbon" not in out[3] and "residence" not in out[2]
    a.predict("I really do live in Lisbon", "personal", [], api_name="/respond")  # a new statement: new evidence
    consolidate_all(store)
    out = a.predict(api_name="/mem_view")
    texts = [r[2] for r in _table(out)]
    assert "Lives in Porto since May" not in texts and "Porto" not in out[3]
    # what came back comes from the new message only, not from the deleted day1-1 source
    assert all(r[4] != "day1-1" for r in _table(out) if r[1] == "profile")

    # signed out: the inspector empties and its actions are refused
    a.predict(api_name="/sign_out")
    assert _table(a.predict(api_name="/mem_view")) == []
    with pytest.raises(Exception, match="Sign in first"):
        a.predict(new_claim[0], api_name="/mem_delete")


def _actions(table) -> dict[int, list]:
    return {r[0]: r for r in table["data"]}


def test_held_actions_are_approved_or_rejected_from_the_panel_by_their_owner_only(served):
    from companion import actions

    url, store = served
    consent.accept(store, "bob", pass_hash=auth.hash_passphrase("bob-pass"))
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    chat = a.predict("remind me to call mom tomorrow at 9am", "personal", [], api_name="/respond")[0]
    assert "Waiting for your approval: remind you: call mom" in chat[-2]["content"][0]["text"]
    a.predict("draft a message to Tom saying I will be late", "personal", [], api_name="/respond")
    listed = _actions(a.predict(api_name="/act_view"))
    assert [(r[2].split(" (")[0], r[3]) for r in listed.values()] == [
        ("draft to Tom: “I will be late”", "held"), ("remind you: call mom", "held")]  # newest first
    draft, reminder = listed
    assert [x.id for x in actions.pending(store, "ana")] == [reminder, draft]

    # B sees nothing of A's, and can neither approve nor reject A's actions
    b = Client(url, verbose=False)
    b.predict("bob", "bob-pass", api_name="/sign_in")
    assert _actions(b.predict(api_name="/act_view")) == {}
    for api in ("/act_approve", "/act_reject"):
        with pytest.raises(Exception, match=f"no action {reminder} for this participant"):
            b.predict(reminder, api_name=api)
    assert [x.id for x in actions.pending(store, "ana")] == [reminder, draft]

    # A approves the reminder (it is scheduled) and rejects the draft (it never reaches the outbox)
    msg, table = a.predict(reminder, api_name="/act_approve")
    assert msg.startswith(f"Approved #{reminder}: remind you: call mom") and msg.endswith("(scheduled).")
    assert _actions(table)[reminder][3] == "scheduled" and _actions(table)[draft][3] == "held"
    msg, table = a.predict(draft, api_name="/act_reject")
    assert msg == f"Rejected #{draft}: draft to Tom: “I will be late”. It will not run."
    assert _actions(table)[draft][3] == "rejected"
    assert actions.pending(store, "ana") == [] and actions.outbox(store, "ana") == []
    events = [(e["action_id"], e["event"], e["via"]) for e in actions.events(store, "ana")]
    assert (reminder, "approved", "ui") in events and (draft, "rejected", "ui") in events
    assert actions.violations(store, "ana") == []
    # a resolved action cannot be resolved again; a missing number is refused
    with pytest.raises(Exception, match="not waiting for approval"):
        a.predict(draft, api_name="/act_approve")
    with pytest.raises(Exception, match="Choose an action"):
        a.predict(None, api_name="/act_approve")


def test_an_approved_reminder_gets_its_delivery_job_and_arrives_in_the_chat(serve_app):
    from companion import actions

    url, store = serve_app(scheduled=True)
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("remind me to call mom tomorrow at 9am", "personal", [], api_name="/respond")
    (held,) = actions.pending(store, "ana")
    jobs_before = [r[0] for r in store.conn.execute("SELECT id FROM scheduler_jobs")]
    assert f"action-{held.id}" not in jobs_before  # held: nothing is scheduled before approval
    a.predict(held.id, api_name="/act_approve")
    row = store.conn.execute("SELECT next_run_time FROM scheduler_jobs WHERE id=?", (f"action-{held.id}",)).fetchone()
    due = actions.get(store.conn, "ana", held.id).due_at
    from datetime import datetime

    assert row is not None and row[0] == datetime.fromisoformat(due).timestamp()
    # when it falls due the job writes the reminder into the conversation
    from companion.scheduler import DbJobStore

    job = DbJobStore(store).lookup_job(f"action-{held.id}")
    assert job.func(*job.args) is True
    out = a.predict("ana", "ana-pass", api_name="/sign_in")  # signing in again loads the conversation
    chat = next(x for x in out if isinstance(x, list))
    assert chat[-1]["content"][0]["text"] == "Reminder: call mom."
    assert actions.get(store.conn, "ana", held.id).status == "delivered"


def test_what_i_remember_shows_and_deletes_a_persona_item(served):
    from companion.scheduler import consolidate_all
    from memory import extract

    url, store = served
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("I am a real introvert", "personal", [], api_name="/respond")
    consolidate_all(store)
    out = a.predict(api_name="/mem_view")
    (item,) = [r for r in _table(out) if r[1].startswith("persona")]
    assert item[2].startswith("big_five:extraversion = low") and item[4] == "day1-1"
    assert "extraversion: low" in out[2]
    assert "I am a real introvert" in a.predict(item[0], api_name="/mem_sources")
    with pytest.raises(Exception, match="high"):  # a trait is high or low, and the refusal says so
        a.predict(item[0], "sometimes", api_name="/mem_edit")
    a.predict(item[0], "high", api_name="/mem_edit")  # the participant corrects it
    out = a.predict(api_name="/mem_view")
    (item,) = [r for r in _table(out) if r[1].startswith("persona")]
    assert item[2].startswith("big_five:extraversion = high") and "extraversion: high" in out[2]
    a.predict(item[0], api_name="/mem_delete")
    extract.rebuild(store, "ana")
    out = a.predict(api_name="/mem_view")
    assert not [r for r in _table(out) if r[1].startswith("persona")] and "extraversion" not in out[2]


# The API names scripts and the load test call. Gradio names an event after its handler and
# suffixes repeats in wiring order, so a panel wired out of turn would rename one silently.
PUBLIC_API = {"sign_in", "accept", "decline", "respond", "sign_out", "my_data", "withdraw",
              "act_approve", "act_reject", "act_view", "mem_view", "mem_sources", "mem_edit", "mem_delete",
              "mem_version", "mem_restore", "r_login", "r_choices", "r_rows", "r_one", "r_dump",
              "lambda", "lambda_1", "trial_results"}


def test_the_page_keeps_its_api_names_and_each_name_calls_its_panel(tmp_path):
    from companion import app
    from companion.settings import Settings

    demo = app.build(Settings(home=tmp_path, model="echo"))
    by_name = {d.api_name: d for d in demo.fns.values()}
    assert PUBLIC_API <= set(by_name), sorted(PUBLIC_API - set(by_name))
    # the trial arms: /lambda fixes a gate, /lambda_1 randomizes (tests/test_reliability_isolation.py)
    fix, rand = by_name["lambda"], by_name["lambda_1"]
    assert [t[1] for t in fix.targets] == ["click"] and fix.targets[0][0] != rand.targets[0][0]
    labels = {b._id: getattr(b, "value", None) for b in demo.blocks.values()}
    assert labels[fix.targets[0][0]] == "Fix the first gate"
    assert labels[rand.targets[0][0]] == "Randomize per turn"
    # the chat and the sign-in: the first /respond is the Send button, the first /sign_in the button
    assert labels[by_name["respond"].targets[0][0]] == "Send"
    assert labels[by_name["sign_in"].targets[0][0]] == "Sign in"


def test_a_preference_changed_when_the_memory_document_is_full_holds_and_the_document_keeps_its_line(served):
    from companion.scheduler import consolidate_all
    from memory import filememory, ix_attributes

    url, store = served
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("please give me detailed answers", "personal", [], api_name="/respond")
    consolidate_all(store)
    # the old setting and a new one whose line is longer
    old, new = (ix_attributes.describe("verbosity", x) for x in ("detailed", "terse"))
    assert len(new) > len(old)
    # fill the document to one character under its budget: the longer wording cannot fit
    filler = []
    while True:
        try:
            filler.append(filememory.add(store, "ana", "work", f"note {len(filler)}: " + "y" * 200))
        except filememory.MemoryFull:
            break
    room = filememory.DEFAULT_BUDGET_CHARS - len(filememory.render(store, "ana"))
    assert room > 0
    filememory.replace(store, "ana", filler[0].id, filler[0].text + "z" * (room - 1))
    assert len(filememory.render(store, "ana")) == filememory.DEFAULT_BUDGET_CHARS - 1

    def refused() -> int:
        return store.conn.execute("SELECT count(*) FROM memory_events WHERE participant='ana' "
                                  "AND event='refused_budget'").fetchone()[0]

    refused_before = refused()  # the filling's last line was refused too
    cell = next(r for r in _table(a.predict(api_name="/mem_view")) if r[1] == "preference")
    msg = a.predict(cell[0], "terse", api_name="/mem_edit")
    assert "from detailed to terse" in msg  # the participant's setting holds
    out = a.predict(api_name="/mem_view")
    assert any(r[2].startswith("verbosity = terse") for r in _table(out))
    assert old in out[3] and new not in out[3]  # over budget: the document keeps its line
    assert refused() == refused_before + 1  # and the refusal is logged, not lost


# --- issue 23 item 8: time zone, names without case, drafting only with a model that may draft --

def _sign_up(page, tab, name, passphrase, tz):
    page.call(tab, "sign_in", {"Name": name, "Passphrase": passphrase, "browser-tz": tz})
    return page.call(tab, "accept")


def test_the_time_zone_comes_from_the_browser_at_sign_up_and_can_be_changed(serve_app):
    from companion import actions
    from memory import participants
    from tests.queue_client import Page, Tab

    url, store = serve_app()
    page = Page(url)
    tab = Tab(url)
    r = _sign_up(page, tab, "nora", "nora-pass", "America/New_York")
    assert participants.get(store, "nora")["tz"] == "America/New_York"
    assert any("time zone America/New\\_York" in x for x in r.data if isinstance(x, str))
    assert any("from your browser" in x for x in r.data if isinstance(x, str))
    page.call(tab, "respond", {"msg": "remind me to call mom tomorrow at 9am", "Context": "personal", "chat": []})
    (held,) = actions.pending(store, "nora")
    assert held.payload["when"].endswith("-05:00")  # 9am in New York
    table = page.call(tab, "act_view").data[1]["data"]
    assert "09:00" in table[0][2]
    # moved to Lisbon: the same instant is shown at Lisbon's wall-clock time
    said = page.call(tab, "set_zone", {"account-tz": "Europe/Lisbon"}).data[0]
    assert said.startswith("Your time zone is now Europe/Lisbon")
    assert participants.get(store, "nora")["tz"] == "Europe/Lisbon"
    table = page.call(tab, "act_view").data[1]["data"]
    assert "14:00" in table[0][2] and "09:00" not in table[0][2]
    bad = page.call(tab, "set_zone", {"account-tz": "Mars/Olympus_Mons"})
    assert not bad.success or "Choose a time zone" in bad.data[0]
    assert participants.get(store, "nora")["tz"] == "Europe/Lisbon"
    # a browser that names no zone (or a made-up one): UTC, and the page says so
    other = Tab(url)
    r = _sign_up(page, other, "omar", "omar-pass", "Not/AZone")
    assert participants.get(store, "omar")["tz"] == "UTC"
    assert any("did not say its time zone" in x for x in r.data if isinstance(x, str))


def test_a_name_in_another_case_is_the_same_account(served, home):
    from click.testing import CliRunner

    from companion.cli import main
    from memory import messages, participants
    from memory.store import StoreError

    url, store = served
    for spelling in ("Ana", "ANA", "aNa"):
        c = Client(url, verbose=False)
        out = c.predict(spelling, "ana-pass", api_name="/sign_in")
        who = next(x for x in out if isinstance(x, str) and "Signed in as" in x)
        assert "Signed in as **ana**" in who and "not case-sensitive" in who, who
    c.predict(f"said as {spelling}", "personal", [], api_name="/respond")
    assert participants.names(store) == ["ana"]
    assert "said as aNa" in [m.text for m in messages.read(store, "ana", 99)]
    # a wrong passphrase under another spelling counts against the same account
    g = Client(url, verbose=False)
    said = [g.predict(n, "wrong-guess", api_name="/sign_in")[-1] for n in ("Ana", "ANA", "ana", "AnA", "aNA", "Ana")]
    assert said[:5] == ["Name or passphrase is wrong."] * 5 and said[5].startswith("Too many failed sign-ins")
    # a sign-up under another spelling is refused in words, in the app's consent step and the CLI
    with pytest.raises(StoreError, match="already exists as 'ana': names are not case-sensitive"):
        consent.accept(store, "ANA", pass_hash=auth.hash_passphrase("other-pass"), new=True)
    r = CliRunner().invoke(main, ["consent", "accept", "-p", "Ana", "--passphrase", "other-pass"])
    assert r.exit_code != 0 and "names are not case-sensitive" in r.output
    assert participants.names(store) == ["ana"]


def test_the_annotate_panel_offers_drafting_only_with_a_model_that_may_draft(tmp_path):
    from companion import app
    from companion.settings import Settings

    def draft_button(model):
        demo = app.build(Settings(home=tmp_path / model.replace("/", "-"), model=model))
        comps = demo.config["components"]
        button = next(c for c in comps if c.get("props", {}).get("elem_id") == "an-draft")
        off = [c for c in comps if c.get("props", {}).get("elem_id") == "an-draft-off"]
        return button["props"].get("visible", True), off

    for refused in ("echo", "local/smollm2-135m"):
        visible, off = draft_button(refused)
        assert visible is False and off and "cannot draft" in off[0]["props"]["value"]
    visible, off = draft_button("openai/gpt-4o-mini")
    assert visible is not False and off == []
