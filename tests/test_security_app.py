"""Issue 13: each attack on the app, the session or the store, performed as the attacker did it
(through the served app with gradio_client, or raw HTTP), and what the person attacked notices.
Every test here failed on the code before the fix (see the commit that added it)."""

from __future__ import annotations

import json
import logging
import os
import re
import stat

import httpx
import pytest
from gradio_client import Client

from companion import auth, trialpanel
from consent import downloads, erasure, records as consent
from memory import messages, participants
from memory.embeddings import HashEmbedder
from memory.store import Store
from tests.test_app import fetch_download


@pytest.fixture
def served(serve_app):
    url, store = serve_app(embedder=HashEmbedder(), researcher_password="open sesame")
    return url, store


def client(url: str, **kw) -> Client:
    return Client(url, verbose=False, **kw)


def chat_text(chat) -> list[str]:
    out = []
    for m in chat:
        content = m["content"]
        out.append(content if isinstance(content, str) else " ".join(
            c.get("text", "") for c in content if isinstance(c, dict)))
    return out


# --- 1. account takeover through the consent screen ---------------------------------------------

def test_a_session_left_at_the_consent_screen_cannot_become_the_owner_who_registers_the_name(served):
    url, store = served
    x = client(url)
    x.predict("bob", "xxxx-guess", api_name="/sign_in")  # a new name: X stops at the consent screen
    owner = client(url)
    owner.predict("bob", "bob-real-pass", api_name="/sign_in")
    owner.predict(api_name="/accept")
    owner.predict("my bank pin is 4321", "personal", [], api_name="/respond")

    out = x.predict(api_name="/accept")  # X now clicks "I accept"
    assert "already taken" in out[-1]
    with pytest.raises(Exception, match="Sign in first"):
        x.predict("hello", "personal", [], api_name="/respond")
    with pytest.raises(Exception, match="Sign in first"):
        x.predict(api_name="/my_data")
    # the owner's account is untouched: one consent record, their passphrase, their messages only
    assert store.conn.execute("SELECT count(*) FROM consent_records WHERE participant='bob'").fetchone()[0] == 1
    assert auth.verify("bob-real-pass", participants.get(store, "bob")["pass_hash"])
    assert [m.text for m in messages.read(store, "bob", 99) if m.sender == "user"] == ["my bank pin is 4321"]


def test_consent_accept_refuses_a_sign_up_for_a_name_that_exists_by_now(store):
    consent.accept(store, "bob", pass_hash=auth.hash_passphrase("bob-real-pass"), new=True)
    with pytest.raises(consent.NameTaken, match="already taken"):
        consent.accept(store, "bob", pass_hash=auth.hash_passphrase("attacker"), new=True)
    # an acceptance for an account checked earlier is refused once that account is gone
    checked = participants.get(store, "bob")
    consent.withdraw(store, "bob")
    consent.accept(store, "bob", pass_hash=auth.hash_passphrase("newcomer"), new=True)
    with pytest.raises(consent.IdentityChanged, match="sign in again"):
        consent.accept(store, "bob", verified=(checked["uid"], checked["pass_hash"]))
    assert store.conn.execute("SELECT count(*) FROM consent_records WHERE participant='bob'").fetchone()[0] == 1


def test_cli_consent_accept_does_not_join_an_account_registered_after_its_check(home, monkeypatch):
    from click.testing import CliRunner

    from companion.cli import access, main

    real_check = access.check_participant

    def owner_registers_meanwhile(settings, participant, *args):
        checked = real_check(settings, participant, *args)  # the name is free at the check
        s = Store(home)
        consent.accept(s, participant, pass_hash=auth.hash_passphrase("bob-real-pass"), new=True)
        s.close()
        return checked

    monkeypatch.setattr(access, "check_participant", owner_registers_meanwhile)
    r = CliRunner().invoke(main, ["consent", "accept", "-p", "bob", "--passphrase", "attacker-pass"])
    assert r.exit_code != 0 and "already taken" in r.output
    s = Store(home)
    assert s.conn.execute("SELECT count(*) FROM consent_records WHERE participant='bob'").fetchone()[0] == 1
    assert auth.verify("bob-real-pass", participants.get(s, "bob")["pass_hash"])
    s.close()


