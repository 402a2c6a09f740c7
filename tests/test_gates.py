"""The gate's evidence (issue #15), feature by feature, on hand-made conversations, and the learned
gate and normalized fusion that use it."""

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from companion.turn import turn
from memory import features, messages, registry
from memory.context import TurnContext

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)

TALK = [
    ("user", "hey there"),
    ("companion", "Hello! How are you?"),
    ("user", "nice weather today huh"),
    ("companion", "Lovely, isn't it?"),
    ("user", "My sister Ines moved to Porto for a job at the harbour office"),  # 5
    ("companion", "How exciting for your sister in Porto!"),
    ("user", "I adopted a grey cat called Miso"),  # 7
    ("companion", "Miso is a lovely name. Do you also have a parrot called Kiwi?"),
    ("user", "no haha"),
    ("companion", "Fair enough."),
    ("user", "traffic was awful this morning"),
    ("companion", "Sorry to hear that."),
    ("user", "I might cook pasta tonight"),
    ("companion", "Sounds tasty."),
]


@pytest.fixture
def talk(store, ana):
    return messages.append_many(store, ana, [
        dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=i)) for i, (s, t) in enumerate(TALK)])


def ctx(store, who, text, window=4, as_of=None):
    as_of = as_of or messages.next_ordinal(store, who)
    return TurnContext(store=store, participant=who, text=text, context="personal", as_of=as_of,
                       recent=messages.read(store, who, as_of, limit=window))


def test_back_reference_and_time_cues_count_the_ways_people_point_back():
    f = features.cue_features
    assert f("what was my sister's name again?")["backref_cues"] == 1
    assert f("remind me, what did I tell you about the trip?")["backref_cues"] >= 2
    assert f("what's the capital of australia?")["backref_cues"] == 0
    assert f("how did it go last week, back in the spring?")["time_cues"] >= 2
    assert f("tell me a joke")["time_cues"] == 0


def test_own_life_questions_differ_from_general_questions():
    f = features.cue_features
    assert f("where does my brother live?")["own_life_question"] == 1
    assert f("what did I say my boss was called")["own_life_question"] == 1
    assert f("what's the capital of france?")["own_life_question"] == 0
    assert f("my sister is visiting tomorrow")["own_life_question"] == 0  # a statement, not a question
    assert f("how do I get wine out of a carpet")["general_request"] == 1
    assert f("how do I get wine out of my carpet")["general_request"] == 0  # about their own things


def test_small_talk_is_recognized_whole_not_as_a_prefix():
    f = features.cue_features
    for t in ("hey!", "Thanks so much", "good morning!!", "lol ok", "talk later", "Cheers."):
        assert f(t)["smalltalk"] == 1, t
    assert f("hey, where did my sister move?")["smalltalk"] == 0


def test_entity_novelty_is_a_name_the_participant_said_before_the_window(store, ana, talk):
    # "miso" in lowercase: a name because the participant wrote it as one (mid-sentence, capitalized)
    assert features.entity_novelty(ctx(store, ana, "how is miso doing these days?")) == (1.0, ["miso"])
    assert features.entity_novelty(ctx(store, ana, "where does my sister live now?"))[1] == ["sister"]
    # Only the companion ever said Kiwi: not the participant's entity
    assert features.entity_novelty(ctx(store, ana, "what about kiwi?"))[0] == 0
    # In the window already: nothing to reach back for
    assert features.entity_novelty(ctx(store, ana, "how is miso doing?", window=10))[0] == 0
    # An ordinary word said earlier is not an entity
    assert features.entity_novelty(ctx(store, ana, "what is good weather for a walk?"))[0] == 0


def test_repeated_small_talk_is_flagged_and_a_real_callback_is_not(store, ana, talk):
    c = ctx(store, ana, "nice weather today huh")
    assert features.phatic_repeat(c, features.speaker_aware(c)) == 1
    c = ctx(store, ana, "which city did my sister move to?")
    assert features.phatic_repeat(c, features.speaker_aware(c)) == 0


def test_speaker_awareness_prefers_the_participants_own_statement(store, ana, talk):
    # "parrot Kiwi" appears only in a companion line: the best match is the companion's
    c = ctx(store, ana, "parrot Kiwi")
    sp = features.speaker_aware(c)
    assert sp["best_match_companion"] == 1 and sp["bm25_outside_user"] == 0
    c = ctx(store, ana, "sister Porto harbour")
    sp = features.speaker_aware(c)
    assert sp["bm25_user_best"] == talk[4].ordinal and sp["bm25_outside_user"] > 0.5


