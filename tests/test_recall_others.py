"""Recall in other people's styles (issue 25, a week by another author): facts told in passing
inside long messages, through a possessive, corrected later by pronoun ("actually she moved to
Leeds"), asked back in the held-out (test) phrasing families of eval/recallgen.py v3: "my mind's
gone blank, ...", "have i told you ...", "sorry to ask again but ...", a question at the end of
a message about something else. The cases and their answers are worked out by hand; the run is
the real turn on the deterministic echo model, so the reply is the product's own answer."""

from __future__ import annotations

import json
import re

import pytest

from eval import chatcheck, recallgen
from tests.test_cli import run as run_cli

TOLD = [
    "Long message incoming, sorry. Met Jo for coffee, we always end up at Little Bean, the flat whites there "
    "are unreal. Oh and my boss at Halden & Roe wants the report by friday, great.",
    "my sister Ines lives in Bristol, so I don't see her much",
    "actually she moved to Leeds last month, I keep forgetting",
    "Been doing Spanish for 3 years, my teacher says I'm improving, I'm not so sure.",
    "Our beagle Biscuit has decided the sofa is his now.",
    "remind me again what kind of dog Biscuit is",  # a question without a question mark: never quoted as a fact
]
# (question, expected values, the answer's first words must hold this, a value that must not lead)
ASKED = [
    ("my mind's gone blank, what's the name of the café where I meet Jo?", ["Little Bean"], "Little Bean", "Met"),
    ("have i told you where my sister lives?", ["Leeds"], "Leeds", "Bristol"),
    ("sorry to ask again but how long have I been doing Spanish?", ["3", "three"], "3 years", None),
    ("for the life of me I can't recall who I work for", ["Halden & Roe"], "Halden & Roe", None),
    ("Not much news, work is work. Quick one though: what breed is Biscuit?", ["beagle"], "beagle", None),
]
NEVER = ["have I mentioned how old Biscuit is?", "this is embarrassing but what's my brother called?"]


def _spec() -> dict:
    turns = [{"at": f"2026-03-02T{8 + i:02d}:00", "text": t} for i, t in enumerate(TOLD)]
    turns += [{"at": f"2026-03-03T{8 + i:02d}:00", "text": q, "recall": e} for i, (q, e, _, _) in enumerate(ASKED)]
    turns += [{"at": f"2026-03-04T{8 + i:02d}:00", "text": q, "unknown": "never told"} for i, q in enumerate(NEVER)]
    return {"version": "test-recall-others", "participant": "others-style", "tz": "Europe/London",
            "context": "personal", "turns": turns}


def test_test_family_questions_through_the_turn_are_answered_from_the_answering_statement(tmp_path):
    spec = _spec()
    path = tmp_path / "others.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    r = run_cli("bench", "chat", "--model", "echo", "--no-alone", "--script", str(path), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    rows = out["rows"][len(TOLD):]
    known = chatcheck.Known(texts=[t["text"] for t in spec["turns"]])
    for (q, expected, lead, wrong), row in zip(ASKED, rows):
        reply = row["reply"]
        assert row["recall_right"], (q, reply)
        # the answer itself (before the quote) names the fact, and not a value that was corrected or misread
        answer = re.split(r"You told me|: you told me", reply.split("\n\n")[-1])[0]
        assert lead in answer, (q, reply)
        if wrong:
            assert wrong not in answer, (q, reply)
        # the quoted statement holds the answer, and is never a question
        for span in chatcheck.quoted_spans(reply, known):
            assert not chatcheck.is_question(span), (q, reply)
            assert any(chatcheck.contains(span, e) for e in expected), (q, span)
    for q, row in zip(NEVER, rows[len(ASKED):]):
        assert recallgen.NOT_TOLD.search(row["reply"]), (q, row["reply"])
        assert row["unknown_right"], (q, row["reply"])
    assert out["quoted_questions"] == 0


def test_v3_generator_splits_wordings_and_states_every_fact_it_asks():
    tr, te = recallgen.script3(1, "train"), recallgen.script3(1, "test")
    fam = lambda s: {t["family"] for t in s["turns"] if t.get("family")}
    assert fam(tr) & fam(te) == {"never_told3"}
    told = lambda s: [t["text"] for t in s["turns"] if not t.get("family")]
    facts_told = lambda s: {x for x in told(s) if x not in recallgen.FILLER}  # small talk is shared
    assert not facts_told(tr) & facts_told(te)
    for spec in (tr, te):
        statements = " ".join(told(spec)).lower()
        for t in spec["turns"]:
            if t.get("recall"):
                assert not any(re.search(rf"\b{re.escape(e.lower())}\b", t["text"].lower()) for e in t["recall"])
                # the fact asked for was told (a question about an untold fact would be scored as a miss)
                assert any(e.lower() in statements for e in t["recall"]), t
        # the corrected city: the old one is told first, the new one later
        stale = next(t["stale"][0] for t in spec["turns"] if t.get("stale"))
        new = next(t["recall"][0] for t in spec["turns"] if t.get("stale"))
        texts = told(spec)
        assert min(i for i, x in enumerate(texts) if stale in x) < max(i for i, x in enumerate(texts) if new in x)
    try:
        recallgen.script3(1, "dev")
    except ValueError as e:
        assert "train" in str(e) and "test" in str(e)
    else:
        raise AssertionError("a v3 split other than train/test must be refused")


def test_a_recall_request_without_a_question_mark_is_a_question():
    from memory import answers

    assert answers.asks_recall("remind me again what kind of cat Waffles is")
    assert answers.asks_recall("I forgot where I work, sorry")
    assert answers.asks_recall("did i mention the name of the café where I meet Dom")
    assert not answers.asks_recall("Our beagle Biscuit has decided the sofa is his now.")
    assert not answers.asks_recall("I forgot my keys at work again")


def test_which_asks_for_a_name_only_as_a_question():
    from memory import answers

    ask = answers.read_everyday("Anyway, which gym did I sign up at? It's gone right out of my head.")
    assert ask is not None and ask.slot == "name" and "gym" in ask.words
    # a relative "which" in a statement is not a question about their past
    assert answers.read_everyday("I'm a civil engineer at a firm called Halden & Roe, which sounds boring but I "
                                 "love it.") is None
    assert answers.read_everyday("He's 31, which makes him older than my car.") is None


@pytest.mark.both_backends
def test_a_statement_by_pronoun_reads_the_participants_own_message_before_it(store, ana):
    """messages.own_before: the participant's own message just before each ordinal (the companion's
    replies skipped), none before the first, nothing at or after the bound; on either engine."""
    from datetime import datetime, timedelta, timezone

    from memory import messages

    t0 = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
    said = [("user", "my sister Ines lives in Bristol"), ("companion", "Bristol is lovely."),
            ("user", "actually she moved to Leeds last month"), ("user", "she likes it there")]
    m = [messages.append(store, ana, who, text, "personal", ts=t0 + timedelta(minutes=i))
         for i, (who, text) in enumerate(said)]
    got = messages.own_before(store, ana, [x.ordinal for x in m], m[3].ordinal)
    assert got == {m[1].ordinal: said[0][1], m[2].ordinal: said[0][1]}
