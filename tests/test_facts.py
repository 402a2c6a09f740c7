"""Facts from the parse (memory.facts): what is read, what is not stated and so not read,
supersession through consolidation, the capable-model switch, and persona items reaching the
reply through companion.turn.turn (echo model)."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from companion import scheduler
from companion.turn import turn
from eval import facts_eval
from memory import claims, extract, facts, persona
from memory.messages import append

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def _texts(message):
    return [f.text for f in facts.extract(message)]


@pytest.mark.parametrize("message, expected", [
    # written for this test, not taken from the data sets or the issue
    ("Yesterday my uncle Desmond flew back to Belfast", ["Has an uncle called Desmond"]),
    ("so, Marguerite, my stepmother, runs a bookshop", ["Has a stepmother called Marguerite",
                                                        "Stepmother Marguerite runs a bookshop"]),
    ("we've got a parrot called Kiwi", ["Has a parrot called Kiwi"]),
    ("I'm a pharmacist", ["Works as a pharmacist"]),
    ("I live in Tromso.", ["Lives in Tromso"]),
    ("i am 41", ["Is 41 years old"]),
])
def test_what_is_read(message, expected):
    assert set(expected) <= set(_texts(message))


@pytest.mark.parametrize("message", [
    "I don't live in Oslo.",                     # negated
    "I'm not a pharmacist",                      # negated
    "If I lived in Oslo I would ski more.",      # supposed
    "Do I live in Oslo now?",                    # asked
    "I'd love to have a parrot called Kiwi.",    # wished
    "My sister never lived in Oslo.",            # negated, about someone else
])
def test_what_is_not_stated_is_not_read(message):
    assert _texts(message) == []


def test_quoted_words_are_not_read_but_the_relation_who_said_them_is():
    # "my partner ..." alone is a claim (a relation named by itself); what they said is not ours
    assert _texts('My cousin said "I work at the harbour".') == ["Has a cousin"]


@pytest.mark.parametrize("message, expected", [
    # a state that ended is read as one, never as the present state
    ("I used to live in Oslo.", "Used to live in Oslo"),
    ("honestly i don't work at the harbour anymore", "No longer works at the harbour"),
    ("Me? I'm not with Pieter any more", "Is no longer with Pieter"),
    ("my grandparents no longer live in Ghent", "Grandparents no longer live in Ghent"),
])
def test_a_past_state_is_read_as_ended(message, expected):
    found = facts.extract(message, learned=False)
    assert [f.text for f in found] == [expected] and found[0].ends


def _claims_after(store, ana, texts):
    for i, t in enumerate(texts):
        append(store, ana, "user", t, "personal", ts=T0 + timedelta(minutes=i))
    extract.consolidate(store, ana)
    return {c.text: c.status for c in claims.all_(store, ana)}


def test_a_past_state_closes_the_claim_it_ends_and_keeps_it_in_history(store, ana):
    got = _claims_after(store, ana, ["I live in Tromso.", "my boyfriend Pieter is a carpenter",
                                     "I don't live in Tromso anymore", "and I'm not with Pieter any more either"])
    assert got["Lives in Tromso"] == "superseded" and got["No longer lives in Tromso"] == "current"
    assert got["Has a boyfriend called Pieter"] == "superseded"
    assert got["Is no longer with Pieter"] == "current"
    current = [c.text for c in claims.current(store, ana)]
    assert "Lives in Tromso" not in current and "Has a boyfriend called Pieter" not in current


def test_a_past_state_of_another_value_leaves_the_current_one_alone(store, ana):
    got = _claims_after(store, ana, ["I live in Tromso.", "I used to live in Bergen"])
    assert got == {"Lives in Tromso": "current", "Used to live in Bergen": "current"}


def test_a_correction_supersedes(store, ana):
    got = _claims_after(store, ana, ["i'm 41", "sorry, typo: I am 42, not 41"])
    assert got["Is 41 years old"] == "superseded" and got["Is 42 years old"] == "current"


def test_a_named_relation_moving_supersedes_where_they_live(store, ana):
    for i, t in enumerate(["My sister Lena lives in Porto.", "ok so my sister Lena moved to Lisbon last week"]):
        append(store, ana, "user", t, "personal", ts=T0 + timedelta(minutes=i))
    report = extract.consolidate(store, ana)
    assert report.verdicts.get("unsupported", 0) == 0
    rows = [(c.text, c.status) for c in claims.all_(store, ana) if c.slot == "sister:lena:residence"]
    assert rows == [("Sister Lena lives in Porto", "superseded"), ("Sister Lena lives in Lisbon", "current")]
    assert "Has a sister called Lena" in [c.text for c in claims.current(store, ana)]


def test_score_counts_by_hand():
    rows = [{"id": "a", "text": "", "claims": [{"kind": "family", "must": ["sister", "lena"]},
                                               {"kind": "place", "must": ["lena", "porto|lisbon"]}],
             "forbid": [["oslo"]]},
            {"id": "b", "text": "", "claims": [], "optional": [["cat"]], "forbid": [["oslo"]]}]
    predicted = [["Sister Lena lives in Porto", "Works in Oslo"], ["Has a cat", "Lives in Oslo", "Does not live in Oslo"]]
    r = facts_eval.score(rows, predicted)
    # gold 2, both matched by the first claim; 5 extracted, 2 match (Porto claim, cat claim);
    # opposite: "Works in Oslo" and "Lives in Oslo" (no negation word); "Does not ..." is not
    assert (r["recall"], r["precision"], r["opposite"]) == (1.0, 0.4, 2)
    # a set whose rows name their persona is also scored per persona (once, not recursively)
    rows[0]["persona"], rows[1]["persona"] = "p1", "p2"
    r = facts_eval.score(rows, predicted)
    assert r["by_persona"]["p1"]["recall"] == 1.0 and r["by_persona"]["p1"]["precision"] == 0.5
    assert r["by_persona"]["p2"]["precision"] == round(1 / 3, 3) and r["by_persona"]["p2"]["recall"] is None


def _scripted_complete(calls):
    def complete(model, messages, **kw):
        calls.append(model)
        body = messages[-1]["content"]
        dayid = body.split("]")[0].lstrip("[")
        line = {"kind": "claim", "text": "Keeps bees", "category": "hobbies", "slot": None,
                "source_dayids": [dayid], "evidence": "keeps bees"}

        class R:
            text = json.dumps(line)
        return R()
    return complete


def test_a_capable_model_extracts_in_consolidation_never_the_demo_model(store, ana, monkeypatch):
    from companion import gateway

    calls = []
    monkeypatch.setattr(gateway, "complete", _scripted_complete(calls))
    append(store, ana, "user", "honestly my grandfather keeps bees, it's his whole life", "personal", ts=T0)
    # the demo model is never asked, whatever the setting says
    scheduler.consolidate_all(store, model="local/smollm2-135m", capable=True)
    assert calls == [] and "Keeps bees" not in [c.text for c in claims.current(store, ana)]
    extract.rebuild(store, ana)
    scheduler.consolidate_all(store, model="openai/some-model", capable=False)
    assert calls == []
    extract.rebuild(store, ana)
    with store.transaction() as conn:
        conn.execute("UPDATE memory_state SET processed_ordinal=0 WHERE participant=?", (ana,))
    scheduler.consolidate_all(store, model="openai/some-model", capable=True)
    assert calls == ["openai/some-model"]
    kept = {c.text: c for c in claims.current(store, ana)}
    # verified like any proposal: its words are in the message, so it stands, with its source
    assert kept["Keeps bees"].source_dayids == ["day1-1"] and kept["Keeps bees"].origin == "model"


def test_persona_items_reach_the_reply_and_the_trace(store, ana, settings):
    from memory import traces

    append(store, ana, "user", "Honestly, I'm a real introvert.", "personal", ts=T0)
    extract.consolidate(store, ana)
    [item] = persona.current(store, ana)
    # no retrieval and no recent window: only the persona block can carry day1-1 to the model
    s = settings.model_copy(update={"gate": "never", "recent_window": 0, "grounded": "off"})  # the full prompt
    r = turn(store, ana, "what should I do this weekend", settings=s, at=T0 + timedelta(hours=1))
    assert "day1-1" in r.shown
    t = traces.list_(store, participant=ana)[-1]
    assert f"persona:{item.id}" in t.applied["memory_items"]
    persona.delete(store, ana, item.id)  # deleted: the next reply no longer carries it
    r = turn(store, ana, "and next weekend", settings=s, at=T0 + timedelta(hours=2))
    assert "day1-1" not in r.shown
    assert not any(k.startswith("persona:") for k in traces.list_(store, participant=ana)[-1].applied["memory_items"])


def test_held_out_set_meets_the_goals():
    """The held-out set (tests/data/facts/test.jsonl, written before the extractor and never
    tuned on): claims recall >= 0.70 at precision >= 0.80, and nothing negated, supposed, asked
    or quoted stored as said. Measured when committed: recall 0.785, precision 0.929, 0."""
    rows = facts_eval.load("tests/data/facts/test.jsonl")
    r = facts_eval.score(rows, facts_eval.rule_claims([row["text"] for row in rows]))
    assert r["recall"] >= 0.70 and r["precision"] >= 0.80 and r["opposite"] == 0


@pytest.mark.parametrize("message", [
    # written for this test: every gate stands before the learned road too
    "I never went back to that climbing gym.",                   # negated
    "If I signed up for the pottery course I'd need a new apron.",  # supposed
    "Did I tell you I started a pottery course?",                # asked
    'Her note said "I started a pottery course".',                # someone else's words
    "Maybe I'll sign up for the pottery course one day.",         # hedged
])
def test_the_learned_road_sees_no_clause_that_is_not_stated(message):
    _, candidates = facts.read_doc(facts.nlp.parse(facts.blank_quotes(message)))
    assert candidates == []


def test_the_learned_road_is_given_what_no_rule_reads_in_the_third_person():
    found, candidates = facts.read_doc(facts.nlp.parse("Honestly I started a pottery course with my cousin last week!"))
    assert [f.text for f in found] == ["Has a cousin"]  # "my cousin" alone is a claim of the rule road
    assert [c.text for c in candidates] == ["Started a pottery course with their cousin last week"]
    assert candidates[0].about is None and "pottery course" in candidates[0].evidence


def test_the_shipped_fact_classifier_was_trained_without_a_test_split():
    from memory import fact_classifier

    m = fact_classifier.model()
    assert m is not None and m.w.shape == (384,) and 0 < m.threshold < 1
    # train splits and the generator's train families only; dev.jsonl and the generator's dev families judge
    assert set(m.meta["training"]) == {"locomo", "msc", "spc", "generator-train"}
    assert {"generator-dev", "own-dev", "locomo", "msc", "spc"} == set(m.meta["dev"])
    assert m.meta["matcher_threshold"] == json.loads(
        (facts_eval.Path(__file__).parents[1] / "eval" / "data" / "fact-matcher-handcheck-v1.json").read_text())["threshold"]
    # chosen on the dev splits (re-chosen 0.85 -> 0.70 by the whole reader, facts3): it raised recall
    # there without going under the precision floors, and loses no recall against the old choice
    assert round(m.threshold, 2) == m.meta["threshold"] == m.meta["threshold_rechosen"]["to"]
    for src, got in m.meta["dev"].items():
        assert got["precision"] >= m.meta["precision_floor"][src]
        assert got["recall"] >= m.meta["dev_at_0.85"][src]["recall"]
    assert any(m.meta["dev"][s]["recall"] > m.meta["dev_rules_alone"][s]["recall"] for s in m.meta["dev"])


def _remembered(store, ana) -> dict[str, str]:
    """What the participant sees in "What I remember": each item's text -> its source dayids."""
    from companion import inspector

    return {row[2]: row[4] for row in inspector.rows(store, ana)}


