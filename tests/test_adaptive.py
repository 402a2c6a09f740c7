"""The adaptive gate: posterior updates by hand, learning from outcomes, as-of reads, the trace."""

from companion import trials
from companion.turn import context_at, turn
from memory import adaptive, feedback, registry
from memory.adaptive import Outcome


def test_posterior_matches_a_hand_computed_case():
    grid = [0.0, 0.5, 1.0]
    outs = [Outcome(1, "miss", "signal:restate", 0.3, False),  # thresholds <= 0.3 would have retrieved
            Outcome(3, "misuse", "feedback:misfit", 0.7, True),  # thresholds <= 0.7 would have retrieved
            Outcome(5, "good", "feedback", 0.6, True),  # credit to thresholds that also retrieve at 0.6
            Outcome(7, "bad", "feedback", 0.2, None)]  # no trace: the decision is unknown, no update
    # 0.0: miss ok, misuse bad, good ok       -> alpha 1+2, beta 1+1
    # 0.5: miss bad, misuse bad, good ok      -> alpha 1+1, beta 1+2
    # 1.0: miss bad, misuse ok, good (no)     -> alpha 1+1, beta 1+1
    assert adaptive.posterior(outs, grid) == [[3, 2], [2, 3], [2, 2]]


def test_registered_and_live_eligible():
    assert registry.get("gate", "adaptive") is adaptive.Adaptive
    assert not adaptive.Adaptive.eval_only


def _chat(store, who, settings, lines):
    return [turn(store, who, t, settings=settings) for t in lines]


def test_outcomes_come_from_signals_and_feedback_before_the_turn(store, ana, settings):
    trials.set_arm(store, ana, "adaptive", "bm25", "earlier_turns")
    rs = _chat(store, ana, settings, ["my dog Rex loves the beach", "what should I cook tonight"])
    feedback.record(store, ana, rs[0].reply.dayid, "down", tag="misfit")
    r3 = turn(store, ana, "like I said, Rex is a beagle", settings=settings)  # restate: about reply 2
    st = adaptive.state(store, ana)
    assert st["outcomes"] == 2 and st["by_kind"] == {"misuse": 1, "miss": 1}
    # the turn that carried the restatement saw only the feedback given before it
    learner = r3.trace.decision["learner"]
    assert learner["outcomes"] == 1 and learner["by_kind"] == {"misuse": 1}
    assert learner["sampled"] == r3.trace.decision["threshold"]
    assert "sampled from 1 outcome(s)" in r3.trace.decision["reason"]
    assert r3.trace.gate["name"] == "adaptive" and r3.trace.gate["params"]["base"] == "lexical"


def test_a_decision_as_of_a_turn_ignores_everything_after_it(store, ana, settings):
    trials.set_arm(store, ana, "adaptive", "bm25", "earlier_turns")
    rs = _chat(store, ana, settings, ["my dog Rex loves the beach", "Rex chased a crab", "nice weather"])
    feedback.record(store, ana, rs[0].reply.dayid, "up")
    probe = rs[2].message
    gate = adaptive.Adaptive()
    ctx = lambda: context_at(store, ana, probe.text, probe.ordinal, "personal", settings)  # noqa: E731
    before = gate.decide(ctx())
    # the future: more turns, feedback, signals
    more = _chat(store, ana, settings, ["why are you bringing that up", "I told you Rex is a beagle"])
    feedback.record(store, ana, rs[2].reply.dayid, "down", tag="forgot")
    feedback.record(store, ana, more[0].reply.dayid, "down", tag="misfit")
    after = gate.decide(ctx())
    assert after.model_dump() == before.model_dump()
    assert adaptive.state(store, ana)["outcomes"] > before.learner["outcomes"]


def test_repeated_misuse_moves_the_posterior_to_high_thresholds(store, ana, settings):
    trials.set_arm(store, ana, "always", "bm25", "earlier_turns")  # any arm's outcomes teach it
    for _ in range(4):
        r = turn(store, ana, "my dog Rex loves the beach with my sister", settings=settings)
        turn(store, ana, "why are you bringing that up, that has nothing to do with it", settings=settings)
    st = adaptive.state(store, ana)
    assert st["by_kind"] == {"misuse": 4}
    mean = dict(zip(st["grid"], st["mean"]))
    assert mean[1.0] > mean[0.0]
    # a tagged miss on a turn pushes the other way for thresholds at or below its score
    feedback.record(store, ana, r.reply.dayid, "down", tag="forgot")
    assert adaptive.state(store, ana)["by_kind"] == {"misuse": 4, "miss": 1}


def test_runs_as_a_randomized_arm_against_a_fixed_gate(store, ana, settings):
    trials.randomize(store, ana, ["adaptive", "never"], 5, "bm25", "earlier_turns")
    rs = [turn(store, ana, t, settings=settings) for t in ["my dog Rex", "Rex again", "as I said, Rex", "ok"]]
    arms = [r.trace.arm["gate"] for r in rs]
    assert sorted(arms) == ["adaptive", "adaptive", "never", "never"]  # blocked: two of each
    for r in rs:
        if r.trace.arm["gate"] == "adaptive":
            assert r.trace.decision["threshold"] in adaptive.DEFAULT_GRID and "learner" in r.trace.decision
        else:
            assert "learner" not in r.trace.decision
