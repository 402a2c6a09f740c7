"""Issue 22 item 7: participant text is shown as text in every panel, by one rendering function.

Hostile text comes from a generator (tests/hostile.py: HTML that fetches or runs something,
Markdown images and links of every scheme, the constructs a renderer turns into something else,
each in a set of contexts), not from three examples. It goes in where participant text goes in
(messages, remembered items, held actions, a release's conversation, what an annotator types)
and every event of the served app is called; every string it sends to a Markdown, Chatbot or
HTML component (and every error toast, which renders HTML) must render inert, and where the
text is meant to be shown, it must show exactly as typed.
"""

from __future__ import annotations

import json

import pytest

from companion import auth
from companion.markup import text
from consent import records as consent
from memory import actions as action_rows
from memory import claims, filememory, messages, persona
from memory.embeddings import HashEmbedder
from memory.store import Store
from tests.conftest import export_garden_chat
from tests.hostile import fold, html_inert, inert, payloads, shown, variants
from tests.queue_client import Page, Tab

PW = "open sesame"
RENDERING = {"markdown", "chatbot"}


def test_the_rendering_function_makes_every_generated_variant_inert_and_shows_it_as_typed():
    vs = variants(600, seed=3)
    assert len(vs) >= 600 and len(set(vs)) == len(vs)
    for v in vs:
        md = text(v)
        assert inert(md) == [], (v, md, inert(md))
        assert shown(md) == fold(v), (v, md, shown(md))


def test_the_check_itself_catches_what_it_is_for():
    """Unescaped, the generated payloads do render as markup (the check is not vacuous)."""
    unsafe = [p for p in payloads() if inert(p)]
    assert len(unsafe) >= 0.6 * len(payloads())
    assert inert("<img src=x onerror=alert(1)>") and inert("[a](javascript:alert(1))") and inert("![](http://x)")
    assert inert("see http://evil.example") and not inert(text("see http://evil.example"))


def _strings(comp_type: str, value) -> list[str]:
    """What of an output value a component renders as Markdown."""
    if isinstance(value, dict) and value.get("__type__") == "update":
        value = value.get("value")
    if value is None:
        return []
    if comp_type == "markdown":
        return [value] if isinstance(value, str) else []
    if comp_type == "chatbot":
        out = []
        for m in value or []:
            content = m.get("content")
            parts = content if isinstance(content, list) else [content]
            out += [p.get("text", "") if isinstance(p, dict) else str(p or "") for p in parts]
            title = (m.get("metadata") or {}).get("title")
            if title:
                out.append(title)
        return out
    return []


class Walk:
    """Calls events, checks every rendered string of every answer, remembers what it showed."""

    def __init__(self, page: Page, hostile: list[str]):
        self.page, self.hostile = page, hostile
        self.called: set[int] = set()
        self.rendered: list[tuple[str, str]] = []  # (event, text shown) for every rendered string seen

    def call(self, tab: Tab, name: str, given: dict | None = None, event_data: dict | None = None):
        dep = self.page.by_name[name]
        reply = tab.call(dep["id"], self.page.data(dep, given), event_data)
        self.check(name, dep, reply)
        return reply

    def check(self, name: str, dep: dict, reply) -> None:
        self.called.add(dep["id"])
        if not reply.success:
            assert html_inert(reply.error or "") == [], (name, reply.error)
            return
        for out_id, value in zip(dep["outputs"], reply.data or []):
            kind = self.page.comps[out_id]["type"]
            if kind == "html":  # the app's own HTML (plot images): never participant text
                assert not any(h in json.dumps(value) for h in self.hostile if len(h) > 12), name
            if kind == "dataframe":  # shown as text by the component unless a column renders markup
                assert not set(self.page.props(out_id).get("datatype") or ["str"]) & {"markdown", "html"}
            for md in _strings(kind, value):
                self._inert(name, md)
        for c in (reply.render or {}).get("components", []):
            if c["type"] == "markdown":
                self._inert(name, c.get("props", {}).get("value") or "")

    def _inert(self, name: str, md: str) -> None:
        assert inert(md) == [], (name, md[:300], inert(md))
        self.rendered.append((name, shown(md)))

    def showed(self, name: str, typed: str) -> bool:
        want = fold(typed)
        return any(want in seen for n, seen in self.rendered if n == name)


