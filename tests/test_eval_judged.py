"""The judged tracks (chat, qa, ablation) and reconstruction, on releases small enough to score by hand.

Replies come from the `echo` model through the turn's steps 3-7: it repeats the probe and names the
dayids the prompt recalled. The judge is `tests.plugins.judges:Overlap`, installed as a model backend
through entry points like any third-party one: one point per shared word of four or more letters
(at most 2) for chat, CORRECT when every gold word is in the answer for QA, and a non-judgement
whenever the reply says GARBLE.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from companion.cli import main
from companion.settings import Settings
from eval import judge as J
from eval import reconstruct as RC
from eval.formats import ChatProbe, ConversationRow, Persona, ProfileClaim, QAItem, Trait
from eval.readers import Participant, Release, manifest_for, write_release
from eval.run import run
from memory import embeddings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone(timedelta(hours=1)))


@pytest.fixture(scope="module", autouse=True)
def fast_embedder():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(embeddings, "_default", embeddings.HashEmbedder())
        yield


@pytest.fixture
def overlap_judge(install_plugin):
    install_plugin("judge-models", {"companion.models": {"overlap": "tests.plugins.judges:Overlap"}})
    return "overlap/v1"


def conv(rows):
    """rows: (day, sender, text) -> ConversationRow with dayids day{n}-{j} and increasing times."""
    out, count = [], {}
    for i, (day, sender, text) in enumerate(rows):
        count[day] = count.get(day, 0) + 1
        ts = T0 + timedelta(days=day - 1, minutes=i)
        out.append(ConversationRow(dayid=f"day{day}-{count[day]}", sender=sender, text=text, ts=ts.isoformat()))
    return out


def probe(dayid, grounding, reference, stratum="proportional"):
    return ChatProbe(probe_dayid=dayid, stratum=stratum, scoreable=True, locus="episode" if grounding else "none",
                     grounding_dayids=grounding, tier="basic", referent_on_screen="no", reference_reply=reference)


def tiny_release(path):
    a = Participant("A", conv([
        (1, "user", "my cat Pixel loves tuna"), (1, "companion", "Pixel sounds lovely"),
        (2, "user", "hello again"), (2, "companion", "hi there"),
        (2, "user", "what does Pixel eat"), (2, "companion", "tuna I think"),
        (2, "user", "so sunny today"), (2, "companion", "enjoy")]))
    a.chat_gold = [probe("day2-3", ["day1-1"], "Pixel eats tuna, you told me on day1-1"),
                   probe("day2-5", [], "enjoy the sunny weather")]
    a.qa = [QAItem(id="A-q1", question="What does Pixel eat?", answer="tuna", evidence_dayids=["day1-1"]),
            QAItem(id="A-q2", question="Is tuna what Pixel eats?", answer="tuna", evidence_dayids=["day1-1"]),
            QAItem(id="A-q3", question="GARBLE what is the cat called?", answer="Pixel", evidence_dayids=[])]
    b = Participant("B", conv([
        (1, "user", "my dog Biscuit hates rain"), (1, "companion", "poor Biscuit"),
        (2, "user", "it is raining again"), (2, "companion", "oh no"),
        (2, "user", "how will Biscuit cope"), (2, "companion", "a coat maybe"),
        (2, "user", "GARBLE tell me something"), (2, "companion", "something nice")]))
    b.chat_gold = [probe("day2-3", ["day1-1"], "Biscuit hates rain, as on day1-1"),
                   probe("day2-5", [], "something nice")]
    b.qa = [QAItem(id="B-q1", question="Which pet hates rain?", answer="Biscuit", evidence_dayids=["day1-1"])]
    parts = {"A": a, "B": b}
    return write_release(Release(manifest_for(parts, recent_window=1), parts), path)


def _run(tmp_path, tracks, judge=None, **kw):
    rel = tiny_release(tmp_path / "release")
    # grounded off: the hand-computed scores read which memory the echo model was given
    s = Settings(home=tmp_path / "home", model="echo", grounded="off")
    kw = {"gate": "always", "retriever": "oracle", "ks": [1], **kw}
    return run(tracks, rel, tmp_path / "out", judge=judge, settings=s, progress=False, **kw)


def metric(doc, track, name, stratum="all", subset=None, average="micro", system=None):
    got = [m for m in doc["metrics"] if m["track"] == track and m["name"] == name and m["stratum"] == stratum
           and (subset is None or m["subset"] == subset) and (average is None or m["average"] == average)
           and (system is None or m["system"] == system)]
    assert len(got) == 1, got
    return got[0]


def test_chat_qa_and_ablation_by_hand(tmp_path, overlap_judge):
    doc = _run(tmp_path, ["chat", "qa", "ablation"], judge=overlap_judge)
    # chat, system = always/oracle. A day2-3: reference words {pixel, eats, tuna, told, day1}, reply
    # "You said: what does Pixel eat (I recalled day1-1)" shares {pixel, day1} -> 2; A day2-5 shares
    # {sunny} -> 1; B day2-3 shares {biscuit, day1} -> 2; B day2-5 says GARBLE -> missing, not 0.
    m = metric(doc, "chat", "content_match", subset="chat:all")
    assert m["value"] == pytest.approx(5 / 3) and m["n"] == 3 and m["extra"]["missing"] == 1
    assert metric(doc, "chat", "content_match", subset="chat:all", average="macro")["value"] == pytest.approx(1.75)
    assert metric(doc, "chat", "content_match", subset="chat:memory_bearing")["value"] == 2.0
    assert metric(doc, "chat", "full_match_share", subset="chat:all", average=None)["value"] == pytest.approx(2 / 3)
    assert "1 of 4 judgements missing" in " ".join(doc["tracks"]["chat"]["notes"])

    # qa: A-q1 answer lacks "tuna" -> 0; A-q2 has it -> 1; A-q3 GARBLE -> missing; B-q1 lacks "biscuit" -> 0
    m = metric(doc, "qa", "accuracy", subset="qa:all")
    assert m["value"] == pytest.approx(1 / 3) and m["n"] == 3 and m["extra"]["missing"] == 1
    assert metric(doc, "qa", "accuracy", subset="qa:all", average="macro")["value"] == pytest.approx(0.25)

    # ablation oracle vs recent: gains +1 (A day2-3, memory-bearing), 0 (A day2-5, not), +1 (B day2-3,
    # memory-bearing); B day2-5 has no judgement under either condition and is left out
    ab = {n: metric(doc, "ablation", n, stratum="proportional", average=None, system="oracle vs recent")
          for n in ("delta", "pi", "gamma1", "gamma0", "identity_residual")}
    assert ab["delta"]["value"] == pytest.approx(2 / 3) and ab["delta"]["n"] == 3
    assert ab["pi"]["value"] == pytest.approx(2 / 3)
    assert ab["gamma1"]["value"] == 1.0 and ab["gamma1"]["n"] == 2
    assert ab["gamma0"]["value"] == 0.0 and ab["gamma0"]["n"] == 1
    d, pi, g1, g0 = (ab[n]["value"] for n in ("delta", "pi", "gamma1", "gamma0"))
    assert d == pytest.approx(pi * g1 + (1 - pi) * g0, abs=1e-12) and abs(ab["identity_residual"]["value"]) < 1e-12
    assert all(ab[n]["interval"] for n in ("delta", "pi", "gamma1", "gamma0"))  # two participants: bootstrap
    assert metric(doc, "ablation", "content_match[recent]", stratum="proportional",
                  system="oracle vs recent")["value"] == pytest.approx(3 / 3)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Identity check" in md and "overlap/v1" in md
    for m in doc["metrics"]:  # a number, or the reason there is none
        assert m["value"] is not None or m["reason"], m

    # every reply and judgement is traceable, and no reply entered the corpus timeline
    rows = [json.loads(x) for x in (tmp_path / "out" / "outcomes.jsonl").read_text().splitlines()]
    garbled = [r for r in rows if r["item"] == "A-q3"]
    assert garbled and garbled[0]["judgement"]["value"] is None
    assert garbled[0]["judgement"]["reason"].startswith("unparseable judgement")
    later = [r for r in rows if r["participant"] == "A" and r["item"] == "day2-5" and r["system"] == "oracle"]
    assert later[0]["reply"] == "You said: so sunny today"  # the earlier probe's reply was not stored


def test_replies_are_not_stored(tmp_path, overlap_judge):
    from memory import messages
    from memory.store import Store

    _run(tmp_path, ["chat"], judge=overlap_judge, work=tmp_path / "work")
    store = Store(tmp_path / "work")
    try:
        assert messages.next_ordinal(store, "A") == 9 and messages.next_ordinal(store, "B") == 9
    finally:
        store.close()


def test_without_a_judge_the_judged_tracks_are_not_computed(tmp_path):
    doc = _run(tmp_path, ["chat", "qa", "ablation", "demand"])
    for t in ("chat", "qa", "ablation"):
        assert "needs --judge MODEL" in doc["tracks"][t]["not_computed"] and "not 0" in doc["tracks"][t]["not_computed"]
        assert not [m for m in doc["metrics"] if m["track"] == t]
    assert "reply_model" not in doc and "judge" not in doc  # no reply was generated for nobody to read
    assert "Not computed" in (tmp_path / "out" / "report.md").read_text()


def test_a_judge_that_never_answers_the_format_gives_missing_not_zero(tmp_path):
    # the echo model as judge repeats the prompt: never a label line
    doc = _run(tmp_path, ["qa"], judge="echo")
    m = metric(doc, "qa", "accuracy", subset="qa:all")
    assert m["value"] is None and m["n"] == 0 and "unparseable judgement" in m["reason"]
    assert "4 of 4 judgements missing" in " ".join(doc["tracks"]["qa"]["notes"])


def test_a_reply_model_fault_is_missing_with_the_fault(tmp_path, overlap_judge, fault_models):
    doc = _run(tmp_path, ["qa"], judge=overlap_judge, model="failing/x")
    m = metric(doc, "qa", "accuracy", subset="qa:all")
    assert m["value"] is None and m["n"] == 0 and "no reply: generate: ModelError" in m["reason"]
    assert "backend exploded" in m["reason"]
    rows = [json.loads(x) for x in (tmp_path / "out" / "outcomes.jsonl").read_text().splitlines()]
    assert rows and all(r["reply"] is None and r["judgement"]["value"] is None for r in rows)


def test_misuse_on_controls_by_context_condition(tmp_path, overlap_judge):
    # probes that need nothing: A day2-5 "so sunny today" and B day2-5 (GARBLE: never judged). With no
    # retrieval (none) and oracle evidence (empty gold) the echo reply names no dayid; top-k recency
    # applies earlier messages and the reply names them: it brings in the past.
    doc = _run(tmp_path, ["abstention", "chat"], judge=overlap_judge, ks=[5], gate="always", retriever="recency")
    got = {m["system"]: m for m in doc["metrics"] if m["name"] == "misuse_on_controls" and m["stratum"] == "no referent"}
    assert set(got) == {"context: none", "context: oracle", "context: top-k retrieved"}
    assert (got["context: none"]["value"], got["context: none"]["n"], got["context: none"]["extra"]["missing"]) == (0.0, 1, 1)
    assert got["context: oracle"]["value"] == 0.0 and got["context: top-k retrieved"]["value"] == 1.0
    assert got["context: top-k retrieved"]["interval"] == pytest.approx((0.2065, 1.0), abs=1e-3)  # Wilson, 1 of 1
    [ctl] = [m for m in doc["metrics"] if m["name"] == "misuse_on_controls" and m["stratum"] == "control"
             and m["system"] == "context: none"]
    assert ctl["value"] is None and ctl["reason"] == "no such probes"
    assert "Misuse" in (tmp_path / "out" / "report.md").read_text()


def test_strict_parse():
    ok = J.parse(J.CHAT_PROMPT, "\n  score: 2 \nbecause")
    assert ok.value == 2.0 and ok.reason is None
    assert J.parse(J.QA_PROMPT, "VERDICT: incorrect").value == 0.0
    for bad in ("SCORE: 3", "The score is 2", "SCORE: 2/2", "", "**SCORE: 2**", "I'd say SCORE: 1"):
        j = J.parse(J.CHAT_PROMPT, bad)
        assert j.value is None and j.reason.startswith("unparseable judgement"), bad
    assert J.parse(J.QA_PROMPT, "VERDICT: PARTIALLY CORRECT").value is None


def test_cli_judge_and_model_options(tmp_path, overlap_judge):
    rel = tiny_release(tmp_path / "release")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["eval", "qa", "--corpus", str(rel), "--out", str(out), "--no-progress",
                                  "--data-dir", str(tmp_path / "home"), "--gate", "always", "--retriever", "oracle",
                                  "--model", "echo", "--judge", overlap_judge], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    assert "--model echo --judge overlap/v1" in doc["command"] and doc["judge"]["prompts"] == list(J.PROMPTS)
    # By hand, the echo model's replies: A-q1 echoes the question (no "tuna"), A-q2 echoes "tuna", A-q3 is
    # answered from memory ("It's Pixel. You told me ...": memory.answers), B-q1 names no Biscuit: 2 of 4
    assert metric(doc, "qa", "accuracy", subset="qa:all")["value"] == pytest.approx(2 / 4)


# --- reconstruction ---------------------------------------------------------------------------


def test_profile_and_persona_matching_by_hand():
    gold = [{"text": "Works as a nurse", "verdict": "supported", "valid_to": None},
            {"text": "Has a cat called Pixel", "verdict": "supported", "valid_to": None},
            {"text": "Lives in Berlin", "verdict": "supported", "valid_to": None},
            {"text": "Lives in Hamburg", "verdict": "supported", "valid_to": "day3-1"},
            {"text": "Is 34 years old", "verdict": "pending", "valid_to": None},
            {"text": "Has two children", "verdict": "unsupported", "valid_to": None}]
    system = ["Works as a nurse", "Has a cat called Pixel", "Is 34 years old", "Lives in Hamburg",
              "Has two children", "Is from Lisbon"]
    c = RC.score_profile(system, gold)
    # TP nurse, cat; FN Berlin; ignored the pending age; FP stale Hamburg, unsupported children, Lisbon
    assert (c["TP"], c["FP"], c["FN"], c["ignored"]) == (2, 3, 1, 1)
    assert RC.f1(2, 3, 1) == pytest.approx(4 / 8)
    whys = {x["system"]: x.get("why") for x in c["items"] if x["unit"] == "FP"}
    assert whys == {"Lives in Hamburg": "stale (superseded in gold)", "Has two children": "gold verdict unsupported",
                    "Is from Lisbon": "not in the gold profile"}

    gold_p = {"slots": {"occupation": {"value": "nurse"}, "residence": {"value": "Berlin"},
                        "pet": {"value": "cat (Pixel)"}},
              "big_five": {"openness": {"value": "high"}},
              "descriptions": [{"facet": "family", "text": "Close to their sister Lena"}]}
    sys_p = {"slots": {"occupation": {"value": "nurse"}, "residence": {"value": "Hamburg"},
                       "pet": {"value": "cat called Pixel"}, "age": {"value": "34"}},
             "big_five": {}, "descriptions": [{"facet": "family", "text": "Very close to sister Lena"}]}
    c = RC.score_persona(sys_p, gold_p)
    # TP occupation, pet, family description; residence wrong -> FP + FN; age FP; openness FN
    assert (c["TP"], c["FP"], c["FN"]) == (3, 2, 2)
    assert RC.f1(3, 2, 2) == pytest.approx(6 / 10) and RC.precision(3, 2, 2) == pytest.approx(3 / 5)


def test_matching_rule():
    assert RC.match("Sister Lena lives in Porto", "Sister lives in Porto")
    assert not RC.match("Works as a nurse", "Works as a nurse (night shifts) at the children's hospital")
    assert not RC.match("Lives in Berlin", "Lives in Hamburg")
    assert RC.match("high", "High") and not RC.match("high", "low")


def test_reconstruction_end_to_end(tmp_path):
    p = Participant("N", conv([
        (1, "user", "I'm a nurse."), (1, "companion", "Nice!"),
        (1, "user", "I have a cat called Pixel."), (1, "companion", "Cute."),
        (2, "user", "I'm 34."), (2, "companion", "Ok."),
        (2, "user", "I'm from Lisbon."), (2, "companion", "Lovely city.")]))
    p.profile = [ProfileClaim(id="c1", text="Works as a nurse", verdict="supported", source_dayids=["day1-1"]),
                 ProfileClaim(id="c2", text="Has a cat called Pixel", verdict="supported", source_dayids=["day1-3"]),
                 ProfileClaim(id="c3", text="Lives in Berlin", verdict="supported", source_dayids=["day1-1"]),
                 ProfileClaim(id="c4", text="Is 34 years old", verdict="pending", source_dayids=["day2-1"])]
    p.persona = Persona(slots={"occupation": Trait(value="nurse", evidence=["day1-1"])})
    parts = {"N": p}
    rel = write_release(Release(manifest_for(parts, recent_window=1), parts), tmp_path / "release")
    doc = run(["reconstruction"], rel, tmp_path / "out", settings=Settings(home=tmp_path / "home"), progress=False)
    f = metric(doc, "reconstruction", "f1", stratum="participant:N", subset="profile", average=None)
    # TP nurse, cat; FP "Is from Lisbon"; FN Berlin; the age claim matches a pending gold claim: not counted
    assert (f["extra"]["TP"], f["extra"]["FP"], f["extra"]["FN"], f["extra"]["ignored"]) == (2, 1, 1, 1)
    assert f["value"] == pytest.approx(2 / 3)
    assert metric(doc, "reconstruction", "precision", stratum="participant:N", subset="profile",
                  average=None)["value"] == pytest.approx(2 / 3)
    details = doc["tracks"]["reconstruction"]["details"]["N"]
    assert {"unit": "TP", "field": "slots.occupation", "system": "nurse", "gold": "nurse"} in details["persona"]
    cost = metric(doc, "reconstruction", "tokens_processed", stratum="participant:N", subset="cost", average=None)
    assert cost["n"] == 8 and cost["value"] == sum(max(1, (len(r.text) + 3) // 4) for r in p.conversation)


def test_reconstruction_without_gold_is_not_computed(tmp_path):
    rel = tiny_release(tmp_path / "release")  # no profile.jsonl, no persona.json
    doc = run(["reconstruction"], rel, tmp_path / "out", settings=Settings(home=tmp_path / "home"), progress=False)
    assert "no gold profile.jsonl or persona.json" in doc["tracks"]["reconstruction"]["not_computed"]
    assert doc["store"].startswith("not needed")  # found out before ingesting anything
