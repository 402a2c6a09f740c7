"""The release toolkit end to end: a consented chat (echo model) -> export -> scripted annotation
-> `release check` passes -> `companion eval retrieval abstention` scores the annotated probes.
Then one planted defect per check, each named with its file and line."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta

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
        conv = p.conversation
        users = [c["dayid"] for c in conv if c["sender"] == "user"]  # the i-th is CHAT[i] (names pseudonymized)
        recalled = REFERS.get(users.index(p.row["probe_dayid"]))
        target = users[recalled] if recalled is not None else None
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
         "--probe-share", "1.0"], home)  # every message a probe: the test does not depend on the draw's key
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
    assert s["seed"] == 4 and s["share"] == 1.0
    assert s["participants"]["U01"]["population"] == len(CHAT) and s["participants"]["U01"]["drawn"] == len(CHAT)
    r = run(["release", "check", str(base / "release"), "--surrogate-map"], home)
    assert "sampling     ok" in r.output and f"{len(CHAT)} pending" in r.output
    assert "Lena" not in (base / "release" / "U01" / "conversation.jsonl").read_text()


def test_annotated_release_passes_and_eval_scores_the_probes(finalized, tmp_path):
    rel, home, keys = finalized
    episodes = [k for k, locus, _ in keys if locus == "episode"]
    assert len(keys) == len(CHAT) and len(episodes) == 5  # REFERS: five lines recall one outside the window
    rows = [json.loads(x) for x in (rel / "U01" / "chat_gold.jsonl").read_text().splitlines()]
    done = [g for g in rows if g["annotation"] == "done"]
    assert len(done) == len(CHAT) and all(g["scoreable"] for g in done)
    assert all(set(g["trace"]) == set("ABCDE") and g["trace"]["B"]["note"] for g in done)
    r = run(["release", "check", str(rel)], home)
    assert "FAILED" not in r.output and f"{len(CHAT)} probes annotated, 0 pending" in r.output
    assert "demand: 5 of 12 annotated scoreable probes of the proportional stratum (12 drawn) cite the past: " \
           "π = 0.417" in r.output

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
    # abstention: every annotated probe, the episodes as positives
    assert metric("abstention", "auroc", "lexical", "chat:scoreable, y=memory_bearing")["n"] == len(CHAT)
    assert metric("abstention", "recall", "lexical", "chat:scoreable, y=memory_bearing")["n"] == len(want)
    # π from the proportional stratum only: episodes among the drawn probes
    pi = next(m for m in metrics if m["name"] == "demand_rate" and m["stratum"] == "proportional")
    assert pi["n"] == len(CHAT) and pi["value"] == pytest.approx(5 / len(CHAT))


# --- one planted defect per check ---------------------------------------------------------------------


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _put(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _episode_line(gold):
    return next(i for i, g in enumerate(gold) if g["annotation"] == "done" and g["grounding_dayids"])


def plant_files(rel):
    (rel / "U01" / "data").symlink_to(rel.parent)  # a link out of the release: finalize would copy what it reaches
    return "U01/data", None


def plant_schema(rel):
    conv = _rows(rel / "U01/conversation.jsonl")
    del conv[1]["ts"]  # a companion reply without its time
    _put(rel / "U01/conversation.jsonl", conv)
    return "U01/conversation.jsonl", 2


def plant_dayids(rel):
    gold = _rows(rel / "U01/chat_gold.jsonl")
    i = _episode_line(gold)
    gold[i]["grounding_dayids"] = gold[i]["episode_refs"] = ["day9-1"]  # a claim citing a missing dayid
    _put(rel / "U01/chat_gold.jsonl", gold)
    return "U01/chat_gold.jsonl", i + 1


def plant_order(rel):
    conv = _rows(rel / "U01/conversation.jsonl")
    earlier = datetime.fromisoformat(conv[3]["ts"]) - timedelta(days=1)
    conv[4]["ts"] = earlier.isoformat()  # a message dated before the one above it
    _put(rel / "U01/conversation.jsonl", conv)
    return "U01/conversation.jsonl", 5


def plant_window(rel):
    gold = _rows(rel / "U01/chat_gold.jsonl")
    i = _episode_line(gold)
    gold[i]["grounding_dayids"] = gold[i]["episode_refs"] = [gold[i]["recent_context"][-1]]  # V2 broken
    _put(rel / "U01/chat_gold.jsonl", gold)
    return "U01/chat_gold.jsonl", i + 1


def plant_sampling(rel):
    gold = _rows(rel / "U01/chat_gold.jsonl")
    del gold[_episode_line(gold)]  # a hard probe quietly dropped from the blind stratum: π would move
    _put(rel / "U01/chat_gold.jsonl", gold)
    m = json.loads((rel / "manifest.json").read_text())
    m["counts"]["U01"]["chat_rows"] -= 1  # and the counts kept in step, so only the draw tells
    (rel / "manifest.json").write_text(json.dumps(m))
    return "U01/chat_gold.jsonl", None


def plant_identifiers(rel):
    conv = _rows(rel / "U01/conversation.jsonl")
    conv[2]["text"] += " (write to me at lena.vogt@gmail.com)"
    _put(rel / "U01/conversation.jsonl", conv)
    return "U01/conversation.jsonl", 3


def plant_surrogates(rel):
    conv = _rows(rel / "U01/conversation.jsonl")
    said = " ".join(c["text"] for c in conv)
    pool = releasecheck.surrogate_pools()
    used = next(x for x in pool if f" {x} " in f" {said} ")
    other = next(x for x in pool if x not in said and " " not in x)
    assert used  # the conversation does carry a surrogate
    gold = _rows(rel / "U01/chat_gold.jsonl")
    i = _episode_line(gold)
    gold[i]["reference_reply"] = f"Say hi to {other} from me."  # a name from another map than the conversation's
    _put(rel / "U01/chat_gold.jsonl", gold)
    return "U01/chat_gold.jsonl", i + 1


def plant_counts(rel):
    m = json.loads((rel / "manifest.json").read_text())
    m["counts"]["U01"]["messages"] += 1
    (rel / "manifest.json").write_text(json.dumps(m))
    return "manifest.json", None


def plant_annotation(rel):
    gold = _rows(rel / "U01/chat_gold.jsonl")
    i = _episode_line(gold)
    gold[i]["trace"]["C"]["note"] = ""  # the tier's reasoning was not kept
    _put(rel / "U01/chat_gold.jsonl", gold)
    return "U01/chat_gold.jsonl", i + 1


PLANTS = {c: globals()[f"plant_{c}"] for c in releasecheck.CHECKS}


@pytest.mark.parametrize("check", releasecheck.CHECKS)
def test_each_planted_defect_is_named_by_its_check(finalized, tmp_path, check):
    rel, home, _ = finalized
    copy = tmp_path / "rel"
    shutil.copytree(rel, copy)
    where, line = PLANTS[check](copy)
    report = releasecheck.check(copy)
    assert {f.check for f in report.failures} == {check}, [str(f) for f in report.failures]
    assert any(f.file == where and (line is None or f.row == line) for f in report.failures), \
        [str(f) for f in report.failures]


def test_release_check_cli_names_check_file_and_line_and_exits_nonzero(finalized, tmp_path):
    rel, home, _ = finalized
    copy = tmp_path / "rel"
    shutil.copytree(rel, copy)
    where, line = plant_window(copy)
    r = run(["release", "check", str(copy)], home, ok=False)
    assert r.exit_code == 1
    assert "window       FAILED (2)" in r.output  # grounding_dayids and episode_refs and f"{where} line {line}:" in r.output
    assert "dayids       ok" in r.output


def test_finalize_refuses_a_release_that_fails_the_check_and_changes_nothing(exported, tmp_path):
    base, home = exported
    rel = tmp_path / "rel"
    shutil.copytree(base / "release", rel)
    annotate_all(rel)
    plant_counts(rel)
    before = (rel / "U01/chat_gold.jsonl").read_text()
    r = CliRunner().invoke(main, ["annotate", "finalize", str(rel), "--annotator", "rita"])
    assert r.exit_code == 2 and "counts: manifest.json" in r.output
    assert (rel / "U01/chat_gold.jsonl").read_text() == before


# --- annotation rules ---------------------------------------------------------------------------------------


def test_stages_in_order_evidence_checked_and_drafts_need_a_person(exported, tmp_path):
    base, home = exported
    rel = tmp_path / "rel"
    shutil.copytree(base / "release", rel)
    key = "U01/day1-15"  # recalls line 1 (day1-3); its recent window is day1-13, day1-14
    with pytest.raises(A.AnnotationError, match="stage C comes after A, B"):
        A.set_stage(rel, key, "C", {"tier": "basic", "category": "x", "rule": "r", "note": "n"}, "rita")
    with pytest.raises(A.AnnotationError, match="note"):
        A.set_stage(rel, key, "A", {"locus": "episode", "note": "  "}, "rita")
    A.set_stage(rel, key, "A", {"locus": "episode", "note": "asks about the report"}, "rita")
    with pytest.raises(A.AnnotationError, match="inside the recent window"):
        A.set_stage(rel, key, "B", {"episode_refs": ["day1-14"], "grounding_dayids": ["day1-14"],
                                    "referent_on_screen": "no", "note": "n"}, "rita")
    with pytest.raises(A.AnnotationError, match="comes after the probe"):
        A.set_stage(rel, key, "B", {"episode_refs": ["day1-16"], "grounding_dayids": ["day1-16"],
                                    "referent_on_screen": "no", "note": "n"}, "rita")

    # a model's draft is stored but does not count until a person confirms it
    answer = json.dumps({"episode_refs": ["day1-3"], "profile_refs": [], "grounding_dayids": ["day1-3"],
                         "referent_on_screen": "no", "note": "line day1-3 is the report"})
    prompts = []
    A.draft(rel, key, "B", "rita", "openai/some-capable-model", lambda p: prompts.append(p) or answer)
    assert "day1-3 user: work was long today" in prompts[0] and "day1-13" in prompts[0]
    with pytest.raises(A.AnnotationError, match="B, not yet confirmed"):
        A.set_stage(rel, key, "C", {"tier": "basic", "category": "x", "rule": "r", "note": "n"}, "rita")
    with pytest.raises(A.AnnotationError, match="cannot draft"):
        A.draft(rel, key, "C", "rita", "local/smollm2-135m", lambda p: "{}")
    rec = A.confirm(rel, key, "B", "rita")
    assert rec["confirmed"] and rec["by"] == "rita" and rec["drafted_by"] == "openai/some-capable-model"
    # changing stage A makes B stale: it has to be done again
    A.set_stage(rel, key, "A", {"locus": "none", "note": "second thoughts"}, "rita")
    assert set(A.state(rel, "rita")[key]) == {"A"}


def test_history_is_searchable_and_excludes_the_recent_window(exported):
    base, _ = exported
    p = A.probe(base / "release", "U01/day1-15")
    assert [r["dayid"] for r in A.window(base / "release", p)] == ["day1-13", "day1-14"]
    hits = A.history(base / "release", p, "quarterly report")
    assert [r["dayid"] for r in hits] == ["day1-3", "day1-4"]  # the message and the echo of it


# --- agreement ----------------------------------------------------------------------------------------------


def test_cohen_kappa_hand_case():
    # po = 3/4; pe = (2/4)(1/4) + (2/4)(3/4) = 1/2; kappa = (3/4 - 1/2) / (1/2) = 1/2
    assert A.cohen_kappa(["e", "e", "n", "n"], ["e", "n", "n", "n"]) == pytest.approx(0.5)
    assert A.cohen_kappa(["n", "n"], ["n", "n"]) is None  # chance agreement 1: undefined, not 1.0


def test_two_annotators_agreement(exported, tmp_path):
    base, _ = exported
    rel = tmp_path / "rel"
    shutil.copytree(base / "release", rel)
    keys = annotate_all(rel, "rita")
    assert sorted(k for k, locus, _ in keys if locus == "episode") == [
        "U01/day1-15", "U01/day1-19", "U01/day1-21", "U01/day1-23", "U01/day1-9"]
    annotate_all(rel, "sam", flip={"U01/day1-15"})
    r = CliRunner().invoke(main, ["annotate", "agreement", str(rel), "--annotators", "rita,sam", "--json"])
    got = json.loads(r.output)
    # locus over 12 probes: rita 5 episode / 7 none, sam 4 / 8, one disagreement:
    # po = 11/12 = 132/144, pe = (5/12)(4/12) + (7/12)(8/12) = 76/144 -> kappa (132 - 76) / (144 - 76) = 14/17
    assert got["locus"]["n"] == 12 and got["locus"]["kappa"] == pytest.approx(14 / 17)
    # tier: rita 5 intermediate / 7 basic, sam 4 intermediate / 7 basic / 1 edge:
    # pe = (5/12)(4/12) + (7/12)(7/12) = 69/144 -> kappa (132 - 69) / (144 - 69) = 63/75
    assert got["tier"]["kappa"] == pytest.approx(63 / 75)
    assert got["demand"]["kappa"] == pytest.approx(14 / 17) and got["demand"]["disagreements"] == ["U01/day1-15"]


def test_a_profile_claim_citing_a_missing_dayid_is_named(finalized, tmp_path):
    rel, home, _ = finalized
    copy = tmp_path / "rel"
    shutil.copytree(rel, copy)
    claim = {"id": "c0001", "text": "Grows tomatoes", "category": "hobby", "confidence": 0.9, "valid_from": "day1-1",
             "valid_to": None, "source_dayids": ["day1-1", "day7-3"], "verdict": "supported"}
    _put(copy / "U01/profile.jsonl", [claim])
    m = json.loads((copy / "manifest.json").read_text())
    m["counts"]["U01"]["claims"] = 1
    (copy / "manifest.json").write_text(json.dumps(m))
    report = releasecheck.check(copy)
    assert [str(f) for f in report.failures] == [
        "dayids: U01/profile.jsonl line 1: field 'source_dayids': 'day7-3' is not in U01's conversation"]