# --- 4. a session survives withdrawal and reads the next owner of the name ----------------------

def test_a_tab_left_open_after_withdrawal_cannot_read_or_act_for_the_next_owner_of_the_name(served):
    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    tab1, tab2 = client(url), client(url)
    tab1.predict("ana", "ana-pass", api_name="/sign_in")
    tab2.predict("ana", "ana-pass", api_name="/sign_in")
    out = tab1.predict(True, api_name="/withdraw")
    assert out[-2] == "" and out[-1] == ""  # the sign-in form is emptied (name, passphrase)
    newcomer = client(url)
    newcomer.predict("ana", "another-pass", api_name="/sign_in")
    newcomer.predict(api_name="/accept")
    newcomer.predict("the newcomer's secret", "personal", [], api_name="/respond")

    with pytest.raises(Exception, match="session has ended"):
        tab2.predict(api_name="/my_data")
    with pytest.raises(Exception, match="Sign in first"):  # ended once, then simply signed out
        tab2.predict("posting as ana", "personal", [], api_name="/respond")
    table = tab2.predict(api_name="/mem_view")[0]
    assert (table["data"] if isinstance(table, dict) else table) in ([], [["", "", "", "", ""]])
    texts = [m.text for m in messages.read(store, "ana", 99)]
    assert "posting as ana" not in texts and "the newcomer's secret" in texts


# --- 5. downloads outlive withdrawal and are fetchable without signing in ------------------------

def _files_containing(root: str, needle: bytes) -> list[str]:
    hits = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                if os.path.isfile(p) and os.path.getsize(p) < 5_000_000 and needle in open(p, "rb").read():
                    hits.append(p)
            except OSError:
                pass
    return hits


def test_downloads_are_private_fetched_once_and_erased_with_the_participant(served, tmp_path):
    import tempfile

    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = client(url)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    import uuid

    marker = f"marker-{uuid.uuid4().hex} lives on my street"  # made now: no file holds it beforehand
    a.predict(marker, "personal", [], api_name="/respond")

    link = a.predict(api_name="/my_data")
    (staged,) = [p for p in (store.data_dir / downloads.DIR).rglob("*") if p.is_file()]
    assert stat.S_IMODE(staged.stat().st_mode) == 0o600
    assert stat.S_IMODE(staged.parent.stat().st_mode) == 0o700
    # nothing with the text in the shared temporary directory (Gradio's cache lives there)
    leaked = [p for p in _files_containing(tempfile.gettempdir(), marker.encode())
              if not p.startswith(str(store.data_dir))]
    assert leaked == []
    # Gradio's file route does not serve the staged file by its path
    r = httpx.get(f"{url}gradio_api/file={staged}", timeout=30)
    assert r.status_code in (403, 404) and marker not in r.text

    # withdrawal before the link is used: the link is dead and the file is gone
    a.predict(True, api_name="/withdraw")
    assert fetch_download(url, link).status_code == 404
    assert not staged.exists()
    assert _files_containing(str(store.data_dir), marker.encode()) == []


def test_the_researcher_export_is_a_one_time_link_and_withdrawal_removes_it(served):
    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = client(url)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("I grow tomatoes", "personal", [], api_name="/respond")
    r = client(url)
    r.predict("open sesame", api_name="/r_login")
    link = r.predict("", "", "", api_name="/r_dump")
    got = fetch_download(url, link)
    assert got.status_code == 200 and '"participant": "ana"' in got.text
    assert fetch_download(url, link).status_code == 404
    link = r.predict("", "", "", api_name="/r_dump")  # prepared again, not fetched; then ana withdraws
    a.predict(True, api_name="/withdraw")
    assert fetch_download(url, link).status_code == 404


# --- 14. anonymous uploads ---------------------------------------------------------------------

def test_anonymous_uploads_are_refused(served):
    url, _ = served
    r = httpx.post(f"{url}gradio_api/upload", files={"files": ("big.bin", b"x" * (1 << 20))}, timeout=30)
    assert r.status_code == 413


