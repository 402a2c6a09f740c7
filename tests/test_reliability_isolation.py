"""Isolation: participant A never reads B's messages, memory or traces, through the HTTP API
(two gradio_client sessions on the served app) or the CLI (own passphrase or researcher
credential; failed checks rate-limited across processes)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from companion import app, auth
from companion.cli import main
from consent import records as consent
from memory import messages
from memory.store import Store
from memory.embeddings import HashEmbedder

A_SECRET = "my locker code is 4711 and my sister Ines lives in Porto"
B_SECRET = "my locker code is 9352 and my brother Rui lives in Faro"


@pytest.fixture
def served(serve_app):
    url, store = serve_app(embedder=HashEmbedder(), researcher_password="open sesame")
    for p in ("ana", "ben"):
        consent.accept(store, p, pass_hash=auth.hash_passphrase(f"{p}-pass"), tz="UTC")
    return url, store


def texts(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


def test_two_sessions_never_see_each_other(served):
    from gradio_client import Client

    url, store = served
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    b.predict("ben", "ben-pass", api_name="/sign_in")
    ra = a.predict(A_SECRET, "personal", [], api_name="/respond")[0]
    rb = b.predict(B_SECRET, "personal", [], api_name="/respond")[0]
    assert "4711" in texts(ra) and "9352" not in texts(ra)
    assert "9352" in texts(rb) and "4711" not in texts(rb)
    # memory: the same question recalls only one's own past (gate always, BM25 over "locker code")
    ra = a.predict("what is my locker code", "personal", [], api_name="/respond")[0]
    rb = b.predict("what is my locker code", "personal", [], api_name="/respond")[0]
    assert "4711" in texts(ra) and "9352" not in texts(ra) and "Faro" not in texts(ra)
    assert "9352" in texts(rb) and "4711" not in texts(rb) and "Porto" not in texts(rb)
    # history on a new sign-in, and the data download, hold only one's own conversation
    b2 = Client(url, verbose=False)
    hist = b2.predict("ben", "ben-pass", api_name="/sign_in")
    assert "9352" in texts(hist) and "4711" not in texts(hist)
    from tests.test_app import fetch_download

    dump = fetch_download(url, b2.predict(api_name="/my_data")).text
    assert "9352" in dump and "4711" not in dump and "ana" not in json.loads(dump).get("participant", "")
    # the store agrees: each participant's rows are their own words and replies
    for p, mine, theirs in (("ana", "4711", "9352"), ("ben", "9352", "4711")):
        rows = messages.read(store, p, messages.next_ordinal(store, p))
        assert any(mine in m.text for m in rows) and not any(theirs in m.text for m in rows)


def test_api_endpoints_refuse_what_a_session_may_not_do(served):
    from gradio_client import Client

    url, _ = served
    anon = Client(url, verbose=False)
    with pytest.raises(Exception, match="Sign in first"):
        anon.predict("hello", "personal", [], api_name="/respond")
    with pytest.raises(Exception, match="Sign in first"):
        anon.predict(api_name="/my_data")
    with pytest.raises(Exception, match="Sign in first"):
        anon.predict(True, api_name="/withdraw")
    b = Client(url, verbose=False)
    b.predict("ben", "ben-pass", api_name="/sign_in")
    b.predict(B_SECRET, "personal", [], api_name="/respond")
    a = Client(url, verbose=False)
    a.predict("ana", "ana-pass", api_name="/sign_in")
    # a signed-in participant is not a researcher: every researcher endpoint is shut
    for args, name in [(("ben", "", ""), "/r_rows"), ((1,), "/r_one"), (("ben", "", ""), "/r_dump"),
                       (("ben", ["never"], 1), "/lambda"), (("ben", ["never"], 1), "/lambda_1")]:
        with pytest.raises(Exception, match="needs its password"):
            a.predict(*args, api_name=name)
    # the lists the page fills after its login stay empty (silently: the login said why)
    assert "ben" not in json.dumps(a.predict(api_name="/r_choices"))
    # signing in as someone else needs their passphrase; guessing is rate-limited
    for _ in range(5):
        out = a.predict("ben", "guess", api_name="/sign_in")
        assert "Name or passphrase is wrong." in texts(out) and "9352" not in texts(out)
    out = a.predict("ben", "ben-pass", api_name="/sign_in")
    assert "Too many failed sign-ins for ben" in texts(out) and "9352" not in texts(out)
    # ana's session is still ana's, not ben's
    ra = a.predict("what is my locker code", "personal", [], api_name="/respond")[0]
    assert "9352" not in texts(ra)


# --- the CLI -----------------------------------------------------------------------------------


def run(*args, input=None, env=None):
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)


@pytest.fixture
def two(home):
    assert run("consent", "accept", "-p", "ana", "--passphrase", "ana-pass", "--tz", "UTC").exit_code == 0
    assert run("consent", "accept", "-p", "ben", "--passphrase", "ben-pass", "--tz", "UTC").exit_code == 0
    s = Store(home)
    s.vectors.embedder = HashEmbedder()
    for p, text in (("ana", A_SECRET), ("ben", B_SECRET)):
        messages.append(s, p, "user", text, "personal")
    s.close()


PARTICIPANT_COMMANDS = [
    ("messages", "-p", "{p}", "--json"),
    ("traces", "-p", "{p}", "--json"),
    ("consent", "download", "-p", "{p}", "--out", "-"),
    ("consent", "show", "-p", "{p}"),
]


@pytest.mark.parametrize("cmd", PARTICIPANT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_cli_needs_the_participants_own_passphrase(two, cmd):
    args = [a.format(p="ben") for a in cmd]
    r = run(*args)
    assert r.exit_code == 2 and "'ben' has a passphrase: give it with --passphrase" in r.output
    assert "9352" not in r.output
    r = run(*args, "--passphrase", "ana-pass")  # ana's own passphrase does not open ben
    assert r.exit_code == 2 and "wrong passphrase for 'ben'" in r.output and "9352" not in r.output
    r = run(*args, "--passphrase", "ben-pass")
    assert r.exit_code == 0, r.output
    r = run(*args, env={"COMPANION_PASSPHRASE": "ben-pass"})
    assert r.exit_code == 0, r.output


def test_cli_chat_and_withdraw_need_the_passphrase(two):
    r = run("chat", "-p", "ben", "--model", "echo", input="hi\n")
    assert r.exit_code == 2 and "has a passphrase" in r.output
    r = run("consent", "withdraw", "-p", "ben")
    assert r.exit_code == 2 and "has a passphrase" in r.output
    r = run("consent", "accept", "-p", "ben", "--scopes", "logging")  # re-consent is ben's to give
    assert r.exit_code == 2 and "has a passphrase" in r.output
    r = run("messages", "-p", "ben", "--json", "--passphrase", "ben-pass")
    assert "9352" in r.output and "4711" not in r.output


def test_cli_researcher_credential(two, home):
    for cmd in (("traces", "--json"), ("consent", "list"), ("consent", "audit"), ("trial", "show", "-p", "ben")):
        r = run(*cmd)
        assert r.exit_code == 2 and "needs the researcher credential" in r.output, cmd
    r = run("messages", "-p", "ben", "--researcher-password", "lab-secret")
    assert r.exit_code == 2 and "no researcher password is set" in r.output
    r = run("researcher", "set-password", "--new-password", "lab-secret")
    assert r.exit_code == 0
    assert oct((home / auth.RESEARCHER_KEY).stat().st_mode & 0o777) == "0o600"
    assert "lab-secret" not in (home / auth.RESEARCHER_KEY).read_text()
    r = run("researcher", "set-password", "--new-password", "mine-now")  # no takeover without the current one
    assert r.exit_code == 2 and "already set" in r.output
    r = run("messages", "-p", "ben", "--json", "--researcher-password", "lab-secret")
    assert r.exit_code == 0 and "9352" in r.output
    r = run("consent", "list", env={"COMPANION_RESEARCHER_PASSWORD": "lab-secret"})
    assert r.exit_code == 0 and "ana" in r.output and "ben" in r.output
    r = run("consent", "list", "--researcher-password", "wrong")
    assert r.exit_code == 2 and "wrong researcher password" in r.output


def test_cli_failed_checks_are_rate_limited_across_processes(two, home):
    for _ in range(auth.MAX_FAILURES):
        r = run("messages", "-p", "ben", "--passphrase", "guess")
        assert "wrong passphrase" in r.output
    # even the right passphrase waits now; the count lives in the database, so a new process sees it
    r = run("messages", "-p", "ben", "--passphrase", "ben-pass")
    assert r.exit_code == 2 and "too many failed passphrase checks for 'ben'" in r.output and "9352" not in r.output
    s = Store(home)
    try:  # counted as rows of rate_events, keyed by digest: no name in clear, no file beside the database
        keys = [r[0] for r in s.conn.execute("SELECT key FROM rate_events").fetchall()]
        assert len(keys) >= auth.MAX_FAILURES and not [k for k in keys if "ben" in k]
    finally:
        s.close()
    assert not (home / "auth-failures.json").exists()
    # ana is not locked out by guesses at ben
    assert run("messages", "-p", "ana", "--passphrase", "ana-pass").exit_code == 0


def test_cli_participant_without_passphrase_stays_open(home):
    """Made by the operator (no secret of theirs to check); cannot sign in to the app."""
    assert run("consent", "accept", "-p", "op", "--tz", "UTC").exit_code == 0
    r = run("chat", "-p", "op", "--model", "echo", input="hello\n")
    assert r.exit_code == 0 and "You said: hello" in r.output
    assert run("messages", "-p", "op").exit_code == 0
    s = Store(home)
    try:
        from memory import participants

        assert not auth.verify("", participants.get(s, "op")["pass_hash"])
    finally:
        s.close()


def test_sign_in_guessing_from_one_address_does_not_lock_the_participant_out_elsewhere(store):
    from companion.auth import SignInGuard

    g = SignInGuard(store, "participant", per_address=(5, 60.0), per_name=(12, 600.0))
    for _ in range(5):
        g.failed("ben", "10.0.0.9")
    assert g.blocked_for("ben", "10.0.0.9") > 0  # the guesser waits
    assert g.blocked_for("ben", "192.168.1.5") == 0  # ben on his own device does not
    for i in range(7):  # guessing spread over addresses meets the per-name cap
        g.failed("ben", f"10.0.1.{i}")
    assert g.blocked_for("ben", "192.168.1.5") > 0 and g.blocked_for("ana", "10.0.0.9") == 0
