"""Issue 22 item 3 and issue 26 item 2 (app side): one session gate for every event.

The attack: a tab left open on an account that was withdrawn (and whose name a newcomer then
registered), or a tab that never signed in, calls every event the served app registers, by
`fn_index` over Gradio's queue as a hostile client does, including the events the page does not
show, those chained after others, and those `gr.render` made in that tab. Each call is made twice,
once with inputs that point at the newcomer's real data (their reply text, their ids) and once at
data that does not exist: the answers must be the same (no oracle), nothing may be stored, and
nothing of the newcomer's may come back. Events are taken from the served /config, not from a list
here, so an event added later is attacked too.
"""

from __future__ import annotations

import random
import re
import string
import subprocess
import sys
import time

import httpx
import pytest
from gradio_client import Client

from companion import actions, auth
from consent import records as consent
from memory import participants, schema
from memory.embeddings import HashEmbedder
from memory.store import Store
from tests.queue_client import Reply, Tab

# Events that need no account (the door), and events that fill panels for whoever the session
# stands for (possibly no one). Every other event must be refused outright from a stale or an
# unsigned session. A new event is in neither set until someone decides it belongs there.
DOOR = re.compile(r"^(sign_in(_\d+)?|accept|decline|sign_out|r_login|js_fn)$")
VIEW = re.compile(r"^(act_view(_\d+)?|mem_view(_\d+)?|panels_for(_\d+)?|r_choices|apply)$")
REFUSED = re.compile(r"Sign in first|session has ended|needs its password")
BOOKKEEPING = {"rate_events", "app_sessions"}  # what a refused sign-in or a sign-out may write


def cheap_hash(passphrase: str) -> str:
    """A valid scrypt hash at a tiny cost (auth.verify reads the cost from the hash), so the test can
    open a hundred tabs on the account without spending minutes in scrypt."""
    import base64
    import hashlib

    salt = b"0123456789abcdef"
    key = hashlib.scrypt(passphrase.encode(), salt=salt, n=16, r=8, p=1, dklen=32)
    return f"scrypt$16$8$1${base64.b64encode(salt).decode()}${base64.b64encode(key).decode()}"


def _word(rng: random.Random) -> str:
    return "Zarq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(8))


def snapshot(store: Store) -> dict:
    """Every row of every table (but the failure counts and session bindings), to compare."""
    conn = store.conn
    out = {}
    for name in (t.name for t in schema.metadata.sorted_tables):  # every table, on either engine
        if name in BOOKKEEPING or name.startswith("message_vectors"):
            continue
        out[name] = sorted(tuple(r) for r in conn.execute(f'SELECT * FROM "{name}"').fetchall())
    return out


def config(url: str) -> dict:
    return httpx.get(f"{url}config", timeout=30).json()


def _value(comp: dict, real: bool, newcomer: dict):
    """What a hostile client sends for one input: the newcomer's data (real) or a decoy."""
    kind, props = comp["type"], comp.get("props", {})
    label = (props.get("label") or "").lower()
    elem = props.get("elem_id") or ""
    if kind == "state":
        return None
    if kind == "textbox":
        if label == "name":
            return "ana"
        if "passphrase" in label or "password" in label:
            return "a-guess-" + ("1" if real else "2")
        if elem == "browser-tz":
            return "UTC"
        return newcomer["reply"] if real else "You said: nothing anyone wrote"
    if kind == "number":
        if "trace" in label:
            return newcomer["trace_id"] if real else 987654
        return newcomer["action_id"] if real else 987654
    if kind in ("dropdown", "radio"):
        if props.get("allow_custom_value"):  # a key typed by the client: the newcomer's, or none's
            value = newcomer["claim_key"] if real else "claim:987654"
            return [value] if props.get("multiselect") else value
        if props.get("multiselect"):
            return []
        choices = props.get("choices") or [[None, None]]  # what the page offers (Gradio refuses others)
        return choices[0][1] if isinstance(choices[0], (list, tuple)) else choices[0]
    if kind == "checkbox":
        return True
    if kind == "chatbot":
        text = newcomer["reply"] if real else "You said: nothing anyone wrote"
        return [{"role": r, "metadata": None, "content": [{"type": "text", "text": t}], "options": None}
                for r, t in (("user", "x"), ("assistant", text))]
    return None


def _event_data(dep: dict, real: bool, newcomer: dict) -> dict | None:
    events = {t[1] for t in dep.get("targets", [])}
    if "like" in events:
        text = newcomer["reply"] if real else "You said: nothing anyone wrote"
        return {"index": [1, None], "value": text, "liked": True}
    if "select" in events:
        key = newcomer["claim_key"] if real else "claim:987654"
        return {"index": [0, 0], "value": key, "row_value": [key, "profile", "x", "personal", "day1-1"],
                "col_value": [key], "selected": True}
    return None