# --- 7. researcher password guessing with only the stored credential ----------------------------

def test_researcher_guessing_is_limited_with_only_the_stored_credential(serve_app, home):
    url, _ = serve_app(embedder=HashEmbedder())  # started without --researcher-password
    auth.set_researcher_password(home, "the-real-one")
    c = client(url)
    said = [c.predict(f"guess-{i}", api_name="/r_login")[0] for i in range(6)]
    assert said[:5] == ["wrong researcher password"] * 5
    assert said[5].startswith("Too many failed attempts")
    # the right password is refused too while the block lasts (no guess can get through)
    assert c.predict("the-real-one", api_name="/r_login")[0].startswith("Too many failed attempts")


# --- 9. X-Forwarded-For ------------------------------------------------------------------------

def _call(url: str, api: str, data: list, headers: dict | None = None) -> list:
    r = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data}, headers=headers or {}, timeout=30)
    r.raise_for_status()
    event = r.json()["event_id"]
    body = httpx.get(f"{url}gradio_api/call/{api}/{event}", timeout=60).text
    m = re.search(r"event: complete\ndata: (.*)", body)
    assert m, body
    return json.loads(m.group(1))


def test_spoofed_forwarded_addresses_count_as_the_real_client(served):
    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    said = [_call(url, "sign_in", ["ana", "wrong-guess", None], {"X-Forwarded-For": f"10.0.0.{i}"})[-1]
            for i in range(6)]
    # all six come from one socket: the sixth meets the per-address limit (before the fix each
    # spoofed address had its own count, and 30 of them locked the name for everyone)
    assert said[:5] == ["Name or passphrase is wrong."] * 5
    assert said[5].startswith("Too many failed sign-ins")


def test_forwarded_addresses_are_believed_from_a_configured_proxy(serve_app):
    url, store = serve_app(embedder=HashEmbedder(), trusted_proxies="127.0.0.1")
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    said = [_call(url, "sign_in", ["ana", "wrong-guess", None], {"X-Forwarded-For": f"10.0.0.{i}"})[-1]
            for i in range(6)]
    assert said == ["Name or passphrase is wrong."] * 6  # six clients behind the proxy, one try each


# --- 8. file modes ------------------------------------------------------------------------------

def test_a_world_readable_data_directory_is_closed_at_start_with_a_message(home, caplog):
    s = Store(home)
    s.close()
    os.chmod(home, 0o755)
    os.chmod(home / "companion.db", 0o644)
    auth.set_researcher_password(home, "the-real-one")
    os.chmod(home / "researcher.scrypt", 0o644)
    (home / "notes.txt").write_text("not companion's")  # left alone: the 0700 directory covers it
    os.chmod(home / "notes.txt", 0o644)
    with caplog.at_level(logging.WARNING, logger="memory.store"):
        s = Store(home)
    s.close()
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    for f in home.iterdir():
        if f.is_file() and f.name != "notes.txt":
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert stat.S_IMODE(os.stat(home / "notes.txt").st_mode) == 0o644
    assert "readable by other accounts" in caplog.text and "companion.db 0644 -> 0600" in caplog.text


def test_a_new_data_directory_is_private_from_the_first_write(tmp_path):
    d = tmp_path / "fresh"
    s = Store(d)
    consent.accept(s, "ana")
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    made = [f for f in d.iterdir() if f.name.startswith("companion.db")]
    assert {f.name for f in made} >= {"companion.db", "companion.db-wal"}
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in made)
    s.close()


# --- 10. a kill between the erasure commit and VACUUM -------------------------------------------

def _bytes_on_disk(d) -> bytes:
    return b"".join(f.read_bytes() for f in d.iterdir() if f.name.startswith("companion.db"))


