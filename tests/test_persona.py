"""Persona (issue 4, item 3): the rule-based persona extractor on a fixture conversation against
persona items written by hand (precision and recall computed below), negation, as-of reads,
supersession with history, deletion without re-extraction, and the persona.json shape."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import erasure
from eval.formats import Persona
from memory import extract, messages, persona, persona_rules
from memory.messages import Message
from memory.store import StoreError

# sender, text. Comments: what a careful human reads as stated about the speaker (the gold).
FIXTURE = [
    ("user", "Honestly, I'm a real introvert."),                                  # 1  extraversion low
    ("companion", "You seem like a real introvert who loves trying new things."),  # 2  - companion
    ("user", "I love trying new things, though: new foods, new places."),         # 3  openness high
    ("user", "I always plan everything ahead."),                                  # 4  conscientiousness high
    ("user", "I'm not an introvert at work, and I don't think I'm shy."),         # 5  - negated
    ("user", "I worry about everything."),                                        # 6  neuroticism high
    ("user", "Would I be an extrovert if I moved to Lisbon?"),                    # 7  - question
    ("user", "I can't stand people who chew loudly."),                            # 8  quirk
    ("user", "I take ages to decide, so I always ask my sister for advice."),     # 9  decides slowly; consults
    ("user", 'My boss says "I\'m so disorganised" about herself.'),               # 10 - someone else's words
    ("user", "I'm pretty easygoing."),                                            # 11 agreeableness high
    ("user", "When I'm stressed, I go for a long run."),                          # 12 coping
    ("user", "I'm such an introvert, big crowds drain me."),                      # 13 extraversion low
    ("user", "I work best late at night."),                                       # 14 work conditions
    ("user", "I never said I was shy."),                                          # 15 - past, not a habit
    ("user", "I'm a night owl."),                                                 # 16 chronotype evening
    ("user", "If I were braver I'd be a party animal."),                          # 17 - hypothetical
    ("user", "My friends think I'm stubborn, but I'm just careful."),             # 18 - others' view, disputed
    ("user", "I get anxious before every presentation and I overthink it all."),  # 19 neuroticism high
    ("user", "I keep my feelings to myself mostly."),                             # 20 expression inward
]

# Gold, written by hand: (dayid, slot, value). Open-ended slots carry their clause.
GOLD = {
    ("day1-1", "big_five:extraversion", "low"),
    ("day1-3", "big_five:openness", "high"),
    ("day1-4", "big_five:conscientiousness", "high"),
    ("day1-6", "big_five:neuroticism", "high"),
    ("day1-8", "quirk:can't stand people who chew loudly", "can't stand people who chew loudly"),
    ("day1-9", "decision_making:speed", "slow"),
    ("day1-9", "decision_making:others", "consults"),
    ("day1-11", "big_five:agreeableness", "high"),
    ("day1-12", "emotional_style:coping:when they're stressed they go for a long run",
     "when they're stressed they go for a long run"),
    ("day1-13", "big_five:extraversion", "low"),
    ("day1-14", "work_style:conditions:works best late at night", "works best late at night"),
    ("day1-16", "daily_rhythm:chronotype", "evening"),
    ("day1-19", "big_five:neuroticism", "high"),
    ("day1-20", "emotional_style:expression", "inward"),
}
# The Big Five a careful reader writes down for this speaker, with the evidence.
GOLD_BIG_FIVE = {
    "extraversion": ("low", ["day1-1", "day1-13"]),
    "openness": ("high", ["day1-3"]),
    "conscientiousness": ("high", ["day1-4"]),
    "neuroticism": ("high", ["day1-6", "day1-19"]),
    "agreeableness": ("high", ["day1-11"]),
}

T0 = datetime(2026, 3, 2, 8, tzinfo=timezone.utc)


def say(store, p, rows, context="personal"):
    n = messages.next_ordinal(store, p)
    return [messages.append(store, p, s, t, context, ts=T0 + timedelta(minutes=10 * (n + i)))
            for i, (s, t) in enumerate(rows)]


@pytest.fixture
def talked(store, ana):
    msgs = say(store, ana, FIXTURE)
    extract.consolidate(store, ana)
    return msgs


def test_rule_extractor_against_hand_written_persona():
    msgs = [Message(i + 1, "ana", i + 1, f"day1-{i + 1}", s, t, "ts", "personal") for i, (s, t) in enumerate(FIXTURE)]
    props = [p for p in extract.RuleExtractor().propose(msgs) if p.kind == "persona"]
    assert all(len(p.source_dayids) == 1 and p.evidence and p.text for p in props)
    found = {(p.source_dayids[0], p.slot, p.value) for p in props}
    # Computed by hand: 13 of the 14 gold items are found; "I keep my feelings to myself
    # mostly" is missed ("mostly" is not a clause end the phrase table accepts); one false
    # positive: "My friends think I'm stubborn, but ..." is read as the speaker's own word.
    assert found - GOLD == {("day1-18", "big_five:agreeableness", "low")}
    assert GOLD - found == {("day1-20", "emotional_style:expression", "inward")}
    tp, fp, fn = len(found & GOLD), len(found - GOLD), len(GOLD - found)
    assert (tp, fp, fn) == (13, 1, 1)
    assert round(tp / (tp + fp), 3) == 0.929  # precision 13/14
    assert round(tp / (tp + fn), 3) == 0.929  # recall 13/14
    # Nothing from the companion, the negations, the question, the quote, the past, the hypothetical.
    assert not {d for d, _, _ in found} & {"day1-2", "day1-5", "day1-7", "day1-10", "day1-15", "day1-17"}
    by = {(p.source_dayids[0], p.slot): p for p in props}
    assert by[("day1-4", "big_five:conscientiousness")].text == "Always plans everything ahead"
    assert by[("day1-9", "decision_making:others")].text == "Always asks their sister for advice"
    assert by[("day1-1", "big_five:extraversion")].intensified  # "a real introvert"
    assert not by[("day1-3", "big_five:openness")].intensified


def test_consolidated_persona_against_the_hand_written_big_five(store, ana, talked):
    report = extract.consolidate(store, ana)
    assert report.messages == 0  # the high-water mark holds
    p = persona.persona(store, ana)
    got = {t: (v["value"], v["evidence"]) for t, v in p["big_five"].items()}
    # 4 of 5 traits agree with the gold, value and evidence; agreeableness does not: the false
    # positive at day1-18 ("stubborn") superseded "easygoing" (day1-11).
    agree = {t for t in GOLD_BIG_FIVE if got.get(t) == GOLD_BIG_FIVE[t]}
    assert agree == {"extraversion", "openness", "conscientiousness", "neuroticism"}
    assert got["agreeableness"] == ("low", ["day1-18"])
    # Strength: 1 message weak, 2 moderate, 3+ strong; an intensifier raises it one step.
    assert p["big_five"]["openness"]["strength"] == "weak"
    assert p["big_five"]["neuroticism"]["strength"] == "moderate"
    assert p["big_five"]["extraversion"]["strength"] == "strong"  # 2 messages, "real", "such an"
    facets = {d["facet"]: d for d in p["descriptions"]}
    assert facets["decision_making"] == {"facet": "decision_making",
                                         "text": "Takes ages to decide; always asks their sister for advice",
                                         "evidence": ["day1-9"], "strength": "weak"}
    assert facets["emotional_style"]["text"] == ("Worries about everything; when they're stressed, they go for "
                                                 "a long run; overthinks it all")
    assert facets["emotional_style"]["evidence"] == ["day1-6", "day1-12", "day1-19"]
    assert facets["work_style"]["text"] == "Always plans everything ahead; works best late at night"
    assert p["quirks"] == [{"text": "Can't stand people who chew loudly", "strength": "weak", "evidence": ["day1-8"]}]
    # Every cited dayid is a participant message.
    users = {m.dayid for m in talked if m.sender == "user"}
    for item in persona.all_(store, ana):
        assert item.source_dayids and set(item.source_dayids) <= users and item.verdict == "supported"


def test_negation_yields_nothing(store, ana):
    say(store, ana, [("user", "I'm not an introvert."), ("user", "I don't think I'm shy."),
                     ("user", "No, I'm not a worrier."), ("user", "I used to worry about everything."),
                     ("user", "I don't worry about everything, just money.")])
    report = extract.consolidate(store, ana)
    assert report.persona == {} and persona.all_(store, ana) == []
    assert persona.persona(store, ana)["big_five"] == {}
    # A phrase whose negation is part of it still counts ("I can't stand ...", "I never plan").
    assert [h.slot for h in persona_rules.find("I never plan anything.")] == ["big_five:conscientiousness"]
    assert persona_rules.find("I never plan anything.")[0].value == "low"
    # A model citing negated words is not believed: verification drops it.
    p = extract.Proposal("persona", "Is shy", ["day1-2"], "I'm shy", slot="big_five:extraversion", value="low",
                         extractor="model")
    v = extract.verify(store, ana, p)
    assert v.verdict == "unsupported" and "negated" in v.reason
    ok = extract.Proposal("persona", "Is shy", ["day1-2"], "I'm shy", slot="big_five:extraversion", value="low")
    say(store, ana, [("user", "Honestly I'm shy.")])
    ok.source_dayids = ["day1-6"]
    assert extract.verify(store, ana, ok).verdict == "supported"


def test_as_of_hides_later_items(store, ana, talked):
    assert persona.persona(store, ana, as_of=1) == {"big_five": {}, "slots": {}, "descriptions": [], "quirks": []}
    at13 = talked[12].ordinal  # a probe at day1-13 sees only what precedes it
    p = persona.persona(store, ana, as_of=at13)
    assert p["big_five"]["extraversion"] == {"value": "low", "strength": "moderate", "evidence": ["day1-1"]}
    assert p["big_five"]["agreeableness"]["value"] == "high"  # the day1-18 statement is still ahead
    assert "work_style" in {d["facet"] for d in p["descriptions"]}
    ws = [d for d in p["descriptions"] if d["facet"] == "work_style"][0]
    assert ws["text"] == "Always plans everything ahead" and ws["evidence"] == ["day1-4"]
    assert "daily_rhythm" not in {d["facet"] for d in p["descriptions"]}
    # The item-level reads agree: nothing current at a bound was derived at or after it.
    for as_of in range(1, len(FIXTURE) + 2):
        items = persona.current(store, ana, as_of=as_of)
        assert all(i.valid_from < as_of and all(int(d.split("-")[1]) < as_of for d in i.source_dayids)
                   for i in items)
        slots = [i.slot for i in items]
        assert len(slots) == len(set(slots))  # one current value per slot, at every bound


def test_supersession_keeps_history_and_one_current_value(store, ana):
    msgs = say(store, ana, [("user", "I'm a real introvert."), ("user", "Crowds drain me."),
                            ("user", "These days I'm very outgoing."), ("user", "I'm a people person, really.")])
    extract.consolidate(store, ana)
    chain = [i for i in persona.all_(store, ana) if i.slot == "big_five:extraversion"]
    assert [(i.value, i.status) for i in chain] == [("low", "superseded"), ("high", "current")]
    low, high = chain
    assert low.superseded_by == high.id and low.to_dayid == msgs[2].dayid and low.valid_to == msgs[2].ordinal
    assert low.source_dayids == ["day1-1", "day1-2"] and low.strength == "strong"  # 2 messages + "real"
    assert high.source_dayids == ["day1-3", "day1-4"] and high.strength == "strong"  # 2 messages + "very"
    assert persona.persona(store, ana, as_of=msgs[2].ordinal)["big_five"]["extraversion"]["value"] == "low"
    assert persona.persona(store, ana)["big_five"]["extraversion"]["value"] == "high"
    for as_of in range(1, 7):
        assert len([i for i in persona.current(store, ana, as_of=as_of) if i.slot == "big_five:extraversion"]) <= 1
    hist = persona.history(store, ana, high.id)
    assert [x["value"] for x in hist["slot_history"]] == ["low", "high"]
    assert [e["event"] for e in hist["events"]] == ["added", "supersedes", "restated"]
    assert [e["event"] for e in persona.history(store, ana, low.id)["events"]] == ["added", "restated", "superseded"]
    # A rebuild arrives at the same history.
    before = [(i.slot, i.value, i.status, i.source_dayids) for i in persona.all_(store, ana)]
    extract.rebuild(store, ana)
    assert [(i.slot, i.value, i.status, i.source_dayids) for i in persona.all_(store, ana)] == before


def test_deletion_and_no_re_extraction(store, ana, talked):
    ext = [i for i in persona.current(store, ana) if i.slot == "big_five:extraversion"][0]
    persona.delete(store, ana, ext.id)
    assert "extraversion" not in persona.persona(store, ana)["big_five"]
    assert store.conn.execute("SELECT COUNT(*) FROM memory_events WHERE kind='persona' AND item_id=?",
                              (ext.id,)).fetchone()[0] == 0
    with pytest.raises(StoreError, match="no persona item"):
        persona.delete(store, ana, ext.id)
    # Not again from the same messages, by consolidation or by a full rebuild.
    extract.consolidate(store, ana)
    report = extract.rebuild(store, ana)
    assert report.tombstoned == 3  # day1-1, and both statements in day1-13
    assert all(i.slot != "big_five:extraversion" for i in persona.all_(store, ana))
    # Nor in other words from the same message (a model may rephrase).
    p = extract.Proposal("persona", "Keeps to themselves", ["day1-1"], "I'm a real introvert",
                         slot="big_five:extraversion", value="low", extractor="model")
    rep = extract.Report(ana, "model")
    extract.merge(store, ana, p, extract.verify(store, ana, p), rep)
    assert rep.tombstoned == 1 and all(i.slot != "big_five:extraversion" for i in persona.all_(store, ana))
    # Said again: remembered again, from the new message only.
    [again] = say(store, ana, [("user", "I'm an introvert, plain and simple.")])
    extract.consolidate(store, ana)
    now = persona.persona(store, ana)["big_five"]["extraversion"]
    assert now == {"value": "low", "strength": "weak", "evidence": [again.dayid]}
    # Erasure takes the persona with everything else.
    erasure.erase(store, ana, vacuum=False)
    assert store.conn.execute("SELECT COUNT(*) FROM memory_persona").fetchone()[0] == 0


def test_bad_input_is_refused(store, ana):
    say(store, ana, [("user", "I'm a real introvert.")])
    src = [("day1-1", 1)]
    with pytest.raises(StoreError, match="unknown Big Five trait"):
        persona.add(store, ana, slot="big_five:grumpiness", value="high", clause="x", sources=src)
    with pytest.raises(StoreError, match="Big Five value"):
        persona.add(store, ana, slot="big_five:openness", value="medium", clause="x", sources=src)
    with pytest.raises(StoreError, match="unknown facet"):
        persona.add(store, ana, slot="hobbies:main", value="chess", clause="x", sources=src)
    with pytest.raises(StoreError, match="at least one source"):
        persona.add(store, ana, slot="big_five:openness", value="high", clause="x", sources=[])
    with pytest.raises(StoreError, match="clause"):
        persona.add(store, ana, slot="big_five:openness", value="high", clause=" ", sources=src)
    with pytest.raises(ValueError):
        persona.strength(0, False)
    # A model's persona lines: malformed ones are skipped, valid ones verified like any other.
    lines = [
        {"kind": "persona", "slot": "big_five:extraversion", "value": "low", "facet": "social",
         "text": "Is a real introvert", "source_dayids": ["day1-1"], "evidence": "I'm a real introvert"},
        {"kind": "persona", "slot": "big_five:charm", "value": "high", "text": "Is charming",
         "source_dayids": ["day1-1"], "evidence": "I'm a real introvert"},
        {"kind": "persona", "slot": "quirk", "text": "Collects spoons", "source_dayids": ["day1-1"],
         "evidence": "I collect spoons"},
    ]
    ex = extract.ModelExtractor(lambda msgs: "\n".join(json.dumps(x) for x in lines), prompt="extract-v2")
    props = ex.propose([Message(1, ana, 1, "day1-1", "user", "I'm a real introvert.", "ts", "personal")])
    assert [(p.slot, p.value) for p in props] == [("big_five:extraversion", "low"),
                                                  ("quirk:collects spoons", "collects spoons")]
    assert "Big Five traits: openness" in ex._system()
    verdicts = [extract.verify(store, ana, p).verdict for p in props]
    assert verdicts == ["supported", "unsupported"]  # nobody said anything about spoons


def test_cli_rebuild_and_export_shape(store, ana, talked, tmp_path):
    store.close()
    r = CliRunner().invoke(main, ["memory", "rebuild", "-p", ana], catch_exceptions=False)
    assert r.exit_code == 0 and "persona {'added'" in r.output
    out = tmp_path / "exp"
    r = CliRunner().invoke(main, ["memory", "export", "-p", ana, "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0 and "5 Big Five traits" in r.output
    raw = json.loads((out / "persona.json").read_text())
    # docs/FORMAT.md: big_five and slots map a name to {value, strength, evidence}; descriptions are
    # {facet, text, evidence} (plus strength); quirks are an extra key readers keep and ignore.
    assert set(raw) == {"big_five", "slots", "descriptions", "quirks"}
    assert set(raw["big_five"]) <= set(persona_rules.TRAITS)
    for t in raw["big_five"].values():
        assert set(t) == {"value", "strength", "evidence"} and t["value"] in ("high", "low")
        assert t["strength"] in persona.STRENGTHS and t["evidence"]
    for d in raw["descriptions"]:
        assert set(d) == {"facet", "text", "evidence", "strength"} and d["text"] and d["evidence"]
    for q in raw["quirks"]:
        assert set(q) == {"text", "strength", "evidence"}
    parsed = Persona.model_validate(raw)  # the benchmark reader's own model of persona.json
    conversation = {m.dayid for m in talked}
    assert parsed.evidence() and all(d in conversation for _, d in parsed.evidence())
    # Deleting through the CLI: a persona item by id.
    r = CliRunner().invoke(main, ["memory", "show", "-p", ana, "--json"], catch_exceptions=False)
    first = json.loads(r.output)["persona"][0]
    r = CliRunner().invoke(main, ["memory", "delete", "-p", ana, "--persona", str(first["id"])],
                           catch_exceptions=False)
    assert r.exit_code == 0 and "deleted" in r.output
    r = CliRunner().invoke(main, ["memory", "show", "-p", ana, "--json"], catch_exceptions=False)
    assert first["id"] not in [x["id"] for x in json.loads(r.output)["persona"]]


def test_hand_entered_item_survives_rebuild(store, ana, talked):
    mine, action = persona.add(store, ana, slot="daily_rhythm:chronotype", value="morning",
                               clause="Has become a morning person", sources=[("day1-16", talked[15].ordinal)])
    assert action == "superseded" and mine.origin == "manual"
    assert mine.valid_from == len(FIXTURE)  # a hand edit takes effect at the newest message
    extract.rebuild(store, ana)
    chain = [(i.value, i.status, i.origin) for i in persona.all_(store, ana) if i.slot == "daily_rhythm:chronotype"]
    assert chain == [("evening", "superseded", "rule"), ("morning", "current", "manual")]


def test_the_participant_corrects_a_trait_in_the_inspector_and_history_keeps_the_old_value(store, ana):
    from companion import inspector

    say(store, ana, [("user", "I'm a real introvert, honestly.")])
    extract.consolidate(store, ana)
    [it] = [x for x in persona.current(store, ana) if x.slot == "big_five:extraversion"]
    assert it.value == "low"
    done = inspector.edit(store, ana, f"persona:{it.id}", "High")
    assert "is now high" in done
    [now] = [x for x in persona.current(store, ana) if x.slot == "big_five:extraversion"]
    assert now.value == "high" and now.source_dayids == it.source_dayids
    assert [x.value for x in persona.all_(store, ana) if x.slot == "big_five:extraversion"] == ["low", "high"]
    with pytest.raises(inspector.Refused, match="high"):
        inspector.edit(store, ana, f"persona:{now.id}", "sometimes")  # named: what a trait may be
    assert persona.persona(store, ana)["big_five"]["extraversion"]["value"] == "high"
