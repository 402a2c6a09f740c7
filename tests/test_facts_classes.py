"""The fact classes of issue 27 through the whole chain: a participant's message goes through the
turn (echo model), background consolidation reads it, and "What I remember" (companion.inspector)
shows the claim, or shows nothing for a negated, supposed, asked, quoted or reported one. The
wordings are the generator's DEV families (eval.factgen), never tuned on; values drawn seeded."""

import pytest

from companion import inspector, scheduler
from companion.turn import turn
from eval import factgen, facts_eval
from memory import claims, fact_classifier, facts, messages

DEV = factgen.generate("dev", n=1, seed=5)


def _first(family: str) -> dict:
    return next(r for r in DEV if r["family"] == family)


def _remembered(store, participant) -> list[str]:
    return [row[2] for row in inspector.rows(store, participant) if row[1] == "profile"]


def test_dev_families_are_not_train_families():
    where = factgen.splits()
    assert {r["family"] for r in DEV} == {f for f, s in where.items() if s == "dev"}
    classes = {f.cls: set() for f in factgen.FAMILIES}
    for f in factgen.FAMILIES:
        classes[f.cls].add(where[f.id])
    # every look-alike class has a family on each side: dev measures a wording never tuned on
    for cls in ("negated", "hypothetical", "question", "reported", "joke", "other-people"):
        assert classes[cls] == {"train", "dev"}, cls


STATED = ["multi-age-home", "passing-complaint", "past-ended", "duration-job", "health-diag", "slang", "nonnative",
          "correct-city"]
NOT_STATED = ["neg-other", "hypo-wish", "question-tag", "reported", "other-strangers"]


def test_what_i_remember_after_dev_family_messages(store, ana, settings):
    said = {f: _first(f) for f in STATED + NOT_STATED}
    for row in said.values():
        turn(store, ana, row["text"], settings=settings)
    assert claims.current(store, ana) == []  # nothing is read on the reply's path
    scheduler.consolidate_all(store)
    shown = _remembered(store, ana)
    by_source = {}  # every claim read, current or superseded by a later message (three say where they live)
    for c in claims.all_(store, ana):
        by_source.setdefault(c.source_dayids[0], []).append(c.text)
    assert {c.text for c in claims.current(store, ana)} <= set(shown)
    dayids = {m.text: m.dayid for m in messages.read(store, ana, 10 ** 6) if m.sender == "user"}
    for fam in STATED:
        row = said[fam]
        got = by_source.get(dayids[row["text"]], [])
        for gold in row["claims"]:
            assert any(facts_eval.matches(t, gold["must"]) for t in got), (fam, row["text"], got)
    for fam in NOT_STATED:
        row = said[fam]
        got = by_source.get(dayids[row["text"]], [])
        allowed = row.get("optional", [])
        assert all(any(facts_eval.matches(t, o) for o in allowed) for t in got), (fam, row["text"], got)
        assert not any(facts_eval.matches(t, f) for t in shown for f in row["forbid"]), (fam, row["text"])


def test_the_two_named_misses(store, ana, settings):
    turn(store, ana, "I'm 34, if you must know.", settings=settings)
    turn(store, ana, "We adopted a dog last spring.", settings=settings)
    turn(store, ana, "If you ask me, I'd move to Lisbon.", settings=settings)  # an aside does not make it stated
    scheduler.consolidate_all(store)
    shown = _remembered(store, ana)
    assert "Is 34 years old" in shown and "Has a dog" in shown
    assert not any("lisbon" in t.lower() for t in shown)


def test_a_job_that_ended_closes_the_current_one(store, ana, settings):
    turn(store, ana, "I work at Philips in the lab.", settings=settings)
    scheduler.consolidate_all(store)
    assert any("Philips" in t for t in _remembered(store, ana))
    turn(store, ana, "I quit my job at Philips last month.", settings=settings)
    scheduler.consolidate_all(store)
    work = [c for c in claims.all_(store, ana) if c.slot == "work"]
    assert [(c.text, c.status) for c in work][-1] == ("No longer works at Philips", "current")
    assert all(c.status != "current" for c in work[:-1]) and len(work) == 2
    assert "Works at Philips in the lab" not in _remembered(store, ana)


@pytest.mark.parametrize("text", ["I lived in Valencia for years before moving here.", "I used to live in Valencia."])
def test_a_past_residence_is_an_ended_claim(text):
    got = facts.extract(text, False)
    assert [(f.text, f.slot, f.ends) for f in got] == [("Used to live in Valencia", "residence", ("valencia",))]


def test_a_statement_in_passing_before_a_question_is_stated_and_the_question_is_not():
    assert facts.split_asked("I work nights at the pharmacy, any tips for sleeping?") == \
        "I work nights at the pharmacy. any tips for sleeping?"
    assert [f.text for f in facts.extract("Since I just moved to Ghent, where do people go out?", False)] == \
        ["Lives in Ghent"]
    for asked in ("Do you think I should move to Ghent, or stay?", "If I moved to Ghent, would I like it?",
                  "Should I, as a nurse, move to Ghent?"):
        assert facts.split_asked(asked) == asked
        assert facts.extract(asked, False) == []


