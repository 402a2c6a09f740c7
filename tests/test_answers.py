"""Recall answered from what the participant said (memory/answers.py), over a generated corpus:
slots x who it is about (a relation, a name, lowercase, the participant) x question wordings x
statement wordings, each case with distractors (another person's value of the same slot, their
own earlier question, a negated or supposed statement). Fail-safe property: never a wrong value,
never a question as the answer; and most answerable questions are answered."""

from __future__ import annotations

import itertools
import json
import random
import types
from datetime import datetime
from pathlib import Path

import pytest

from memory import answers as A

PEOPLE = [("sister", "Lena"), ("brother", "Tomás"), ("friend", "Yusuf"), ("cousin", "Omar"),
          ("boss", "Marisol"), ("neighbour", "Ingrid")]
PETS = [("dog", "Biscuit", "beagle"), ("cat", "Pickle", "tabby"), ("rabbit", "Clover", "lop")]
CITIES = ["Hamburg", "Lyon", "Oslo", "Porto", "Cardiff", "Utrecht", "Kraków"]
JOBS = ["nurse", "chef", "dentist", "teacher", "plumber", "lawyer"]

RESIDENCE_SAID = ["My {rel} {Name} lives in {City}.", "{Name}, my {rel}, lives in {City} now.",
                  "my {rel} {name} moved to {City} last year", "Oh and my {rel} {Name} lives in {City} with her kids."]
RESIDENCE_ASK = ["where does my {rel} live?", "where does {Name} live?", "where does {name} live again",
                 "remind me where my {rel} lives?", "did I tell you where {Name} lives?",
                 "which city does my {rel} live in?", "do you remember where my {rel} lives?"]
JOB_SAID = ["My {rel} {Name} is a {job}.", "{Name} works as a {job}.", "my {rel} {name} is a {job} at the hospital",
            "My {rel} {Name} lives near us, she's a {job}."]
JOB_ASK = ["what does my {rel} do for a living?", "what's {Name}'s job?", "what does {Name} do for work?",
           "what is my {rel}'s job again?", "what does {name} do for a living"]
NAME_SAID = ["I have a {rel} called {Name}.", "We've got a {rel} named {Name}.", "My {rel} is called {Name}.",
             "our {rel} {Name} knocked a glass off the table"]
NAME_ASK = ["what's my {rel} called?", "what is my {rel}'s name?", "do you remember my {rel}'s name?",
            "what's my {rel} called again?"]
KIND_SAID = ["We've got a {rel} called {Name}, he's a {kind}.", "My {rel} {Name} is a {kind}."]
KIND_ASK = ["what kind of {rel} is {Name}?", "what breed is {Name}?"]
SELF = [("residence", ["I live in {City}.", "I moved to {City} two years ago."],
         ["where do I live?", "which city do I live in?"], "{City}"),
        ("occupation", ["I work as a {job} at a small clinic.", "I'm a {job}, nights mostly."],
         ["what's my job?", "what do I do for a living?"], "{job}")]


def _fill(t: str, **kw) -> str:
    return t.format(**kw, name=kw.get("Name", "").lower())