def test_learned_gate_retrieves_on_callbacks_and_abstains_on_small_talk(store, ana, talk):
    gate = registry.create("gate", "learned")  # the shipped weights
    for text in ("what was my sister's name again?", "how is miso doing?", "where did Ines move to, remind me"):
        d = gate.decide(ctx(store, ana, text))
        assert d.retrieve, (text, d.reason)
        assert d.features and "entity_novelty" in d.features
    for text in ("hey there", "nice weather today huh", "thanks!", "tell me a joke about penguins"):
        d = gate.decide(ctx(store, ana, text))
        assert not d.retrieve, (text, d.reason)


def test_the_turn_traces_the_default_gates_evidence(store, ana, settings, talk):
    assert settings.gate == "learned"
    t = turn(store, ana, "what's my cat called again?", settings=settings).trace
    assert t.gate["name"] == "learned" and t.decision["retrieve"] and t.errors == []
    assert t.decision["features"]["backref_cues"] == 1 and "strongest push" in t.decision["reason"]
    # the reason points at the participant's own message, and names the entity reached for
    assert f"nearest own message {talk[6].dayid}" in t.decision["reason"] and "cat" in t.decision["reason"]
    assert any("Miso" in (h.get("snippet") or h.get("text") or "") for h in t.hits)


@pytest.mark.parametrize("recipe", ["normalized", None])  # None: the default (learned)
def test_fusion_ranks_the_statement_over_the_companions_paraphrase(store, ana, talk, recipe):
    hyb = registry.create("retriever", "hybrid", **({"recipe": recipe} if recipe else {}))
    assert hyb.params["recipe"] == (recipe or "learned")
    hits = hyb.search(ctx(store, ana, "do you remember my sister in Porto?"), "do you remember my sister in Porto?", 3)
    assert hits[0].ordinal == talk[4].ordinal and hits[0].sender == "user"
    assert talk[5].ordinal in [h.ordinal for h in hits]  # the companion's paraphrase is still found, lower


def test_normalized_fusion_score_is_computed_by_hand(store, ana, talk):
    c = ctx(store, ana, "grey cat Miso")
    scores, ords, ref = c.bm25("grey cat Miso")
    sims, _ = c.dense("grey cat Miso")
    want = {int(o): 0.2 * b / ref + max(d, 0.0) for o, b, d in zip(ords, scores, sims)}
    for o in want:  # the companion's lines count 0.85
        if TALK[o - 1][0] == "companion":
            want[o] *= 0.85
    got = registry.create("retriever", "hybrid", recipe="normalized").search(c, c.text, 3)
    best = sorted(want, key=lambda o: -want[o])[:3]
    assert [h.ordinal for h in got] == best
    assert [h.score for h in got] == pytest.approx([want[o] for o in best])


def test_query_rewrite_drops_recall_cues_and_keeps_names():
    assert features.rewrite_for_lexical("do you remember where Ines moved again?") == "do you where ines moved ?"
    assert features.rewrite_for_lexical("where did Ines move") == "where did Ines move"  # nothing to drop: same text
    assert features.rewrite_for_lexical("remember?") == "remember?"  # nothing would be left


def test_a_bad_recipe_is_refused_by_name():
    with pytest.raises(ValueError, match="fusion"):
        registry.create("retriever", "hybrid", fusion="max")
    with pytest.raises(ValueError, match="unknown components"):
        registry.create("retriever", "hybrid", weights={"bm25": 1.0, "sparse": 1.0})


def test_shipped_weights_are_reproduced_from_their_seed(tmp_path):
    """Both shipped files: the message part (v1, synthetic split only) and the mixed gate (v2), whose
    real part comes from the committed feature rows of the real-message set (no LoCoMo needed)."""
    from eval import gatesets

    data = features.CUES_FILE.parent
    v1 = json.loads((data / "gate-learned-v1.json").read_text())
    again = gatesets.train_v1(None, seed=v1["seed"])
    assert again["features"] == v1["features"] and again["threshold"] == v1["threshold"]
    assert again["coef"] == pytest.approx(v1["coef"], abs=1e-6)
    v2 = json.loads((data / "gate-learned-v2.json").read_text())
    again = gatesets.train(tmp_path / "w.json", seed=v2["seed"])
    assert again["threshold"] == v2["threshold"] and [p["name"] for p in again["parts"]] == ["message", "real"]
    for mine, theirs in zip(again["parts"], v2["parts"]):
        assert mine["features"] == theirs["features"]
        assert mine["coef"] == pytest.approx(theirs["coef"], abs=1e-6)
        assert mine["spread"] == pytest.approx(theirs["spread"], abs=1e-6)
    assert again["calibration"]["a"] == pytest.approx(v2["calibration"]["a"], abs=1e-6)
    assert v2["parts"][0]["coef"] == pytest.approx(v1["coef"], abs=1e-6)  # the message part is v1


