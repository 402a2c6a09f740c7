"""The definition of "the pipeline works": a small study run end to end through the product's own
commands on the product's own output.

Three participants chat over several simulated days (time_machine moves the clock; nothing in the
product is patched): ana through `companion chat`, ben through the served app (sign-up, consent,
chat over its HTTP API, thumbs and a tag through the chat's feedback handler, one more rating
through `companion feedback`) with a randomized gate trial from his second day, cara through the
CLI until she withdraws. Then `companion memory consolidate`, `companion export`, `companion
release check`, a scripted annotator working through `companion annotate list / show / set`,
`companion annotate finalize`, `companion release check` again and `companion eval retrieval
abstention demand` on the finalized release, whose numbers are computed by hand below.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
import time_machine
from click.testing import CliRunner
from gradio_client import Client

from companion import trialpanel
from companion.cli import main

PASSWORD = "study-researcher-pw"
W = 2  # the release's recent window

# (day, hour, minute) -> the lines said in that session. Every line is answered by one echo reply.
ANA = [((2, 9, 0), ["my sister moved to a new flat last week",         # u1
                    "work was long today, the quarterly report again",  # u2
                    "I made pasta with spinach for dinner"]),          # u3
       ((3, 19, 0), ["the train was late again, Marek was on it too",  # u4
                     "do you remember where my sister moved?",          # u5 -> u1
                     "I am reading a novel about sailors"]),            # u6
       ((5, 8, 30), ["what did I cook with spinach?",                   # u7 -> u3
                     "the novel about sailors is getting good",         # u8 -> u6
                     "is the quarterly report finally done?"])]         # u9 -> u2
BEN = [((2, 20, 0), ["I started a new job at the bakery",               # b1
                     "my dog is a grey whippet"]),                      # b2
       ((3, 7, 0), ["what time does the bakery open, did I say?",       # b3 -> b1
                    "how was your day"]),                               # b4
       ((5, 21, 0), ["is my whippet going to like the new flat?",       # b5 -> b2
                     "good night"])]                                    # b6
CARA = [((2, 10, 0), ["hello there", "I like rainy days"])]
# What the scripted annotator knows of the script: a probe recalling an earlier line, and the word
# that finds that line in `annotate show -q`.
RECALLS = {"do you remember where my sister moved?": "sister", "what did I cook with spinach?": "spinach",
           "the novel about sailors is getting good": "sailors", "is the quarterly report finally done?": "quarterly",
           "what time does the bakery open, did I say?": "bakery", "is my whippet going to like the new flat?": "whippet"}


def at(day, hour, minute):
    return datetime(2026, 3, day, hour, minute, tzinfo=timezone.utc)


def cli(*args, input=None, code=0):
    r = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
    assert r.exit_code == code, r.output
    return r


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Runs the whole study once; the tests below read what each step left."""
    mp = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("study")
    home = base / "home"
    mp.setenv("COMPANION_HOME", str(home))
    mp.setenv("COMPANION_RESEARCHER_PASSWORD", PASSWORD)
    cli("researcher", "set-password", "--new-password", PASSWORD)
    out = {"base": base, "home": home, "steps": {}}

    from companion import app
    from companion.settings import Settings
    from memory.store import Store
    from tests.conftest import free_port

    store = Store(home)
    demo = app.build(Settings(home=home, model="echo", recent_window=W), store)
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False,
                mcp_server=False)
    try:
        for who in ("ana", "cara"):
            with time_machine.travel(at(2, 8, 0), tick=True):
                cli("consent", "accept", "-p", who, "--tz", "UTC")
        ben = Client(f"http://127.0.0.1:{port}/", verbose=False)
        chat = []
        for n, ((day, hour, minute), lines) in enumerate(BEN):
            with time_machine.travel(at(day, hour, minute), tick=True):
                if n == 0:
                    ben.predict("ben", "ben-passphrase", api_name="/sign_in")
                    ben.predict(api_name="/accept")
                for line in lines:
                    chat = ben.predict(line, "personal", chat, api_name="/respond")[0]
            if n == 0:  # the trial starts on ben's second day: his first two turns are outside it
                cli("trial", "randomize", "-p", "ben", "--gates", "never,always", "--seed", 7)
            if n == 1:  # a thumb down with a tag on the reply to b3, through the chat's feedback handler
                i = [k for k, m in enumerate(chat) if trialpanel._is_reply(m)][2]
                out["steps"]["tag"] = trialpanel.rate(store, "ben", chat, i, "you forgot something I told you")
        i = [k for k, m in enumerate(chat) if trialpanel._is_reply(m)][4]
        out["steps"]["thumb"] = trialpanel.rate(store, "ben", chat, i, True)  # thumbs up on the reply to b5
        for who, script in (("ana", ANA), ("cara", CARA)):
            for (day, hour, minute), lines in script:
                with time_machine.travel(at(day, hour, minute), tick=True):
                    cli("chat", "-p", who, "--model", "echo", input="".join(x + "\n" for x in lines))
    finally:
        demo.close()
        store.close()
    traces = json.loads(cli("traces", "-p", "ben", "--json").stdout)
    cli("feedback", "-p", "ben", traces[3]["reply_dayid"], "down")  # the reply to b4, through the CLI
    out["ben_traces"] = traces
    out["withdraw"] = cli("consent", "withdraw", "-p", "cara", "--yes").stdout
    cli("memory", "consolidate", "-p", "ana")
    cli("memory", "consolidate", "-p", "ben")
    rel = base / "release"
    out["steps"]["export"] = cli("export", "--out", rel, "--seed", 3, "--probe-share", "1.0",
                                 "--recent-window", W).stdout
    out["check_exported"] = CliRunner().invoke(main, ["release", "check", str(rel), "--json"])
    out["annotated"] = annotate(rel)
    out["steps"]["finalize"] = cli("annotate", "finalize", rel, "--annotator", "rita").stdout
    out["check_final"] = cli("release", "check", rel).stdout
    report = base / "report"
    cli("eval", "retrieval", "abstention", "demand", "--corpus", rel, "--out", report, "--gate", "lexical",
        "--no-progress")
    out["metrics"] = json.loads((report / "report.json").read_text())["metrics"]
    out["rel"] = rel
    yield out
    mp.undo()


