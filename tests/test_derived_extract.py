"""The extraction pipeline: the rule-based extractor on a fixture conversation against claims
written by hand (precision and recall computed by hand below), verification verdicts, and the
model-based extractor behind the same interface (with a scripted `complete`)."""

import json
from datetime import datetime, timedelta, timezone

import pytest

import companion.actions  # noqa: F401  (registers the autonomy gate with memory's verification)
from memory import cells, claims, derived, extract
from memory.messages import Message, append

# sender, text, context. Comments: what a careful human reads as stated (the gold).
FIXTURE = [
    ("user", "Morning! I work nights at the hospital, so I'm wrecked.", "personal"),  # F nights at hospital
    ("user", "My sister Ana lives in Porto.", "personal"),                           # F sister Ana in Porto
    ("user", "I'm 34, if you must know.", "personal"),                               # F 34
    ("user", "I have a cat called Miso.", "personal"),                               # F cat Miso
    ("companion", "Do you live in Porto too? I live in the cloud.", "personal"),     # - companion
    ("user", "No, I live in Braga.", "personal"),                                    # F Braga
    ("user", "Would I move to Lisbon? If I moved to Lisbon I'd miss Miso.", "personal"),  # - hypothetical
    ("user", 'My friend said "I live in Madrid" yesterday.', "personal"),            # - someone else's words
    ("user", "Just the short version, please.", "work"),                             # P verbosity=brief (work)
    ("user", "Don't ask me before you add notes.", "personal"),                      # P autonomy=autonomous
    ("user", "Show me your reasoning.", "work"),                                     # P reasoning=show (work)
    ("user", "My husband is a teacher.", "personal"),                                # F husband teacher
    ("user", "We adopted a dog last spring.", "personal"),                           # F has a dog
    ("user", "I'm a nurse, by the way.", "work"),                                    # F nurse
    ("user", "I'm not a morning person.", "personal"),                               # - (nothing to keep)
    ("user", "I'm allergic to penicillin.", "personal"),                             # F penicillin
    ("user", "I'm so tired.", "personal"),                                           # -
    ("user", "My mum worked as a nurse for years.", "personal"),                     # - past, not current
    ("user", "I'm from Coimbra originally.", "personal"),                            # F Coimbra
    ("user", "Honestly I hate long answers at work.", "work"),                       # P verbosity=brief (missed)
    ("user", "I am 35 now, my birthday was yesterday.", "personal"),                 # F 35 (supersedes 34)
    ("user", "Do you think I work too much?", "personal"),                           # - question
    ("user", "I work for hours without a break.", "personal"),                       # - (not a job: trap)
]

# Gold, written by hand: (dayid, normalized claim text) and (dayid, context, attribute, setting).
GOLD_FACTS = {
    ("day1-1", "works nights at the hospital"), ("day1-2", "sister ana lives in porto"),
    ("day1-2", "has a sister called ana"), ("day1-3", "is 34 years old"), ("day1-4", "has a cat called miso"), ("day1-6", "lives in braga"),
    ("day1-12", "husband is a teacher"), ("day1-13", "has a dog"), ("day1-14", "works as a nurse"),
    ("day1-16", "is allergic to penicillin"), ("day1-19", "is from coimbra"), ("day1-21", "is 35 years old"),
}  # "My friend said ...": a friend named by the relation alone is no claim (everyone has friends;
#    on LoCoMo dev "Has friends", "Has pals", "Has a neighbor" matched no observation); kin and pets still are
GOLD_PREFS = {
    ("day1-9", "work", "verbosity", "brief"), ("day1-10", "personal", "autonomy", "autonomous"),
    ("day1-11", "work", "reasoning_visibility", "show"), ("day1-20", "work", "verbosity", "brief"),
}


def _messages():
    return [Message(i + 1, "ana", i + 1, f"day1-{i + 1}", s, t, "ts", c) for i, (s, t, c) in enumerate(FIXTURE)]


def test_rule_extractor_against_hand_written_claims():
    props = extract.RuleExtractor(learned=False).propose(_messages())  # the rule road alone
    facts = {(p.source_dayids[0], derived.norm(p.text)) for p in props if p.kind == "claim"}
    prefs = {(p.source_dayids[0], c, p.attribute, p.setting) for p in props if p.kind == "preference" for c in p.contexts}
    assert all(len(p.source_dayids) == 1 and p.evidence for p in props)
    # By hand: all 12 stated facts are found, "We adopted a dog" too (the parse reads "we
    # adopted" as having one); none wrong ("I work for hours without a break" is not a job, and
    # "My mum worked as a nurse for years" is a past job, not what she does now).
    assert facts - GOLD_FACTS == set()
    # "I'm 34, if you must know": an if-clause about the listener knowing is an aside, not a
    # condition; "We adopted a dog last spring": the pet noun read twice no longer cancels itself.
    assert GOLD_FACTS - facts == set()
    # Preferences: 4 of 4 ("I hate long answers", a complaint, is read since the classifier learned
    # other voices: issue 27), none wrong.
    assert prefs - GOLD_PREFS == set()
    assert GOLD_PREFS - prefs == set()
    tp = len(facts & GOLD_FACTS) + len(prefs & GOLD_PREFS)
    fp = len(facts - GOLD_FACTS) + len(prefs - GOLD_PREFS)
    fn = len(GOLD_FACTS - facts) + len(GOLD_PREFS - prefs)
    assert (tp, fp, fn) == (16, 0, 0)  # recall 16/16, precision 16/16
    # Nothing from the companion's message, the quote, the hypothetical or the question.
    assert not {d for d, _ in facts} & {"day1-5", "day1-7", "day1-22"}
    assert {t for d, t in facts if d == "day1-8"} == set()  # nothing of the quote