def _call(tab: Tab, dep: dict, comps: dict, real: bool, newcomer: dict) -> Reply:
    data = [_value(comps[i], real, newcomer) for i in dep["inputs"]]
    return tab.call(dep["id"], data, _event_data(dep, real, newcomer))


def _shown(reply: Reply):
    """The reply as the page would show it (a render's layout by its components' kinds and values)."""
    render = None
    if reply.render:
        render = [(c["type"], c.get("props", {}).get("value")) for c in reply.render.get("components", [])]
    return reply.success, reply.data, reply.error, render


def _sign_in(url: str, tab: Tab, deps: dict, comps: dict, name: str, passphrase: str) -> None:
    dep = deps["sign_in"]
    data = []
    for i in dep["inputs"]:
        label = (comps[i].get("props", {}).get("label") or "").lower()
        data.append(name if label == "name" else passphrase if "passphrase" in label else
                    "UTC" if comps[i].get("props", {}).get("elem_id") == "browser-tz" else None)
    r = tab.call(dep["id"], data)
    assert r.success and any(isinstance(x, str) and "Signed in as" in x for x in r.data), r


@pytest.fixture
def attacked(serve_app):
    """The old owner of "ana" leaves tabs open, withdraws; a newcomer registers "ana" and chats."""
    url, store = serve_app(embedder=HashEmbedder(), researcher_password="open sesame")
    cfg = config(url)
    comps = {c["id"]: c for c in cfg["components"]}
    deps = {d["api_name"]: d for d in cfg["dependencies"]}
    consent.accept(store, "ana", pass_hash=cheap_hash("old-ana-pass"), tz="UTC")
    owner = Client(url, verbose=False)
    owner.predict("ana", "old-ana-pass", api_name="/sign_in")
    owner.predict("remind me to call the bank tomorrow at 9am", "personal", [], api_name="/respond")

    # tabs signed in as the old ana, one per call the attack makes (each call sees a fresh stale tab)
    stale = [Tab(url) for _ in range(2 * len(cfg["dependencies"]))]
    for tab in stale:
        _sign_in(url, tab, deps, comps, "ana", "old-ana-pass")
    # two more that also rendered ana's approval panel: the Approve/Reject events gr.render made
    rendered = []
    for _ in range(2):
        tab = Tab(url)
        _sign_in(url, tab, deps, comps, "ana", "old-ana-pass")
        assert tab.call(deps["act_view"]["id"], [None]).success
        r = tab.call(deps["apply"]["id"], [None, None] if len(deps["apply"]["inputs"]) == 2 else [None])
        made = [d for d in r.render["dependencies"]]
        assert len(made) == 2, r.render  # Approve and Reject of ana's held reminder
        rendered.append((tab, made))
    owner.predict(True, api_name="/withdraw")

    rng = random.Random(7)
    secret = _word(rng)
    newcomer = Client(url, verbose=False)
    newcomer.predict("ana", "newcomer-pass", api_name="/sign_in")
    newcomer.predict(api_name="/accept")
    newcomer.predict(f"I live in {secret}", "personal", [], api_name="/respond")
    newcomer.predict(f"remind me to water the {secret} plants tomorrow at 9am", "personal", [], api_name="/respond")
    from companion.scheduler import consolidate_all

    consolidate_all(store)
    claim = store.conn.execute("SELECT id FROM memory_claims WHERE participant='ana' AND text LIKE ?",
                               (f"%{secret}%",)).fetchone()
    (held,) = actions.pending(store, "ana")
    trace_id = store.conn.execute("SELECT max(id) FROM traces WHERE participant='ana'").fetchone()[0]
    data = {"secret": secret, "reply": f"You said: I live in {secret}", "uid": participants.uid(store, "ana"),
            "claim_key": f"claim:{claim[0]}" if claim else "claim:1", "action_id": held.id,
            "trace_id": trace_id}
    assert data["uid"] and claim is not None
    return url, store, cfg, comps, stale, rendered, data


def _assert_refused(name: str, reply: Reply, newcomer: dict, said: str) -> None:
    leaked = [s for s in reply.strings() if newcomer["secret"] in s or newcomer["uid"] in s]
    assert not leaked, f"{name} ({said}) disclosed the newcomer's data: {leaked[:3]}"
    if DOOR.match(name) or VIEW.match(name):
        return
    assert not reply.success and REFUSED.search(reply.error or ""), f"{name} ({said}) was not refused: {reply}"


