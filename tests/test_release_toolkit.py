"""The release toolkit end to end: a consented chat (echo model) -> export -> scripted annotation
-> `release check` passes -> `companion eval retrieval abstention` scores the annotated probes.
Then one planted defect per check, each named with its file and line."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import annotate as A
from consent import releasecheck

# The participant tells the companion things, then asks back about them later; ordinary talk between.
CHAT = [
    "my sister Lena planted tomatoes in the garden",
    "work was long today, the quarterly report again",
    "I made pasta with spinach for dinner",
    "the train was late again this morning",
    "do you remember what Lena planted in the garden?",
    "I am reading a novel about sailors",
    "my knee hurts after the run",
    "how is that quarterly report thing going to end, any idea?",
    "weekend plans: hiking in the hills",
    "remind me, what did I cook with spinach?",
    "the novel about sailors is getting good",
    "is my knee going to be fine for the hiking?",
]
# What each line refers back to (by the line it recalls), so any drawn probe can be annotated.
REFERS = {4: 0, 7: 1, 9: 2, 10: 5, 11: 6}
W = 2  # recent window


def run(args, home, input=None, ok=True):
    r = CliRunner().invoke(main, [*args, "--data-dir", str(home)] if args[0] not in ("annotate",) else args,
                           input=input, catch_exceptions=False)
    if ok:
        assert r.exit_code == 0, r.output
    return r


def annotate_all(rel, annotator="rita", flip=()):
    """Annotate every pending probe the way the script says: a probe recalling a line outside the
    recent window is an episode grounded on it; one whose line is on screen is thread; else none."""
    keys = []
    for p in A.probes(rel):
        i = CHAT.index(p.text) if p.text in CHAT else None
        conv = p.conversation
        recalled = REFERS.get(i)
        target = next((c["dayid"] for c in conv if c["sender"] == "user" and c["text"] == CHAT[recalled]), None) \
            if recalled is not None else None
        window = [c["dayid"] for c in conv[max(0, p.at - W):p.at]]
        if target and target not in window:
            locus, refs, tier = "episode", [target], "intermediate"
        else:
            locus, refs, tier = ("thread" if target else "none"), [], "basic"
        if p.key in flip:  # a second annotator who reads this one differently
            locus, refs, tier = "none", [], "edge"
        stages = {
            "A": {"locus": locus, "note": f"points at {'an earlier message' if refs else 'nothing earlier'}"},
            "B": {"episode_refs": refs, "grounding_dayids": refs, "referent_on_screen": "no",
                  "note": "checked the cited message says it" if refs else "nothing to cite"},
            "C": {"tier": tier, "category": "event_recall" if refs else "chitchat",
                  "rule": "one earlier message answers it" if refs else "no past needed", "note": "rule applied"},
            "D": {"reference_reply": "You told me about that earlier." if refs else "Tell me more.",
                  "note": "only what was said before"},
            "E": {"scoreable": True, "note": "all checks pass"},
        }
        r = CliRunner().invoke(main, ["annotate", "set", str(rel), p.key, "--annotator", annotator],
                               input=json.dumps(stages), catch_exceptions=False)
        assert r.exit_code == 0, r.output
        keys.append((p.key, locus, refs))
    return keys


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    base = tmp_path_factory.mktemp("rel")
    home = base / "home"
    run(["consent", "accept", "-p", "ana", "--tz", "UTC"], home)
    out = run(["chat", "-p", "ana", "--model", "echo"], home, input="\n".join(CHAT) + "\n").output
    assert out.count("You said") == len(CHAT)
    run(["export", "--out", str(base / "release"), "--seed", "4", "--recent-window", str(W),
         "--probe-share", "0.5"], home)
    return base, home


@pytest.fixture(scope="module")
def finalized(exported):
    base, home = exported
    rel = base / "final"
    shutil.copytree(base / "release", rel)
    keys = annotate_all(rel)
    r = CliRunner().invoke(main, ["annotate", "finalize", str(rel), "--annotator", "rita"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return rel, home, keys


def test_export_records_its_blind_draw_and_passes_the_check(exported):
    base, home = exported
    manifest = json.loads((base / "release" / "manifest.json").read_text())
    s = manifest["sampling"]
    assert s["seed"] == 4 and s["share"] == 0.5
    assert s["participants"]["U01"]["population"] == len(CHAT) and s["participants"]["U01"]["drawn"] == 6
    r = run(["release", "check", str(base / "release"), "--surrogate-map"], home)
    assert "sampling     ok" in r.output and "6 pending" in r.output
    assert "Lena" not in (base / "release" / "U01" / "conversation.jsonl").read_text()


def test_annotated_release_passes_and_eval_scores_the_probes(finalized, tmp_path):
    rel, home, keys = finalized
    episodes = [k for k, locus, _ in keys if locus == "episode"]
    assert len(keys) == 6 and episodes  # the seed draws probes of both kinds
    rows = [json.loads(x) for x in (rel / "U01" / "chat_gold.jsonl").read_text().splitlines()]
    done = [g for g in rows if g["annotation"] == "done"]
    assert len(done) == 6 and all(g["scoreable"] for g in done)
    assert all(set(g["trace"]) == set("ABCDE") and g["trace"]["B"]["note"] for g in done)
    r = run(["release", "check", str(rel)], home)
    assert "FAILED" not in r.output and "6 probes annotated, 0 pending" in r.output

    out = tmp_path / "report"
    run(["eval", "retrieval", "abstention", "demand", "--corpus", str(rel), "--out", str(out), "--gate", "lexical"],
        home)
    metrics = json.loads((out / "report.json").read_text())["metrics"]
    outcomes = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]

    def metric(track, name, system, subset):
        return next(m for m in metrics if m["track"] == track and m["name"] == name and m["system"] == system
                    and m["subset"] == subset and m["stratum"] == "all" and m.get("average") in (None, "micro"))

    # retrieval scores exactly the annotated probes that cite the past, on their annotated grounding
    want = {k.split("/")[1] for k in episodes}
    assert {o["item"] for o in outcomes if o["track"] == "retrieval"} == want
    assert metric("retrieval", "recall@5", "oracle", "chat:with_gold")["value"] == 1.0
    assert metric("retrieval", "recall@5", "oracle", "chat:with_gold")["n"] == len(want)
    assert metric("retrieval", "recall@5", "broken_oracle", "chat:with_gold")["value"] == 0.0
    # abstention: the 6 annotated probes and the one cold open, the episodes as positives
    assert metric("abstention", "auroc", "lexical", "chat:scoreable, y=memory_bearing")["n"] == 7
    assert metric("abstention", "recall", "lexical", "chat:scoreable, y=memory_bearing")["n"] == len(want)
    # π from the proportional stratum only: episodes among the 6 drawn probes
    pi = next(m for m in metrics if m["name"] == "demand_rate" and m["stratum"] == "proportional")
    assert pi["n"] == 6 and pi["value"] == pytest.approx(len(want) / 6)