@pytest.mark.parametrize("sentence", [
    "I don't live in Porto.", "I'd move to Porto.", "My friend says I live in Porto", "Do I live in Porto?",
    "I used to live in Porto", "I'm not in Porto anymore", "If I lived in Porto", "Maybe I live in Porto",
    "She told me “I live in Porto”", "I never lived in Porto", "I basically live at the gym"])
def test_the_learned_road_sees_only_plain_sentences(sentence):
    assert not fact_classifier.plain(sentence)


def test_no_look_alike_of_the_dev_families_is_stored_on_either_road():
    """Every dev row of the negated, supposed, asked and reported classes (all wordings, 4 value
    draws each): no claim holds what a forbid item names, on the rule road or with the learned one."""
    rows = [r for r in factgen.generate("dev", n=4, seed=9) if r["class"] in
            ("negated", "hypothetical", "question", "reported")]
    assert len(rows) >= 40
    for learned in (False, True):
        got = facts.extract_many([r["text"] for r in rows], learned)
        result = facts_eval.score(rows, [[f.text for f in g] for g in got], per_persona=False)
        assert result["opposite"] == 0, result["opposites"]
        assert all(any(facts_eval.matches(f.text, o) for o in r.get("optional", [])) for r, g in zip(rows, got)
                   for f in g), [(r["text"], [f.text for f in g]) for r, g in zip(rows, got) if g]


# ---------------------------------------------------------------- facts4 (issue 27 round 4)

@pytest.mark.parametrize("text,expected", [
    ("Amara and I got married in June.", ["Is married to Amara"]),
    ("Diego and I have been married for ten years.", ["Is married to Diego"]),
    ("me and Ines split up, it's over", ["Is no longer with Ines"]),
    ("Farah and I broke up in April.", ["Is no longer with Farah"]),
    ("I've been seeing Kofi since March.", ["Is dating Kofi"]),
])
def test_a_partner_named_without_a_relation_word(text, expected):
    got = [f.text for f in facts.extract(text, False)]
    assert got == expected
    if "no longer" in expected[0]:
        assert facts.extract(text, False)[0].ends == (expected[0].split()[-1].lower(),)


@pytest.mark.parametrize("text", [
    "If Amara and I got married I'd be so happy.", "Did Farah and I break up?", "Diego and I never got married.",
    "I'm married to my job lol", "My cat is the real boss of this house.", "I'm not seeing Kofi."])
def test_no_partner_is_read_from_a_supposed_asked_negated_or_figurative_clause(text):
    got = [f.text for f in facts.extract(text, True)]
    assert not any(w in t.lower() for t in got for w in ("married", "dating", "longer with", "boss")), got


def test_a_condition_owned_in_passing_and_not_when_denied():
    assert [f.text for f in facts.extract("Ugh, my migraines are terrible this week.", False)] == ["Has migraines"]
    assert facts.extract("My asthma isn't a problem.", False) == []  # the clause says nothing of having it? it is negated
    assert facts.extract("Is my eczema back?", False) == []


def test_predicates_listed_after_one_subject_share_it_and_its_negation():
    said = [f.text for f in facts.extract("I work as a nurse, live in Denver, and have three kids.", False)]
    assert said == ["Works as a nurse", "Lives in Denver", "Has three kids"]
    assert facts.extract("I don't work as a nurse, live in Denver, and have three kids.", False) == []


def test_the_second_gate_reads_the_clause_not_the_sentence():
    doc = facts.nlp.parse(facts.prepare("My dog is my best friend and I don't care who knows it."))
    _, cands = facts.read_doc(doc)
    dog = [c for c in cands if c.text.startswith("Dog")]
    # the sentence has a negation; the dog's clause has none of its own
    assert dog and not fact_classifier.plain(dog[0].sentence) and fact_classifier.admits(dog[0])
    doc = facts.nlp.parse(facts.prepare("My friend said my sister plays cello in an orchestra."))
    assert not any(fact_classifier.admits(c) for c in facts.read_doc(doc)[1])


def test_test_families_are_held_apart_and_differ_from_train_and_dev():
    where = factgen.splits()
    test = {f.id for f in factgen.TEST_FAMILIES}
    assert {fid for fid, s in where.items() if s == "test"} == test
    others = {w.lower() for f in factgen.FAMILIES for w in f.wordings}
    assert not any(w.lower() in others for f in factgen.TEST_FAMILIES for w in f.wordings)
    rows = factgen.generate("test", n=1, seed=2)
    assert {r["family"] for r in rows} == test and all(r["split"] == "test" for r in rows)


def test_no_look_alike_of_the_test_families_is_stored_on_either_road():
    """The generator's held-out look-alike families (never tuned on): nothing negated, supposed,
    asked or reported is stored as said, on the rule road or with the learned one."""
    rows = [r for r in factgen.generate("test", n=3, seed=11) if not r["fact"]]
    assert len(rows) == 4 * 2 * 3  # four families, two wordings each, three draws
    for learned in (False, True):
        got = facts.extract_many([r["text"] for r in rows], learned)
        result = facts_eval.score(rows, [[f.text for f in g] for g in got], per_persona=False)
        assert result["opposite"] == 0, result["opposites"]