def test_compaction_interrupted_by_a_kill_is_finished_at_the_next_start(home, tmp_path):
    from companion.turn import turn
    from companion.settings import Settings

    s = Store(home)
    s.vectors.embedder = HashEmbedder()
    consent.accept(s, "ana")
    secret = "quokka-secret-5521 is my password hint"
    turn(s, "ana", secret, settings=Settings(home=home, model="echo", gate="always", retriever="bm25"))
    # the process dies right after the erasure commit: the VACUUM never runs, and nothing
    # closes the database (a clean close would checkpoint); the files as the kill leaves them:
    report = erasure.erase(s, "ana", vacuum=False)
    assert not report.vacuumed and "removed when the app next starts" in report.message()
    assert s.compaction_pending()
    after_kill = tmp_path / "after-kill"
    after_kill.mkdir()
    for f in home.iterdir():
        if f.name in ("companion.db", "companion.db-wal"):
            (after_kill / f.name).write_bytes(f.read_bytes())
    s.close()
    assert secret.encode() in _bytes_on_disk(after_kill)  # what the kill leaves behind

    s = Store(after_kill)  # the next start
    assert not s.compaction_pending()
    assert s.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    assert secret.encode() not in _bytes_on_disk(after_kill)  # checked while open, and after
    s.close()
    assert secret.encode() not in _bytes_on_disk(after_kill)


def test_a_completed_erasure_says_so_in_plain_words(store):
    consent.accept(store, "ana")
    report = erasure.erase(store, "ana")
    msg = report.message()
    assert report.vacuumed and report.wal_truncated and not store.compaction_pending()
    assert "no leftover copy of your words" in msg
    assert not re.search(r"\b(ix|queue|injected|cells?|vectors?)\b", msg)


# --- 11. HTML in messages ------------------------------------------------------------------------

def test_html_and_markdown_in_a_message_are_shown_as_text_to_the_participant_and_the_researcher(served):
    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = client(url)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    evil = 'look <img src="http://127.0.0.1:9/pixel.png"> and ![x](http://127.0.0.1:9/y.png)'
    a.predict(evil, "personal", [], api_name="/respond")
    chat = a.predict(evil, "personal", [], api_name="/respond")[0]  # retrieves the first: a memory line
    again = next(x for x in a.predict("ana", "ana-pass", api_name="/sign_in") if isinstance(x, list))
    for shown in (chat_text(chat), chat_text(again)):
        joined = "\n".join(shown)
        assert "<img" not in joined and "![x]" not in joined
        assert "&lt;img" in joined and "!\\[x\\]" in joined  # the characters are there, as text
    r = client(url)
    r.predict("open sesame", api_name="/r_login")
    rows = r.predict("ana", "", "", api_name="/r_rows")
    detail = r.predict(max(row[0] for row in rows["data"]), api_name="/r_one")
    assert "<img" not in detail and "![x]" not in detail and "&lt;img" in detail


# --- 14. a lone surrogate over HTTP --------------------------------------------------------------

def test_a_lone_surrogate_gets_a_clear_refusal_and_the_stream_completes(served):
    url, store = served
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = client(url)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    # as a hostile client sends it: JSON "\ud800" on the wire, on this session's queue
    fn = a._infer_fn_index("/respond", None)
    body = json.dumps({"data": ["broken \ud800 text", "personal", [], None], "fn_index": fn,
                       "session_hash": a.session_hash, "event_data": None, "trigger_id": None})
    assert "\\ud800" in body
    r = httpx.post(f"{url}gradio_api/queue/join", content=body, headers={"Content-Type": "application/json"},
                   timeout=30)
    r.raise_for_status()
    stream = httpx.get(f"{url}gradio_api/queue/data", params={"session_hash": a.session_hash}, timeout=60).text
    done = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]
    (final,) = [m for m in done if m.get("msg") == "process_completed"]
    assert final["success"], final
    chat = final["output"]["data"][0]
    assert "could not be taken" in chat_text(chat)[-1] and "character 8" in chat_text(chat)[-1]
    assert messages.read(store, "ana", 99) == []
    chat = a.predict("and now a good one", "personal", [], api_name="/respond")[0]  # the session goes on
    assert "You said: and now a good one" in chat_text(chat)


# --- 14. the CLI: a corpus with a huge line; a chat where every input was refused ----------------