def test_the_learned_road_on_the_hand_written_claims():
    """The default reader (the learned road on): one claim beyond the hand gold, and it keeps the
    past tense ("worked ... for years": not read as her job now); nothing from the companion's
    message, the quote, the hypothetical or the question."""
    props = extract.RuleExtractor().propose(_messages())
    facts = {(p.source_dayids[0], derived.norm(p.text)) for p in props if p.kind == "claim"}
    assert facts - GOLD_FACTS == {("day1-18", "mum worked as a nurse for years")}
    assert GOLD_FACTS - facts == set()
    assert not {d for d, _ in facts} & {"day1-5", "day1-7", "day1-22"}


T0 = datetime(2026, 3, 2, 6, tzinfo=timezone.utc)


@pytest.fixture
def fixture_store(store, ana):
    for i, (s, t, c) in enumerate(FIXTURE):
        append(store, ana, s, t, c, ts=T0 + timedelta(minutes=10 * i))
    return store


def test_consolidate_the_fixture(fixture_store, ana):
    store = fixture_store
    report = extract.consolidate(store, ana)
    assert report.messages == len(FIXTURE) and report.proposals == 17  # 12 + 1 learned facts, 4 preferences
    # "Don't ask me before you add notes": the classifier proposes autonomous, the grant reader reads
    # only notes named (self_directed), and the two must agree (companion.actions.autonomy_gate,
    # registered as the app registers it): the raise is refused, autonomy stays lower (fail safe)
    assert report.verdicts == {"supported": 16, "unsupported": 1}
    ages = [c for c in claims.all_(store, ana) if c.slot == "age"]
    assert [(c.text, c.status) for c in ages] == [("Is 34 years old", "superseded"), ("Is 35 years old", "current")]
    # One current value per slot, now and at every earlier bound.
    for as_of in range(1, len(FIXTURE) + 2):
        slots = [c.slot for c in claims.current(store, ana, as_of=as_of) if c.slot]
        assert len(slots) == len(set(slots))
    # "Just the short version" while work replies are already brief steps to terse (issue 25 item 4)
    assert cells.settings_for(store, ana, "work") == {"verbosity": "terse", "reasoning_visibility": "show"}
    # the refused raise above leaves personal autonomy at its default (the turn itself would learn the
    # grant reader's self_directed: companion.actions.learn_autonomy; background consolidation does not)
    assert cells.settings_for(store, ana, "personal") == {}
    # Idempotent: a second run sees nothing new; a rebuild arrives at the same profile.
    before = [(c.text, c.status, c.source_dayids) for c in claims.all_(store, ana)]
    assert extract.consolidate(store, ana).messages == 0
    extract.rebuild(store, ana)
    assert [(c.text, c.status, c.source_dayids) for c in claims.all_(store, ana)] == before


def test_verification_verdicts_and_the_model_extractor(fixture_store, ana):
    store = fixture_store
    lines = [
        # supported: evidence verbatim in the cited message
        {"kind": "claim", "text": "Works nights at the hospital", "category": "work", "slot": "work",
         "source_dayids": ["day1-1"], "evidence": "I work nights at the hospital"},
        # repairable: not verbatim, but every content word is in the cited message -> kept, downgraded
        {"kind": "claim", "text": "Has a cat called Miso", "category": "pets", "slot": None,
         "source_dayids": ["day1-4"], "evidence": "has a cat, Miso"},
        # unsupported: the cited message does not say it -> dropped
        {"kind": "claim", "text": "Lives in Lisbon", "category": "residence", "slot": "residence",
         "source_dayids": ["day1-7"], "evidence": "I moved to Lisbon"},
        # unsupported: cites a message that does not exist
        {"kind": "claim", "text": "Has two kids", "source_dayids": ["day9-9"], "evidence": "I have two kids"},
        # refused: cites the companion's message
        {"kind": "claim", "text": "Lives in the cloud", "source_dayids": ["day1-5"], "evidence": "I live in the cloud"},
        {"kind": "preference", "attribute": "reasoning_visibility", "setting": "show",
         "source_dayids": ["day1-11"], "evidence": "Show me your reasoning"},
    ]
    seen = []

    def complete(msgs):
        seen.append(msgs)
        return "Here you go:\n" + "\n".join(json.dumps(x) for x in lines) + "\n{not json\n"

    ex = extract.ModelExtractor(complete, batch=100)
    report = extract.consolidate(store, ana, extractor=ex)
    assert len(seen) == 1 and "[day1-1]" in seen[0][1]["content"] and "[day1-5]" not in seen[0][1]["content"]
    assert "verbosity" in seen[0][0]["content"] and report.extractor == "model:extract-v1"
    assert report.verdicts == {"supported": 2, "repairable": 1, "unsupported": 2, "refused": 1}
    by_text = {c.text: c for c in claims.all_(store, ana)}
    assert set(by_text) == {"Works nights at the hospital", "Has a cat called Miso"}
    assert by_text["Has a cat called Miso"].verdict == "repairable" and by_text["Has a cat called Miso"].confidence < 0.7
    assert cells.settings_for(store, ana, "work") == {"reasoning_visibility": "show"}
    logged = store.conn.execute(
        "SELECT event, detail FROM memory_events WHERE participant=? AND kind='proposal'", (ana,)).fetchall()
    assert sorted(r["event"] for r in logged) == sorted(["supported", "supported", "repairable", "unsupported",
                                                        "unsupported", "refused"])
    assert all(json.loads(r["detail"])["reason"] for r in logged)