def annotate(rel) -> dict[str, str | None]:
    """The scripted annotator: for each pending probe, a recall (RECALLS) is an episode grounded on
    the earliest participant line before the recent window holding the recall's word; anything else
    points at nothing. Returns probe key -> grounding dayid (None for no grounding)."""
    done = {}
    for p in json.loads(cli("annotate", "list", rel, "--json").stdout):
        word = RECALLS.get(p["text"])
        target = None
        if word:
            shown = json.loads(cli("annotate", "show", rel, p["key"], "-q", word, "--json").stdout)
            target = next((m["dayid"] for m in shown["history"] if m["sender"] == "user"), None)
            assert target, (p, shown)
        refs = [target] if target else []
        stages = {
            "A": {"locus": "episode" if refs else "none",
                  "note": "asks about something said in an earlier session" if refs else "needs nothing earlier"},
            "B": {"episode_refs": refs, "grounding_dayids": refs, "referent_on_screen": "no",
                  "note": f"{target} says it" if refs else "nothing to cite"},
            "C": {"tier": "intermediate" if refs else "basic", "category": "event_recall" if refs else "chitchat",
                  "rule": "one earlier exchange answers it" if refs else "no past needed", "note": "rule applied"},
            "D": {"reference_reply": "You told me about that earlier." if refs else "Tell me more.",
                  "note": "only what was said before"},
            "E": {"scoreable": True, "note": "checks pass"},
        }
        cli("annotate", "set", rel, p["key"], "--annotator", "rita", input=json.dumps(stages))
        done[p["key"]] = target
    return done


def test_every_step_ran_through_the_product(study):
    assert "noted for reply" in study["steps"]["tag"] and "you forgot something I told you" in study["steps"]["tag"]
    assert "noted for reply" in study["steps"]["thumb"]
    assert "consent withdrawn" in study["withdraw"]
    # cara withdrew: two participants are exported, every participant message a pending probe
    assert study["steps"]["export"].count("U0") == 2 and "9 messages" not in study["steps"]["export"]
    assert "0 started but unfinished; release check passed" in study["steps"]["finalize"]
    assert "15 probes finalized (15 scoreable)" in study["steps"]["finalize"]
    # ben's first two turns ran the configured arm, the trial's from his second day on
    assert [t["arm"]["assignment"] for t in study["ben_traces"]] == ["settings"] * 2 + ["randomized"] * 4
    assert all(t["arm"]["control"] == "never/hybrid/earlier_turns" for t in study["ben_traces"][2:])


def test_a_fresh_export_passes_release_check(study):
    r = study["check_exported"]
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["checks"] == dict.fromkeys(doc["checks"], 0), doc["failures"]
    assert "15 pending" in " ".join(doc["notes"])