def test_eval_on_a_corpus_with_a_huge_line_says_which_line_instead_of_a_traceback(tmp_path):
    from click.testing import CliRunner

    from companion.cli import main
    from eval.fixtures import make_release

    rel = make_release(tmp_path / "release")
    conv = rel / "U01" / "conversation.jsonl"
    lines = conv.read_text(encoding="utf-8").split("\n")
    row = json.loads(lines[2])
    row["text"] = "a" * 2_000_000  # a well-formed row with a 2 MB message (before: StoreError traceback)
    lines[2] = json.dumps(row)
    conv.write_text("\n".join(lines), encoding="utf-8")
    r = CliRunner().invoke(main, ["eval", "retrieval", "--corpus", str(rel), "--out", str(tmp_path / "out"),
                                  "--no-progress"])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), (r.exception, r.output)
    assert (f"U01/conversation.jsonl line 3: {len(lines[2]):,} characters, more than the 1,000,000"
            in r.output)


def test_chat_exits_non_zero_when_every_message_was_refused(home):
    from click.testing import CliRunner

    from companion.cli import main

    s = Store(home)
    consent.accept(s, "ana")
    s.close()
    too_long = "x" * (messages.MAX_MESSAGE_CHARS + 1)
    r = CliRunner().invoke(main, ["chat", "-p", "ana", "--model", "echo"], input=f"   \n{too_long}\n")
    assert r.exit_code != 0 and "none of the 2 messages was taken" in r.output
    r = CliRunner().invoke(main, ["chat", "-p", "ana", "--model", "echo"], input=f"{too_long}\nhello there\n")
    assert r.exit_code == 0 and "You said: hello there" in r.output


# --- issue 16 item 5: what the newcomer tripped on (app side) -----------------------------------

def test_a_shut_researcher_page_says_so_once_and_logs_no_traceback(serve_app, capfd):
    url, _ = serve_app(embedder=HashEmbedder())  # no researcher credential at all
    c = client(url)
    msg = c.predict("anything", api_name="/r_login")[0]
    assert msg.startswith("the researcher page is shut")
    capfd.readouterr()
    # the event the page chains after the login (filling the lists) says nothing more
    c.predict(api_name="/r_choices")
    err = capfd.readouterr().err
    assert "Traceback" not in err and "needs its password" not in err


def test_researcher_tables_round_scores_and_the_turn_detail_reads_as_text(serve_app):
    url, store = serve_app(embedder=HashEmbedder(), gate="never", researcher_password="open sesame")
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    a = client(url)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    a.predict("my sister lives in Porto", "personal", [], api_name="/respond")
    r = client(url)
    r.predict("open sesame", api_name="/r_login")
    (row,) = r.predict("ana", "", "", api_name="/r_rows")["data"]
    for x in row[5:7]:  # score, threshold
        assert x is None or round(float(x), 3) == float(x)
    detail = r.predict(row[0], api_name="/r_one")
    assert "abstain" in detail and "not run (the gate abstained)" in detail
    assert "| dayid |" not in detail  # no empty table of hits
    assert "{" not in detail and "}" not in detail  # no Python dicts


def test_the_page_names_the_model_and_says_when_it_is_the_embedded_demo(serve_app):
    from companion.app import model_note

    url, _ = serve_app(embedder=HashEmbedder())
    config = httpx.get(f"{url}config", timeout=30).text
    assert "Replies come from the model" in config and "echo" in config
    assert "small demo model" not in config
    note = model_note("local/smollm2-135m")
    assert "small demo model" in note and "Connecting a real model" in note


# === issue 22, third round ======================================================================
# (item 3, the one session gate, and item 7, text as text everywhere: tests/test_security_gate.py
# and tests/test_markup_everywhere.py)

PW = "open sesame"
FILE_COMPONENTS = {"file", "gallery", "image", "audio", "video", "model3d", "downloadbutton", "uploadbutton",
                   "imageeditor", "annotatedimage", "simpleimage", "imageslider", "multimodaltextbox", "dataset"}