# ---------------------------------------------------------------- callbacks to the companion's own past

ASKED = [  # the companion asks about a book early on; chatter fills the window; days later they answer it
    ("user", "hi!"),
    ("companion", "Hello! How has your week been?"),
    ("user", "pretty good, my aunt lent me a novel"),
    ("companion", "Have you started reading the novel your aunt lent you? What is it about?"),  # 4
    ("user", "not yet, maybe this weekend"),
    ("companion", "Sounds like a plan."),
] + [pair for i in range(8) for pair in (("user", f"work was busy again, meeting number {i}"),
                                         ("companion", "That sounds tiring, take a break when you can."))]


@pytest.fixture
def asked(store, ana):
    return messages.append_many(store, ana, [
        dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=i)) for i, (s, t) in enumerate(ASKED)])


def test_an_answer_to_the_companions_old_question_retrieves_that_question(store, ana, settings, asked):
    """End to end: the participant answers, days later, a question the companion asked 18 messages back
    (outside the recent window): the turn retrieves, the trace's reason names the question and the hits
    hold it; small talk in the same conversation abstains."""
    question = asked[3]
    t = turn(store, ana, "I finally started reading the novel, it's about two sisters in Lisbon", settings=settings).trace
    assert question.ordinal < asked[-1].ordinal - settings.recent_window
    assert t.decision["retrieve"], t.decision["reason"]
    assert f"the companion's earlier question, suggestion or plan it matches: {question.dayid}" in t.decision["reason"]
    assert question.dayid in [h["dayid"] for h in t.hits]
    t = turn(store, ana, "hey, good morning!", settings=settings).trace
    assert not t.decision["retrieve"], t.decision["reason"]


def test_a_request_to_remind_is_not_a_question_about_the_past():
    from memory import grounding

    for text in ("Can you remind me to book a cat sitter on Friday?", "remind me to call my mum next week",
                 "could you please remind me at 6 to take my pills?", "set a reminder for my dentist appointment?"):
        f = features.cue_features(text)
        assert f["action_request"] == 1 and f["backref_cues"] == 0 and f["own_life_question"] == 0, text
        assert not grounding.asks_about_the_past(text), text
    for text in ("remind me, who is coming to visit me next weekend?", "remind me where my brother lives?",
                 "can you remind me what the restaurant you suggested was called?"):
        assert features.cue_features(text)["action_request"] == 0, text
        assert grounding.asks_about_the_past(text), text


def test_callback_cues_point_at_what_the_companion_said():
    f = features.cue_features
    assert f("yeah I tried what you said and it worked")["companion_anaphora"] >= 1
    assert f("I took your advice and called her")["companion_anaphora"] == 1
    assert f("not yet, the book is still on my nightstand")["answer_opening"] == 1
    assert f("the weather is lovely")["companion_anaphora"] == 0 and f("the weather is lovely")["answer_opening"] == 0


def test_the_callback_generator_splits_whole_families_and_places_its_probes():
    from eval import gatecallbacks as cb

    train, dev = cb.material("train"), cb.material("dev")
    assert not {f["topic"] for f in train["families"]} & {f["topic"] for f in dev["families"]}
    assert not set(train["new_topics"]) & set(dev["new_topics"])
    made = cb.cases("dev", seed=3, n=2)
    assert [c.rows for c, _ in made] == [c.rows for c, _ in cb.cases("dev", seed=3, n=2)]  # seeded
    for c, _ in made:
        for p in c.probes:
            assert c.rows[p.as_of - 1] == ("user", p.text)  # the probe is the message at its position
            if p.needs:  # a callback's gold is a companion prompt before the recent window
                assert len(p.gold) == 1 and c.rows[p.gold[0] - 1][0] == "companion"
                assert p.gold[0] < p.as_of - cb.WINDOW
            elif p.kind.startswith("reply"):  # a reply follows its prompt at once
                assert c.rows[p.as_of - 2][0] == "companion"


# ------------------------------------- what the message presupposes that the window does not hold (round 3)

POTTERY = [  # the companion suggests a pottery class; chatter fills the window; the participant reports back
    ("user", "hi there"),
    ("companion", "Hello! You should try the pottery class at the community centre."),  # 2: a suggestion
    ("user", "maybe, sounds fun"),
    ("companion", "Let me know how it goes."),
] + [pair for i in range(6) for pair in (("user", f"work was busy again, meeting number {i}"),
                                         ("companion", "That sounds tiring, take a break when you can."))]