@pytest.fixture(scope="module")
def named_claim(tmp_path_factory):
    """A claim naming someone ("Has a sister called Lena") is exported with the surrogate the
    conversation gives the same person, so `release check` passes every check, `surrogates` included."""
    base = tmp_path_factory.mktemp("named")
    mp = pytest.MonkeyPatch()
    mp.setenv("COMPANION_HOME", str(base / "home"))
    mp.setenv("COMPANION_RESEARCHER_PASSWORD", PASSWORD)
    try:
        cli("researcher", "set-password", "--new-password", PASSWORD)
        cli("consent", "accept", "-p", "dora", "--tz", "UTC")
        cli("chat", "-p", "dora", "--model", "echo", input="my sister Lena moved to Porto last week\n")
        cli("memory", "consolidate", "-p", "dora")
        cli("export", "--out", base / "rel", "--probe-share", "1.0")
        r = CliRunner().invoke(main, ["release", "check", str(base / "rel"), "--json"])
    finally:
        mp.undo()
    return json.loads(r.stdout)


def test_an_export_with_a_named_claim_passes_every_check(named_claim):
    assert named_claim["checks"] == dict.fromkeys(named_claim["checks"], 0), named_claim["failures"]
    assert "surrogates" in named_claim["checks"]


def test_the_release_holds_each_kind_of_row_the_study_stored(study):
    from eval.readers import read_release

    rel = read_release(study["rel"])
    by_size = sorted(rel.participants.values(), key=lambda p: len(p.conversation))
    ben, ana = by_size
    assert len(ana.conversation) == 18 and len(ben.conversation) == 12  # one echo reply a line
    assert {r.sender for r in ana.conversation} == {"user", "companion"}
    assert [(f.rating, f.tag) for f in ben.feedback] == [("down", "forgot"), ("up", None), ("down", None)]
    assert [f.arm for f in ben.feedback] == [study["ben_traces"][k]["arm"]["name"] for k in (2, 4, 3)]
    assert ana.profile, "consolidation derived claims and the release carries them"
    assert "Marek" not in (study["rel"] / [k for k, v in rel.participants.items() if v is ana][0] /
                           "conversation.jsonl").read_text()


def test_finalized_release_passes_and_eval_gives_the_numbers_computed_by_hand(study):
    """Hand computation (W = 2, one echo reply per line, every participant line a proportional probe).

    ana: 9 lines, conversation positions u1..u9 = 0, 2, ..., 16. Recalls: u5 (8) -> u1 (0), u7 (12) ->
    u3 (4), u8 (14) -> u6 (10), u9 (16) -> u2 (2): each outside the two messages before it.
    ben: 6 lines at 0, 2, ..., 10. Recalls: b3 (4) -> b1 (0), b5 (8) -> b2 (2).
    - demand: 6 memory-bearing of 15 scoreable proportional probes, π = 6/15 = 0.4; Wilson 95%
      (z = 1.96): centre (0.4 + z²/30) / (1 + z²/15) = 0.42039, half-width
      z·sqrt(0.4·0.6/15 + z²/900) / (1 + z²/15) = 0.22214 -> [0.1982, 0.6425].
    - retrieval on the 6 probes with gold: recency ranks the messages before a probe newest first,
      so the gold's rank is the distance probe - gold: u5 8, u7 8, u8 4, u9 14, b3 4, b5 6.
      hit@1 = recall@1 = 0/6; hit@5 = 2/6 (u8, b3) = 0.333; hit@10 = 5/6 = 0.833 (all but u9).
      oracle recall@5 = 1.0; broken oracle (another probe's gold: all golds differ) = 0.0.
    - abstention: 15 scoreable probes, 6 positives.
    """
    assert "FAILED" not in study["check_final"] and "15 probes annotated, 0 pending" in study["check_final"]
    assert "demand: 6 of 15 annotated scoreable probes of the proportional stratum (15 drawn) cite the past: " \
           "π = 0.400" in study["check_final"]
    assert sum(v is not None for v in study["annotated"].values()) == 6
    metrics = study["metrics"]

    def metric(track, name, system, subset):
        return next(m for m in metrics if m["track"] == track and m["name"] == name and m["system"] == system
                    and m["subset"] == subset and m["stratum"] == "all" and m.get("average") in (None, "micro"))

    pi = next(m for m in metrics if m["name"] == "demand_rate" and m["stratum"] == "proportional")
    assert (pi["n"], pi["value"]) == (15, pytest.approx(0.4))
    assert pi["interval"] == pytest.approx([0.1982, 0.6425], abs=1e-4)
    for k, want in ((1, 0.0), (5, 2 / 6), (10, 5 / 6)):
        m = metric("retrieval", f"hit@{k}", "recency", "chat:with_gold")
        assert (m["n"], m["value"]) == (6, pytest.approx(want)), (k, m)
    assert metric("retrieval", "recall@5", "oracle", "chat:with_gold")["value"] == 1.0
    assert metric("retrieval", "recall@5", "broken_oracle", "chat:with_gold")["value"] == 0.0
    assert metric("abstention", "auroc", "lexical", "chat:scoreable, y=memory_bearing")["n"] == 15
    assert metric("abstention", "recall", "lexical", "chat:scoreable, y=memory_bearing")["n"] == 6
