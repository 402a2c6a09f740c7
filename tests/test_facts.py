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
    'My cousin said "I work at the harbour".',   # someone else's words
    "I used to live in Oslo.",                   # a past habit
    "I'd love to have a parrot called Kiwi.",    # wished
    "My sister never lived in Oslo.",            # negated, about someone else
])
def test_what_is_not_stated_is_not_read(message):
    assert _texts(message) == []


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