def _tab_sign_up(page, tab, name: str, passphrase: str, tz: str = "UTC") -> None:
    r = page.call(tab, "sign_in", {"Name": name, "Passphrase": passphrase, "browser-tz": tz})
    assert r.success, r
    r = page.call(tab, "accept")
    assert r.success and any(isinstance(x, str) and "Signed in as" in x for x in r.data), r


# --- item 5: nothing of the product's outside the data directory ---------------------------------

def test_no_panel_action_leaves_a_file_outside_the_data_directory(serve_app, home, tmp_path, monkeypatch):
    import tempfile
    import uuid

    from companion import trials
    from tests.queue_client import Page, Tab

    cache = tmp_path / "gradio-cache"  # Gradio's cache for this app only (it reads this at build)
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))
    url, store = serve_app(embedder=HashEmbedder(), researcher_password=PW)
    page = Page(url)
    # by construction: no component that hands out or caches files
    assert not {c["type"] for c in page.comps.values()} & FILE_COMPONENTS
    tmp_before = set(os.listdir(tempfile.gettempdir()))

    who = "p" + uuid.uuid4().hex[:12]  # a name no file holds before this test
    said = f"marker-{uuid.uuid4().hex} is my street"
    tab = Tab(url)
    _tab_sign_up(page, tab, who, "their-pass")
    trials.randomize(store, who, ["never", "always"], 7, "bm25", "earlier_turns")
    assert page.call(tab, "respond", {"msg": said, "Context": "personal", "chat": []}).success
    # every action of a panel that produces a file: the participant's download, the researcher's
    # trace export and the trial report
    mine = page.call(tab, "my_data").data[0]
    assert page.call(tab, "r_login", {"r-pass": PW}).success
    traces_link = page.call(tab, "r_dump", {"r-part": who}).data[0]
    report = page.call(tab, "trial_results", {"tr-who": [], "tr-since": ""})
    assert report.success, report
    md, plots, report_link = report.data
    # the plots go inline, each one: no image by path or URL
    assert who in md and plots.count("<img") >= 1
    assert plots.count("<img") == plots.count('src="data:image/png;base64,')

    # nothing in Gradio's cache, nothing new in the temporary directory that holds their words
    made = [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []
    assert made == [], made
    tmp = tempfile.gettempdir()
    new_tmp = set(os.listdir(tmp)) - tmp_before  # (other programs may add theirs: none may hold these)
    assert not [n for n in new_tmp if n.startswith("trial-report")], new_tmp
    default_cache = os.path.join(tmp, "gradio")
    for needle in (who.encode(), said.encode()):
        for top in [os.path.join(tmp, n) for n in new_tmp] + [default_cache]:
            if os.path.isfile(top):
                assert needle not in open(top, "rb").read(), top
            elif os.path.isdir(top) and not top.startswith(str(home)):
                assert _files_containing(top, needle) == [], top
    # Gradio serves nothing by path: not the staged files, not the data directory
    staged = [p for p in store.data_dir.rglob("*") if p.is_file()]
    assert staged
    for p in staged:
        r = httpx.get(f"{url}gradio_api/file={p}", timeout=30)
        assert r.status_code in (403, 404) and said not in r.text and '"participant"' not in r.text, p

    # the one-time links: each works once
    got = fetch_download(url, report_link)
    assert got.status_code == 200 and who in got.text and fetch_download(url, report_link).status_code == 404
    # withdrawal erases what is still staged: the download, the trace export, a second report
    second = page.call(tab, "trial_results", {"tr-who": [], "tr-since": ""}).data[2]
    assert page.call(tab, "withdraw", {"Yes, erase everything about me": True}).success
    for link in (mine, traces_link, second):
        assert fetch_download(url, link).status_code == 404
    assert _files_containing(str(store.data_dir), who.encode()) == []


# --- item 13: "researcher" is no participant name; separate guards -------------------------------

def reserved_variants(n: int = 60, seed: int = 5) -> list[str]:
    """Names that read as the researcher or the system: case, separators, digits for letters."""
    import random

    rng = random.Random(seed)
    leet = {"e": "3", "a": "4", "o": "0", "s": "5", "i": "1", "t": "7"}
    out = set()
    while len(out) < n:
        word = rng.choice(["researcher", "researcher", "research", "admin", "administrator", "companion",
                           "system", "root"])
        w = "".join((c.upper() if rng.random() < 0.4 else c) for c in word)
        w = "".join(leet.get(c.lower(), c) if rng.random() < 0.2 else c for c in w)
        if rng.random() < 0.3 and len(w) > 3:
            i = rng.randrange(1, len(w) - 1)
            w = w[:i] + rng.choice("_.-") + w[i:]
        if rng.random() < 0.3:
            w = rng.choice(["", "the.", "real_"]) + w + rng.choice(["", "1", "_lab", "-team"])
        if rng.random() < 0.5 and "researcher" not in word:
            w = w.strip("_.-")
        out.add(w if w[0].isalnum() else "x" + w)
    return sorted(out)


def test_names_that_read_as_the_researcher_take_no_account(served, home):
    from click.testing import CliRunner

    from companion.cli import main

    url, store = served
    names = reserved_variants()
    kept = [n for n in names if "research" in n.lower().replace("3", "e").replace("4", "a").replace("5", "s")]
    assert len(kept) >= 20
    c = client(url)
    for name in names:
        out = c.predict(name, "some-passphrase", api_name="/sign_in")
        assert "reserved" in out[-1], (name, out[-1])
    assert participants.names(store) == []
    r = CliRunner().invoke(main, ["consent", "accept", "-p", "Researcher", "--passphrase", "xxxx-pass"])
    assert r.exit_code != 0 and "reserved" in r.output
    # the rule on more generated variants than the served app is asked about (other seeds)
    more = [n for seed in range(100, 120) for n in reserved_variants(60, seed)]
    assert [n for n in more if not participants.reserved(n)] == []
    # ordinary names near them are free
    for name in ("Reese", "Archer", "Sam", "Rootha", "Adminah", "Searcy", "Rosa", "Adam", "Sol", "Mia_2"):
        assert not participants.reserved(name), name


def _legacy_participant(store, name: str, passphrase: str) -> None:
    """An account made before the name was reserved (written as the old code wrote it)."""
    import secrets
    from datetime import datetime, timezone

    try:
        consent.accept(store, name, pass_hash=auth.hash_passphrase(passphrase), new=True)
        return
    except Exception:  # reserved now: write the row as it was
        pass
    with store.transaction() as conn:
        conn.execute("INSERT INTO participants (participant, tz, pass_hash, created_at, uid) VALUES (?,?,?,?,?)",
                     (name, "UTC", auth.hash_passphrase(passphrase), datetime.now(timezone.utc).isoformat(),
                      secrets.token_hex(16)))
    consent.accept(store, name)


def test_wrong_sign_ins_as_a_participant_called_researcher_do_not_lock_the_researcher_page(served):
    url, store = served
    _legacy_participant(store, "researcher", "participant-pass")
    guesser = client(url)
    for _ in range(6):
        said = guesser.predict("researcher", "wrong-guess", api_name="/sign_in")[-1]
    assert said.startswith("Too many failed sign-ins")  # the participant account is guarded ...
    assert client(url).predict(PW, api_name="/r_login")[0] == "Researcher page open."  # ... the page is not


def test_wrong_researcher_passwords_do_not_lock_out_a_participant_called_researcher(served):
    url, store = served
    _legacy_participant(store, "researcher", "participant-pass")
    r = client(url)
    for _ in range(6):
        said = r.predict("wrong-guess", api_name="/r_login")[0]
    assert said.startswith("Too many failed attempts")
    out = client(url).predict("researcher", "participant-pass", api_name="/sign_in")
    assert any(isinstance(x, str) and "Signed in as" in x for x in out), out


def test_the_failure_guards_of_the_cli_are_kept_apart_too(home):
    from click.testing import CliRunner

    from companion.cli import main

    s = Store(home)
    _legacy_participant(s, "researcher", "participant-pass")
    s.close()
    auth.set_researcher_password(home, "the-real-one")
    run = CliRunner().invoke
    for _ in range(auth.MAX_FAILURES):
        assert "wrong passphrase" in run(main, ["messages", "-p", "researcher", "--passphrase", "guess"]).output
    r = run(main, ["consent", "list", "--researcher-password", "the-real-one"])
    assert r.exit_code == 0 and "researcher" in r.output  # the researcher credential is not blocked


# --- item 14 (and issue 23): one click, one row; ratings limited per account ---------------------

def _like(page, tab, chat, index: int, liked):
    dep = page.by_name["on_like"]
    return tab.call(dep["id"], page.data(dep, {"chat": chat}),
                    {"index": [index, None], "value": chat[index]["content"], "liked": liked})


def test_one_click_stores_one_row_and_ratings_are_limited_per_account(served, monkeypatch):
    from memory import feedback, limits
    from tests.queue_client import Page, Tab

    # the shipped limits, as docs/SECURITY.md states them; then the per-minute count over an hour,
    # so the count below does not depend on how fast a loaded machine serves the clicks
    assert [(lim.n, lim.window) for lim in trialpanel.RATING_LIMITS] == [(30, 60.0), (300, 3600.0)]
    monkeypatch.setattr(trialpanel, "RATING_LIMITS", [limits.Limit(30, 3600.0)])
    url, store = served
    page = Page(url)
    tab = Tab(url)
    _tab_sign_up(page, tab, "rater", "rater-pass")
    chat = page.call(tab, "respond", {"msg": "hello there", "Context": "personal", "chat": []}).data[0]
    reply = next(i for i, m in enumerate(chat) if m["role"] == "assistant" and not (m.get("metadata") or {}))
    # 100 clicks on the same thumb (the attack made 300 in 33 s): one row
    said = [_like(page, tab, chat, reply, True).data[0] for _ in range(100)]
    assert len(feedback.history(store, "rater")) == 1
    assert said[0].startswith("Thank you") and all(s.startswith("Already noted") for s in said[1:])
    # the same with a tag: one row for the change to it, none for the clicks after
    for _ in range(20):
        _like(page, tab, chat, reply, "you forgot something I told you")
    assert [(f.rating, f.tag) for f in feedback.history(store, "rater")] == [(1, None), (-1, "forgot")]
    # changing back and forth: each change is a row, until the account's limit
    told = [_like(page, tab, chat, reply, liked).data[0] for liked in [True, False] * 18]
    rows = feedback.history(store, "rater")
    assert len(rows) == trialpanel.RATING_LIMITS[0].n
    assert [t for t in told if t.startswith("Not rated: too many ratings")]
    # two clicks in the same instant from two tabs of the account (issue 23: 27 ms apart): one row
    other = Tab(url)
    r = page.call(other, "sign_in", {"Name": "rater", "Passphrase": "rater-pass", "browser-tz": "UTC"})
    assert r.success
    with store.transaction() as conn:  # a fresh minute for the account
        conn.execute("DELETE FROM rate_events")
    before = len(feedback.history(store, "rater"))
    standing = feedback.standing(store, "rater", rows[-1].dayid)
    new = standing.rating != 1
    import threading

    threads = [threading.Thread(target=_like, args=(page, t, chat, reply, True)) for t in (tab, other)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(feedback.history(store, "rater")) == before + (1 if new else 0)


def test_two_rows_replacing_the_same_rating_cannot_both_be_stored(store, ana, settings):
    """The database holds one click to one row even where two writers read the same standing
    rating at once (on a server that does not serialize writers as SQLite does)."""
    from companion.turn import turn
    from memory import feedback

    r = turn(store, ana, "hello there", settings=settings)
    first = feedback.record(store, ana, r.reply.dayid, "up")
    with pytest.raises(Exception, match="(?i)unique"):
        with store.transaction() as conn:
            conn.execute("INSERT INTO feedback (participant, dayid, rating, tag, after_ordinal, via, created_at, replaces)"
                         " VALUES (?,?,?,?,?,?,?,?)", (ana, r.reply.dayid, -1, None, 2, "app", "now", 0))
    assert [f.id for f in feedback.history(store, ana)] == [first.id]