def test_a_fact_only_the_learned_road_reads_is_remembered_after_a_turn(store, ana, settings, monkeypatch):
    """Written for this test (not from an issue or a corpus): a real turn with the mock model,
    then the background pass; the learned road's claim shows in "What I remember" with its
    source, talk in the same message does not, and a negated clause gives nothing."""
    from memory import fact_classifier

    assert fact_classifier.model() is not None  # the weights ship
    assert facts.learned_road_on()  # on by default since issue 27 (COMPANION_FACTS_LEARNED=0 turns it off)
    monkeypatch.setenv("COMPANION_FACTS_LEARNED", "0")
    assert not facts.learned_road_on()
    monkeypatch.delenv("COMPANION_FACTS_LEARNED")
    turn(store, ana, "Honestly I started a pottery course with my cousin last week! I'm so glad.",
         settings=settings, at=T0)
    turn(store, ana, "I never went back to that climbing gym.", settings=settings, at=T0 + timedelta(minutes=2))
    extract.consolidate(store, ana)
    seen = _remembered(store, ana)
    assert seen.get("Started a pottery course with their cousin last week") == "day1-1"
    assert "Has a cousin" in seen  # the rule road's claim from the same message stands beside it
    assert not any("glad" in t.lower() or "climbing" in t.lower() for t in seen)
    learned = [c for c in claims.current(store, ana) if c.origin == fact_classifier.NAME]
    assert [c.text for c in learned] == ["Started a pottery course with their cousin last week"]