def cases(seed: int = 0, n_per: int = 3):
    """(said, question, expected value or None) over every slot template pair, with distractors."""
    rnd = random.Random(seed)
    out = []

    def other(rel, pool):
        return rnd.choice([p for p in pool if p[0] != rel])

    for said_t, ask_t in itertools.product(RESIDENCE_SAID, RESIDENCE_ASK):
        for _ in range(n_per):
            (rel, name), city = rnd.choice(PEOPLE), rnd.choice(CITIES)
            orel, oname = other(rel, PEOPLE)
            ocity = rnd.choice([c for c in CITIES if c != city])
            distract = [f"My {orel} {oname} lives in {ocity}.", f"where does my {rel} live?",
                        f"If my {rel} ever moved to {ocity} I'd visit all the time."]
            kw = dict(rel=rel, Name=name, City=city)
            out.append((distract + [_fill(said_t, **kw)], _fill(ask_t, **kw), city))
            out.append((distract, _fill(ask_t, **kw), None))
    for said_t, ask_t in itertools.product(JOB_SAID, JOB_ASK):
        for _ in range(n_per):
            (rel, name), job = rnd.choice(PEOPLE), rnd.choice(JOBS)
            orel, oname = other(rel, PEOPLE)
            ojob = rnd.choice([j for j in JOBS if j != job])
            distract = [f"My {orel} {oname} is a {ojob}.", f"what does my {rel} do?",
                        f"my {rel} {name.lower()} is not a {ojob}, she hates that idea",
                        f"My {rel} {name} came round for dinner."]
            kw = dict(rel=rel, Name=name, job=job)
            out.append((distract + [_fill(said_t, **kw)], _fill(ask_t, **kw), job))
            out.append(([f"My {rel} {name} lives in Oslo."] + distract, _fill(ask_t, **kw), None))
    for said_t, ask_t in itertools.product(NAME_SAID, NAME_ASK):
        for _ in range(n_per):
            rel, name, _kind = rnd.choice(PETS)
            orel, oname, _ = other(rel, PETS)
            distract = [f"My friend's {rel} is called Rex.", f"We also have a {orel} called {oname}.",
                        f"what should I call my {rel}?"]
            kw = dict(rel=rel, Name=name)
            out.append((distract + [_fill(said_t, **kw)], _fill(ask_t, **kw), name))
            out.append((distract, _fill(ask_t, **kw), None))
    for said_t, ask_t in itertools.product(KIND_SAID, KIND_ASK):
        for _ in range(n_per):
            rel, name, kind = rnd.choice(PETS)
            kw = dict(rel=rel, Name=name, kind=kind)
            out.append(([f"what kind of {rel} should I get?", _fill(said_t, **kw)], _fill(ask_t, **kw), kind))
    for slot, said_ts, ask_ts, value in SELF:
        for said_t, ask_t in itertools.product(said_ts, ask_ts):
            for _ in range(n_per):
                kw = dict(City=rnd.choice(CITIES), job=rnd.choice(JOBS))
                distract = ["My brother Tomás lives in Lisbon.", "My sister Lena is a lawyer.", ask_t]
                out.append((distract + [_fill(said_t, **kw)], _fill(ask_t, **kw), _fill(value, **kw)))
                out.append((distract, _fill(ask_t, **kw), None))
    return out


def _answer(said: list[str], ask: str):
    cands = [A.Candidate(t, f"day1-{i}", i, "2026-03-02T08:00:00+00:00") for i, t in enumerate(said, 1)]
    known = A.known_names(said + [ask])
    q = A.read_question(ask, known)
    if q is None:
        return None, None
    f = A.find(q, cands, known)
    return q, f


def measure(corpus):
    wrong, answered, answerable, declined, unanswerable = [], 0, 0, 0, 0
    for said, ask, value in corpus:
        q, f = _answer(said, ask)
        if value is None:
            unanswerable += 1
            if f is not None:
                wrong.append((ask, said, f.value))
            else:
                declined += 1
            continue
        answerable += 1
        if f is None:
            continue
        if value.lower() in f.value.lower():
            answered += 1
        else:
            wrong.append((ask, said, f.value))
    return {"answerable": answerable, "answered": answered, "unanswerable": unanswerable,
            "declined": declined, "wrong": wrong}


def test_the_generated_corpus_never_gets_a_wrong_value_and_mostly_gets_the_right_one():
    corpus = cases()
    assert len(corpus) >= 300
    m = measure(corpus)
    print(f"answered {m['answered']}/{m['answerable']}, declined {m['declined']}/{m['unanswerable']}, "
          f"wrong {len(m['wrong'])}")
    assert m["wrong"] == []  # fail-safe: another person's value, a question, a negation never answer
    assert m["answered"] / m["answerable"] >= 0.9


def test_a_question_is_never_the_answer():
    said = ["what's my cat called again?", "what city is my sister from?", "where does Lena live?"]
    for ask in ["what's my cat called?", "what city is my sister from?", "where does Lena live?"]:
        q, f = _answer(said, ask)
        assert q is not None and f is None


def test_an_unrelated_statement_is_not_an_answer():  # issue 22, item 15
    q, f = _answer(["my brother Tomás lives in Lyon"], "did I tell you where Marisol lives?")
    assert q.slot == "residence" and q.entity.name == "Marisol" and f is None
    assert A.not_told(q) == "I don't think you've told me where Marisol lives."


def test_advice_and_general_questions_are_left_to_the_model():
    for ask in ["where should I go for dinner?", "how do I practise a speech?", "what should I cook tonight?",
                "what's a good name for a podcast?", "good morning!", "which is better, tea or coffee?"]:
        assert A.read_question(ask, {}) is None, ask