@pytest.fixture
def pottery(store, ana):
    return messages.append_many(store, ana, [
        dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=i)) for i, (s, t) in enumerate(POTTERY)])


def test_a_report_back_with_no_antecedent_on_screen_is_counted_by_hand(store, ana, pottery):
    """'yes I finally tried the pottery class!' after six lines of work chatter: it opens as an answer
    and no companion message on screen asks anything; none of its content words (finally, tried, pottery,
    class: 'yes' is one too) is on screen; 'the pottery class' names words only the companion said, 16
    messages back; the newest message on screen is the companion's but points at nothing."""
    text = "yes I finally tried the pottery class!"
    c = ctx(store, ana, text, window=6)
    f = features.compute(c, features.ANTECEDENT)
    words = {"yes", "finally", "tried", "pottery", "class"}
    window = {w for m in c.recent for w in features._content(m.text)}
    assert features._content(text) == words and not words & window
    assert f["window_overlap"] == 0.0
    assert f["orphan_answer"] == 1.0 and f["orphan_report"] == 1.0
    assert f["companion_definite"] == 1.0
    assert f["reply_to_callback"] == 0.0
    # the deepest prompt is the suggestion (message 2), by its cosine; nothing on screen is nearer
    emb = store.vectors.embedder
    q, s = emb.encode_one(text), emb.encode_one(POTTERY[1][1])
    by_hand = float(np.dot(q, s))
    assert f["prompt_dense_deep"] == pytest.approx(by_hand, abs=1e-5)
    on_screen = max(float(np.dot(q, emb.encode_one(m.text))) for m in c.recent if m.sender == "companion")
    assert f["prompt_deep_margin"] == pytest.approx(max(by_hand - on_screen, 0.0), abs=1e-5)
    # half its words on screen: the report counts half
    c2 = ctx(store, ana, "yes I finally tried work meeting", window=6)
    f2 = features.compute(c2, features.ANTECEDENT)
    assert f2["window_overlap"] == pytest.approx(2 / 5) and f2["orphan_report"] == pytest.approx(3 / 5)


def test_the_reply_to_a_companion_callback_inherits_its_reach(store, ana, pottery):
    """The companion's newest message asks back about the class ('did you end up going?'): the reply
    'it went great, thanks for asking' answers a question on screen (no orphan answer) but the question
    itself points before the window: reply_to_callback is 1 and reply_to_far is the best cosine of that
    question to a message before the window, computed by hand."""
    ask = "How was the pottery class, did you end up going?"
    rows = messages.append_many(store, ana, [dict(sender="companion", text=ask, context="personal",
                                                  ts=T0 + timedelta(days=1))])
    c = ctx(store, ana, "it went great, thanks for asking", window=6)
    f = features.compute(c, features.ANTECEDENT)
    assert c.recent[-1].ordinal == rows[0].ordinal
    assert f["orphan_answer"] == 0.0 and f["reply_to_callback"] == 1.0
    emb = store.vectors.embedder
    v = emb.encode_one(ask)
    first = min(m.ordinal for m in c.recent)
    before = [t for o, (_, t) in enumerate(POTTERY, 1) if o < first]
    assert f["reply_to_far"] == pytest.approx(max(max(float(np.dot(v, emb.encode_one(t))) for t in before), 0.0),
                                              abs=1e-5)
    # a phrase the participant said too is not the companion's alone
    messages.append_many(store, ana, [dict(sender="user", text="the pottery place is near me", context="personal",
                                           ts=T0 + timedelta(days=1, minutes=1))]
                         + [dict(sender=s, text=t, context="personal", ts=T0 + timedelta(days=1, minutes=2 + i))
                            for i, (s, t) in enumerate(POTTERY[4:10])])
    assert features.compute(ctx(store, ana, "the pottery was fun", window=6), features.ANTECEDENT)[
        "companion_definite"] == 0.0


def test_a_candidate_real_part_is_refused_by_the_feature_it_lacks_and_the_weights_file_it_misses(tmp_path):
    from eval import gatecallbacks, gatesets

    with pytest.raises(SystemExit, match="does not compute: bogus"):
        gatesets.main(["real-cv", "--with", "window_overlap,bogus"])
    with pytest.raises(RuntimeError, match="none.json is missing"):
        gatecallbacks.measure("dev", 0, ["learned"], n=1, weights=str(tmp_path / "none.json"))