def test_every_event_refuses_a_stale_and_an_unsigned_session(attacked):
    url, store, cfg, comps, stale, rendered, newcomer = attacked
    deps = [d for d in cfg["dependencies"]]
    assert len(deps) >= 50  # the whole page, including private and chained events
    before = snapshot(store)
    stale_tabs = iter(stale)
    checked = 0
    for dep in deps:
        name = dep["api_name"] or f"fn{dep['id']}"
        for who in ("stale", "unsigned"):
            answers = []
            for real in (True, False):
                tab = next(stale_tabs) if who == "stale" else Tab(url)
                reply = _call(tab, dep, comps, real, newcomer)
                said = f"{who}, {'real' if real else 'decoy'} inputs"
                _assert_refused(name, reply, newcomer, said)
                assert snapshot(store) == before, f"{name} ({said}) stored or changed something"
                answers.append(_shown(reply))
                checked += 1
            if not DOOR.match(name):  # the same answer whether the guessed data exists or not
                assert answers[0] == answers[1], f"{name} ({who}) answers differ: an oracle\n{answers}"
    # the approval buttons gr.render made in the old owner's tab (for her action's number)
    for tab, made in rendered:
        for dep in made:
            reply = tab.call(dep["id"], [None] * len(dep["inputs"]))
            _assert_refused(dep.get("api_name") or "approve/reject", reply, newcomer, "rendered in the stale tab")
            assert snapshot(store) == before
            checked += 1
    assert checked >= 4 * len(deps)
    # the newcomer's account is untouched: no feedback, their action still held, one consent
    assert store.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 0
    assert [a.status for a in actions.pending(store, "ana")] == ["held"]


def test_a_stale_tab_is_refused_by_another_process_serving_the_same_data(serve_app, home, tmp_path):
    """Issue 26 item 2: process A holds the tab; the withdrawal and the newcomer happen in process B
    (its own interpreter, its own memory, the same data directory); A refuses the tab."""
    url_a, store = serve_app(embedder=HashEmbedder())
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("old-ana-pass"), tz="UTC")
    tab = Client(url_a, verbose=False)
    tab.predict("ana", "old-ana-pass", api_name="/sign_in")
    tab.predict("my old words", "personal", [], api_name="/respond")

    with other_process(home, tmp_path) as url_b:
        b = Client(url_b, verbose=False)
        b.predict("ana", "old-ana-pass", api_name="/sign_in")
        b.predict(True, api_name="/withdraw")
        newcomer = Client(url_b, verbose=False)
        newcomer.predict("ana", "newcomer-pass", api_name="/sign_in")
        newcomer.predict(api_name="/accept")
        newcomer.predict("the newcomer's own words", "personal", [], api_name="/respond")
        # rate limits are the database's too: five wrong guesses at B block the sixth at A
        for _ in range(5):
            assert b.predict("ana", "wrong-guess", api_name="/sign_in")[-1] == "Name or passphrase is wrong."
        guesser_at_a = Client(url_a, verbose=False)
        assert guesser_at_a.predict("ana", "wrong-guess", api_name="/sign_in")[-1].startswith("Too many failed")

    with pytest.raises(Exception, match="session has ended"):
        tab.predict("posting as ana", "personal", [], api_name="/respond")
    with pytest.raises(Exception, match="Sign in first"):
        tab.predict(api_name="/my_data")
    texts = [r[0] for r in store.conn.execute("SELECT text FROM messages WHERE participant='ana'")]
    assert "posting as ana" not in texts and "the newcomer's own words" in texts and "my old words" not in texts


class other_process:
    """`companion serve`-like app in a separate interpreter on the same data directory."""

    CODE = """
import sys
from companion import app
from companion.settings import Settings
from memory.embeddings import HashEmbedder
from memory.store import Store
s = Store(sys.argv[1]); s.vectors.embedder = HashEmbedder()
demo = app.build(Settings(home=sys.argv[1], model="echo", gate="always", retriever="bm25", recent_window=0), s)
demo.queue()
demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[2]), quiet=True, ssr_mode=False, mcp_server=False)
"""

    def __init__(self, home, tmp_path):
        from tests.conftest import free_port

        self.home, self.port, self.log = home, free_port(), tmp_path / "process-b.log"

    def __enter__(self) -> str:
        self.out = open(self.log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.home), str(self.port)],
                                     stdout=self.out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 120
        while True:
            assert self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "process B did not start:\n" + self.log.read_text(errors="replace")
            time.sleep(0.25)

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.out.close()


def test_an_event_without_a_gate_policy_cannot_be_built(tmp_path):
    """By construction: the app refuses to start with a handler that declares no policy, and a
    handler that somehow has none is refused at every call."""
    import gradio as gr

    from companion import app, gate
    from companion.settings import Settings

    demo = app.build(Settings(home=tmp_path, model="echo"))
    assert demo.ungated() == []
    with app.App() as bare:
        b = gr.Button()
        b.click(lambda: "anything", None, None)
    assert len(bare.ungated()) == 1
    with pytest.raises(gr.Error, match="not available"):
        gate.check(Store(tmp_path / "x"), lambda: None, gate.new_session())