def test_the_answer_says_what_and_when_from_the_statement():
    said = [A.Candidate("I live with my cat Pickle, she's a tabby.", "day1-2", 2, "2026-03-02T08:07:00+00:00"),
            A.Candidate("Big news: I'm flying to Lisbon on March 14th for my friend Sofia's wedding!", "day3-1", 9,
                        "2026-03-04T08:15:00+00:00")]
    now = datetime.fromisoformat("2026-03-05T10:00:00+00:00")
    known = A.known_names([c.text for c in said])
    q = A.read_question("what's my cat called again?", known)
    assert A.compose(q, A.find(q, said, known), now) == "Your cat is called Pickle: you told me on Monday."
    q = A.read_question("when am I flying to Lisbon?", known)
    assert A.compose(q, A.find(q, said, known), now) == \
        "You're flying to Lisbon on March 14th for your friend Sofia's wedding: you told me yesterday."


def test_a_newer_statement_supersedes_an_older_one():
    said = [A.Candidate("My sister Lena lives in Hamburg.", "day1-1", 1),
            A.Candidate("Lena moved to Oslo last month!", "day9-1", 40)]
    known = A.known_names([c.text for c in said])
    q = A.read_question("where does my sister live?", known)
    assert A.find(q, said, known).value == "Oslo"


HELDOUT = Path(__file__).parent / "data" / "answers" / "heldout-v1.json"


def test_held_out_questions_written_by_hand():
    """Measured once, after the generator: written before the answerer was run on them."""
    data = json.loads(HELDOUT.read_text(encoding="utf-8"))
    m = measure([(c["said"], c["ask"], c["answer"]) for c in data["cases"]])
    print(f"held out: answered {m['answered']}/{m['answerable']}, declined {m['declined']}/{m['unanswerable']}, "
          f"wrong {m['wrong']}")
    assert m["wrong"] == []



@pytest.mark.parametrize("pet,name", [("parrot", "Kiwi"), ("tortoise", "Gustavo"), ("cat", "Pickle"), ("dog", "Biscuit")])
@pytest.mark.parametrize("own", ["my", "our"])
def test_a_question_gets_the_same_answer_with_its_frame_words_or_without_them(store, ana, pet, name, own):
    """"what's our parrot called again?" unframed is "what's our parrot called?", whose parse may
    differ: every form is answered with the name first, and the tail-framed form by the parse reader
    (it reads the message as written when its unframed core does not parse as a question)."""
    from datetime import timedelta

    from memory import messages

    store.indexes = []
    said = f"{own.capitalize()} {pet} is called {name}, he never stops whistling."
    t0 = datetime.fromisoformat("2026-03-02T08:00:00+00:00")
    messages.append(store, ana, "user", said, "personal", ts=t0)
    now = t0 + timedelta(days=1)
    replies = {}
    for ask in (f"what's {own} {pet} called again?", f"sorry, what's {own} {pet} called again?",
                f"what's {own} {pet} called?"):
        recent = messages.read(store, ana, 10**9)[-6:]
        reply, _ = A.answer(store, ana, messages.next_ordinal(store, ana), ask, (), recent, now)
        assert reply is not None and reply.split(":")[0].split(".")[0].endswith(name), (ask, reply)
        replies[ask] = reply
    # the tail frame alone ("... again?") is read by the parse reader whatever the parse of its core
    assert replies[f"what's {own} {pet} called again?"] == f"Your {pet} is called {name}: you told me yesterday."


@pytest.mark.parametrize("core,said", [
    ("when 's hanna's wedding again", "when hanna's wedding is"),
    ("when's my dentist appointment?", "when your dentist appointment is"),
    ("what 's my landlord called, need to email him about the boiler", "what your landlord is called"),
    ("where is the party", "where the party is"),
    ("how old's kayla", "how old kayla is"),
    ("what's my vet's name", "what your vet's name is"),
])
def test_not_told_says_the_question_back_in_order(core, said):
    # a contracted question ("when's ...") and a trailing clause after a comma are said back as a
    # clause, subject before its verb, never "when 's hanna's wedding"
    ask = types.SimpleNamespace(core=core)
    assert A.not_told_everyday(ask) == f"I don't think you've told me {said}."