@pytest.fixture
def hostile_study(serve_app, tmp_path):
    url, store = serve_app(embedder=HashEmbedder(), researcher_password=PW)
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"), tz="UTC")
    return url, store


def test_every_event_of_every_panel_shows_hostile_text_as_text(hostile_study, tmp_path):
    url, store = hostile_study
    page = Page(url)
    vs = variants(420, seed=11)
    walk = Walk(page, vs)
    tab = Tab(url)  # a participant who is also the researcher (one tab, both signed in)
    assert walk.call(tab, "sign_in", {"Name": "ana", "Passphrase": "ana-pass", "browser-tz": "UTC"}).success
    assert walk.call(tab, "r_login", {"r-pass": PW}).success

    # 1 the chat: the conversation so far (every variant, as the participant's message and the
    # echo's reply), shown at sign-in; then new messages streamed live, which BM25 matches to them
    rows = []
    for v in vs:
        rows += [dict(sender="user", text=v, context="personal"),
                 dict(sender="companion", text=f"You said: {v}", context="personal")]
    messages.append_many(store, "ana", rows)
    r = walk.call(tab, "sign_in", {"Name": "ana", "Passphrase": "ana-pass", "browser-tz": "UTC"})
    assert r.success
    for v in vs[-100:]:  # (the chat loads the last 200 messages)
        assert walk.showed("sign_in", v), v
    for b in (vs[:12], vs[12:24]):
        assert walk.call(tab, "respond", {"msg": "\n".join(b), "Context": "personal", "chat": []}).success
        for v in b:  # shown as typed in the participant's bubble and the reply
            assert walk.showed("respond", v), v

    # 2 memory: hostile claims, file-memory lines, quirks; their sources; a correction in hostile words
    log = messages.read(store, "ana", messages.next_ordinal(store, "ana"))
    src = [(log[0].dayid, log[0].ordinal)]
    planted = vs[:12]
    for v in planted:
        claims.add(store, "ana", text=f"Said {v}", category="fact", sources=src, context="personal")
        try:
            filememory.add(store, "ana", "personal", f"Note {v}", sources=src)
        except Exception:  # a line the document refuses (re-captured memory text, budget): not shown
            pass
        persona.add(store, "ana", slot=f"quirk:{v[:40]}", value="yes", clause=v, sources=src)
    view = walk.call(tab, "mem_view")
    table = view.data[0]["data"] if isinstance(view.data[0], dict) else view.data[0]
    keys = [row[0] for row in table]
    assert sum(1 for k in keys if k.startswith("claim:")) >= len(planted) // 2  # (equal texts merge)
    for row in table:  # each item's sources show the item as it was stored
        walk.rendered.clear()
        walk.call(tab, "mem_sources", {"mem-item": row[0]})
        assert walk.showed("mem_sources", row[2].split(" = ", 1)[-1].split(": ", 1)[-1]), row
    line = next(k for k in keys if k.startswith("line:"))
    walk.call(tab, "mem_edit", {"mem-item": line, "mem-text": vs[20]})
    version = store.conn.execute("SELECT max(version) FROM memory_file_versions WHERE participant='ana'").fetchone()[0]
    walk.call(tab, "mem_version", {"mem-version": version})
    walk.call(tab, "mem_sources", {"mem-item": vs[21]})  # a hostile key: refused, the toast is text

    # 3 held actions with hostile words, shown in the approval panel (gr.render) and the history
    with store.transaction() as conn:
        held = [action_rows.insert(conn, "ana", "personal", "set_reminder", False,
                                   {"text": v, "when": "2026-12-02T09:00:00+00:00"}, "held", f"because {v}", True,
                                   "turn", log[0].dayid) for v in vs[30:36]]
    walk.call(tab, "act_view")
    render = page.by_name["apply"]
    walk.check("apply", render, tab.call(render["id"], [None] * len(render["inputs"])))
    for v in vs[30:36]:
        assert walk.showed("apply", v), v
    walk.call(tab, "act_approve", {"act-id": held[0].id})
    assert walk.showed("act_approve", vs[30])

    # 4 the researcher page: traces (their snippets), the turn detail, arms with a hostile name
    rows = walk.call(tab, "r_rows", {"r-part": "ana"}).data[0]["data"]
    for row in rows[:4]:
        walk.call(tab, "r_one", {"r-trace": row[0]})
    walk.call(tab, "lambda", {"arm-part": vs[40], "arm-gates": ["never"], "arm-seed": 1})
    walk.call(tab, "trial_results", {"tr-who": [], "tr-since": vs[41]})

    # 5 annotation of a release whose conversation is hostile text, with hostile notes
    other = Store(tmp_path / "release-source")
    rel = tmp_path / "release"
    export_garden_chat(other, rel, ["my garden has tomatoes", "work was long", "what grows in my garden?"])
    other.close()
    conv = rel / "U01" / "conversation.jsonl"
    rows_ = [json.loads(x) for x in conv.read_text(encoding="utf-8").splitlines() if x.strip()]
    for i, row in enumerate(rows_):
        row["text"] = vs[50 + i]
    conv.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows_), encoding="utf-8")
    walk.call(tab, "an_load", {"an-folder": str(rel), "an-who": vs[60]})
    from consent import annotate as A

    key = A.probes(rel)[-1].key
    walk.call(tab, "an_pick", {"an-folder": str(rel), "an-key": key, "an-who": "rita", "an-query": ""})
    assert any(walk.showed("an_pick", vs[50 + i]) for i in range(len(rows_)))
    walk.call(tab, "an_search", {"an-folder": str(rel), "an-key": key, "an-query": vs[50]})
    walk.call(tab, "an_save_A", {"an-folder": str(rel), "an-key": key, "an-who": "rita", "an-a-locus": "episode",
                                 "an-a-note": vs[61]})
    assert walk.showed("an_save_A", vs[61])
    walk.call(tab, "an_save_C", {"an-folder": str(rel), "an-key": key, "an-who": "rita", "an-c-tier": "basic",
                                 "an-c-cat": vs[62], "an-c-rule": vs[63], "an-c-note": vs[64]})
    walk.call(tab, "an_agree", {"an-folder": str(rel), "an-who": "rita", "an-other": vs[65]})
    walk.call(tab, "an_finalize", {"an-folder": str(rel), "an-who": vs[66]})

    # 6 every other event the page registers, with hostile text in every text input; the ones that
    # end the session last
    last = ("sign_out", "withdraw", "decline", "accept", "sign_in", "sign_in_1")
    todo = [d for d in page.deps if d["id"] not in walk.called and d["api_name"] not in last]
    todo += [page.by_name[n] for n in last]
    for i, dep in enumerate(todo):
        given = {}
        for c in dep["inputs"]:
            p, kind = page.props(c), page.comps[c]["type"]
            label = p.get("elem_id") or p.get("label")
            if kind == "textbox" or (kind == "dropdown" and p.get("allow_custom_value") and not p.get("multiselect")):
                given[label] = vs[(70 + i) % len(vs)]
        if dep["api_name"] == "withdraw":
            given["Yes, erase everything about me"] = True
        events = {t[1] for t in dep.get("targets", [])}
        data = {"index": [1, None], "value": "x", "liked": True} if "like" in events else None
        walk.check(dep["api_name"], dep, tab.call(dep["id"], page.data(dep, given), data))
    assert walk.called >= {d["id"] for d in page.deps if d["api_name"] != "js_fn"}
    # and each of them answered through the check above: an event that fills a Markdown or Chatbot
    # component and was never called would be a hole in this test
    rendering = {d["id"] for d in page.deps for o in d["outputs"] if page.comps[o]["type"] in RENDERING}
    assert rendering and rendering <= walk.called