def test_without_the_weights_the_learned_road_is_off_and_the_rule_road_still_reads(store, ana, monkeypatch):
    from memory import fact_classifier

    monkeypatch.setattr(fact_classifier, "model", lambda: None)
    got = facts.extract("Honestly I started a pottery course with my cousin last week!", learned=True)
    assert [(f.text, f.origin) for f in got] == [("Has a cousin", "rule")]


# The classes of claim the whole reader stored on LoCoMo dev that matched no observation (facts3):
# each wording below is written for this test (not from a corpus), both roads on. Nothing of it is a
# fact about the participant; the second list holds the same constructions that are, and still read.
@pytest.mark.parametrize("message", [  # kin by the relation alone ("Has an uncle") may still be read
    "That was the summer when we cycled to the coast.",            # a when-clause: "Cycled when"
    "This is where I do most of my thinking, honestly.",           # a where-clause
    "Back then I was 12.",                                         # a past age is not the age now
    "Lisbon was one of my favourite trips.",                       # "one of": no age
    "I'll look at my calendar and get back to you.",               # a move in the conversation
    "We'll definitely try it together sometime!",                  # unanchored will-future
    "My grandfather handed it to me before he died.",              # the object is a pronoun from elsewhere
    "My mates were all there, it was brilliant.",                  # friends named by the relation alone
    "Since we last chatted I have been flat out.",                 # "spoke/chatted" is no language
])
def test_talk_that_is_no_fact_is_not_stored(message):
    got = [f.text for f in facts.extract(message, learned=True)]
    assert [t for t in got if t not in ("Has an uncle", "Has a grandfather")] == []


@pytest.mark.parametrize("message, expected", [
    ("I'll be in Lisbon next week for a conference.", "lisbon"),   # a will-future with a time: a plan
    ("I am 41 and I drive a bus.", "41"),                          # the age now
    ("My partner is always telling me to slow down.", "partner"),  # kin by the relation alone
    ("I speak Portuguese at home.", "portuguese"),
])
def test_the_same_constructions_stating_a_fact_still_read(message, expected):
    assert any(expected in f.text.lower() for f in facts.extract(message, learned=True))
