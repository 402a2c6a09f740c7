"""The interaction-preference track: suite format and lint, the scripted participant, the metric
identities on hand-made outcomes, and the on-policy replay through the turn (echo model,
selector path): probes never touch the main timeline, oracle scores 100 %, none scores what the
defaults earn, and corrections are learned into cells."""

import copy
import json
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from eval import preferences as prefs
from eval import prefsuite
from eval.preferences import ProbeOutcome
from memory import cells, embeddings, extract
from memory.messages import Message
from wrapper import inventory

INV = inventory.load()
DEFAULTS = {c: INV.defaults(c) for c in INV.contexts}


# ---------------------------------------------------------------- phrases (memory/ix_attributes)


def test_every_setting_of_every_attribute_has_a_phrase_and_a_unique_description():
    from memory import ix_attributes

    covered = {(a, s) for _, a, s in ix_attributes.PHRASES}
    assert covered == {(a.name, s) for a in INV.attributes.values() for s in a.settings}
    for a in INV.attributes.values():
        for s in a.settings:
            assert ix_attributes.from_description(ix_attributes.describe(a.name, s)) == (a.name, s)


@pytest.mark.parametrize("text, context, want", [
    ("Please just give me one option.", "work", {("work", "solution_breadth", "low")}),
    ("At work keep it formal.", "personal", {("work", "formality", "formal")}),
    ("No need to be so formal.", "work", {("work", "formality", "casual")}),
    ("Please don't be so casual.", "personal", {("personal", "formality", "formal")}),
    ("Don't check in on me unless I ask.", "personal", {("personal", "proactive_outreach", "low")}),
    ("Check in on me later.", "personal", {("personal", "proactive_outreach", "high")}),
    ("Go easy on me, start with what works.", "work", {("work", "feedback_directness", "gentle")}),
    ("Don't be so blunt.", "work", {("work", "feedback_directness", "gentle")}),
    ("Skip the caveats.", "work", {("work", "uncertainty_disclosure", "minimal")}),
    ("Don't hide errors from me.", "work", {("work", "error_reporting", "explicit")}),
    ("Fix small glitches yourself.", "work", {("work", "error_reporting", "quiet")}),
    ("Narrate every step as you go.", "personal", {("personal", "process_visibility", "full_narration")}),
    ("One topic at a time, please.", "work", {("work", "topic_management", "one_at_a_time")}),
    ("While you're at it, handle the follow-up tasks.", "work", {("work", "task_expansion", "adjacent")}),
    ("Stick to the task, for both work and personal stuff.", "work",
     {("work", "emotional_engagement", "task_focused"), ("personal", "emotional_engagement", "task_focused")}),
    ("Which option should I pick?", "work", set()),  # a question states nothing
    ("We had an outage last night, and the on-call rota is a mess.", "work", set()),
])
def test_corrections_in_the_participants_words_are_read_by_the_rule_extractor(text, context, want):
    assert prefsuite.stated(text, context) == want


# ---------------------------------------------------------------- the suite


def test_the_shipped_suite_loads_lints_clean_and_has_what_the_track_needs():
    suite, sha = prefsuite.load()
    assert len(sha) == 64 and len(suite.personas) >= 3
    lint = prefsuite.lint(suite)
    assert lint.problems == []
    for p in suite.personas:
        changes = [i for i in p.timeline if isinstance(i, prefsuite.Change)]
        assert len(changes) >= 3
        assert any(p.targets["work"][a] != p.targets["personal"][a] for a in INV.attributes)
        cps = prefsuite.checkpoints(suite, p)
        assert [c.kind for c in cps] == ["before_change"] * len(changes) + ["final"]
        assert len(cps[-1].cells) == 28
        # a probe runs after the session before it has ended (a fresh session), and before the change
        for cp in cps[:-1]:
            prev = p.timeline[cp.index - 1]
            assert prefsuite.item_end(suite, prev) < cp.at < p.timeline[cp.index].at


def _mini_suite(**over) -> dict:
    """One persona, two sessions and one change: small enough to replay in a test."""
    suite = json.loads(prefsuite.DEFAULT_SUITE.read_text())
    p = copy.deepcopy(suite["personas"][0])
    p["targets"] = {c: dict(DEFAULTS[c]) for c in INV.contexts}
    p["targets"]["work"].update(solution_breadth="high", formality="casual")
    p["targets"]["personal"].update(verbosity="detailed")
    p["timeline"] = [
        {"kind": "session", "id": "s1", "context": "work", "at": "2026-03-02T09:00:00+00:00", "goal": "g",
         "turns": [{"text": "Which ticketing tool should we move to?", "stakes": ["solution_breadth", "formality"]},
                   {"text": "Please draft the sprint kickoff notes.", "stakes": ["formality"]}]},
        {"kind": "session", "id": "s2", "context": "personal", "at": "2026-03-02T20:00:00+00:00", "goal": "g",
         "turns": [{"text": "The baby keeps waking up at 3am.", "stakes": ["verbosity"]}]},
        {"kind": "change", "id": "c1", "context": "work", "at": "2026-03-03T09:00:00+00:00",
         "set": [{"context": "work", "attribute": "solution_breadth", "setting": "low"}],
         "transcript": ["From now on, just give me one option."]},
    ]
    p.pop("voice", None)
    suite["personas"] = [p]
    suite.update(over)
    return suite


def test_suite_errors_name_what_is_wrong():
    bad = _mini_suite()
    bad["personas"][0]["targets"]["work"]["verbosity"] = "chatty"
    with pytest.raises(prefsuite.SuiteError, match=r"targets.work.*'chatty' is not a setting of verbosity"):
        prefsuite.parse(bad)
    bad = _mini_suite()
    bad["personas"][0]["timeline"][2]["set"][0]["setting"] = "high"  # already the target
    with pytest.raises(prefsuite.SuiteError, match="must change its target"):
        prefsuite.parse(bad)
    bad = _mini_suite()
    bad["personas"][0]["timeline"][1]["at"] = "2026-03-02T09:10:00+00:00"  # runs into the first session
    with pytest.raises(prefsuite.SuiteError, match="less than the session gap"):
        prefsuite.parse(bad)
    bad = _mini_suite()
    del bad["probe"]["formality"]["work"]
    with pytest.raises(prefsuite.SuiteError, match="no probe message for formality in work"):
        prefsuite.parse(bad)


def test_lint_refuses_a_request_and_reports_word_coverage_without_requiring_it():
    s = _mini_suite()
    s["probe"]["verbosity"]["work"] = "Keep it short. What is a service level agreement?"
    s["voice"]["formality"]["casual"] = ["Be cool, man."]
    # a preference, and a request to act ("Check in on me later" is a preference only, since the
    # wrapper reads standing outreach permissions as such)
    s["voice"].setdefault("autonomy", {})["autonomous"] = ["Just do it, don't ask me first. Add a note that rent is due."]
    s["voice"]["solution_breadth"]["low"] = ["Formal, please."]  # read as another attribute
    lint = prefsuite.lint(prefsuite.parse(s))
    assert any("reads as a request for ['add_note']" in p for p in lint.problems), lint.problems
    # the words are a coverage report, never a problem: a suite measures learning, not the extractor
    assert not any("states a preference" in p or "is read as" in p for p in lint.problems)
    assert any("probe verbosity/work states a preference" in p for p in lint.leaks)
    assert any("'Formal, please.' for solution_breadth=low said in work is read as [('work', 'formality', 'formal')]" in p
               for p in lint.unread), lint.unread
    words = lint.coverage["words"]
    assert words["leaks"] >= 1 and words["corrections_read"] < words["corrections"]


def test_targets_follow_the_change_events():
    p = prefsuite.parse(_mini_suite()).personas[0]
    assert prefsuite.targets_at(p, 2)["work"]["solution_breadth"] == "high"
    assert prefsuite.final_targets(p)["work"]["solution_breadth"] == "low"


# ---------------------------------------------------------------- the scripted participant


def _result(settings: dict[str, str] | None):
    interaction = {} if settings is None else {
        "settings": {a: {"setting": s, "by": "selector", "source": "default"} for a, s in settings.items()}}
    return SimpleNamespace(shown="ok", trace=SimpleNamespace(interaction=interaction, actions_run=[], actions_held=[]))


def test_scripted_participant_corrects_mismatches_in_its_own_words_and_accepts_matches():
    suite = prefsuite.parse(_mini_suite())
    persona = suite.personas[0]
    persona.voice = {"formality": {"casual": ["Keep it casual, we're a start-up.", "Drop the formalities."]}}
    sim = prefsuite.Scripted(suite, persona)
    targets = {**DEFAULTS["work"], "solution_breadth": "high", "formality": "casual"}
    shown = {**DEFAULTS["work"]}  # breadth low and formal: both wrong
    said = sim.react("work", ["solution_breadth", "formality"], targets, _result(shown), last=False)
    assert said == "Give me the alternatives side by side. Keep it casual, we're a start-up."
    # every word of it is learnable, in the context it is said in
    assert prefsuite.stated(said, "work") == {("work", "solution_breadth", "high"), ("work", "formality", "casual")}
    # the next correction to the same setting uses the persona's next phrasing
    assert sim.react("work", ["formality"], targets, _result(shown), last=False) == "Drop the formalities."
    # attributes not at stake are not remarked on, matches are accepted silently, the last one acknowledged
    right = {**shown, "formality": "casual"}
    assert sim.react("work", ["formality"], targets, _result(right), last=False) is None
    assert sim.react("work", ["formality"], targets, _result(right), last=True) == "Thanks, noted."
    assert sim.react("work", [], targets, _result(shown), last=False) is None
    # a turn that traced no settings is corrected like a wrong one
    assert sim.react("work", ["formality"], targets, _result(None), last=False) == "Keep it casual, we're a start-up."
    # it cannot rate behaviour: PRS is missing with a reason
    assert sim.rate("formality", "casual", _result(right))[0] is None


# ---------------------------------------------------------------- metric identities


def O(persona, context, attribute, target, chosen, kind="final", checkpoint="final", change=None, repeat=0):
    return ProbeOutcome(persona, checkpoint, kind, change, context, attribute, target,
                        DEFAULTS[context][attribute], repeat, chosen, "selector", "cells", chosen == target)


def test_metric_identities_on_hand_made_outcomes():
    # Persona a, formality: work target casual, personal target formal (differ).
    #   work chose casual (right), personal chose casual (wrong, not personal's default 'casual'? it IS the
    #   personal default -> no carry-over).
    # verbosity: work target detailed, personal target brief (differ). Both chose detailed: right for work,
    #   wrong for personal, and detailed is not personal's default (brief) -> carry-over.
    # solution_breadth: work high, personal high (same target: not a CS pair). Work right, personal wrong.
    out = [
        O("a", "work", "formality", "casual", "casual"), O("a", "personal", "formality", "formal", "casual"),
        O("a", "work", "verbosity", "detailed", "detailed"), O("a", "personal", "verbosity", "brief", "detailed"),
        O("a", "work", "solution_breadth", "high", "high"), O("a", "personal", "solution_breadth", "high", "low"),
        # Persona b: elicitation work infer / personal iterative, both right -> CS 1.
        O("b", "work", "elicitation", "infer", "infer"), O("b", "personal", "elicitation", "iterative", "iterative"),
        # a change of b's work verbosity: right before, wrong at the end -> PET 0; and one right twice -> 1.
        O("b", "work", "verbosity", "brief", "brief", "before_change", "before:c1", "c1"),
        O("b", "work", "verbosity", "terse", "brief"),
        O("b", "personal", "verbosity", "brief", "brief"),
        O("b", "work", "elicitation", "infer", "infer", "before_change", "before:c2", "c2"),
    ]
    psa = dict(prefs.psa_units(out))
    assert sum(psa.values()) == 6 and len(psa) == 10  # right: work formality, verbosity, breadth of a; b's elicitation x2, personal verbosity
    assert psa[("a", "personal", "verbosity")] == 0.0 and psa[("b", "work", "verbosity")] == 0.0
    cs = dict(prefs.cs_units(out))
    assert cs == {("a", "formality"): 0.0, ("a", "verbosity"): 0.0, ("b", "elicitation"): 1.0, ("b", "verbosity"): 0.0}
    carry = dict(prefs.carry_units(out))
    assert carry == {("a", "formality"): 0.0, ("a", "verbosity"): 1.0, ("b", "elicitation"): 0.0,
                     ("b", "verbosity"): 0.0}
    pet = dict(prefs.pet_units(out))
    assert pet == {("b", "c1", "work", "verbosity"): 0.0, ("b", "c2", "work", "elicitation"): 1.0}
    run = prefs.ConditionRun("cells", out, [], 0.0, ["selector"])
    ms = {(m.name, m.subset): m for m in prefs.metrics(run)}
    assert ms[("psa", "all")].value == pytest.approx(0.6) and ms[("psa", "all")].n == 10
    lo, hi = ms[("psa", "all")].interval
    assert (round(lo, 3), round(hi, 3)) == (0.313, 0.832)  # Wilson 95% for 6/10
    assert ms[("cs", "all")].value == 0.25 and ms[("carry_over", "all")].value == 0.25
    assert ms[("pet", "all")].value == 0.5 and ms[("pet", "all")].n == 2
    assert ms[("psa", "context:work")].n == 5 and ms[("psa", "attribute:verbosity")].n == 4
    # BRS and PRS without a judge or a model simulator: missing with the reason, never 0
    assert ms[("brs", "all")].value is None and "not computed" in ms[("brs", "all")].reason


def test_repeats_score_a_unit_by_its_share_of_right_repeats():
    out = [O("a", "work", "formality", "casual", "casual", repeat=0), O("a", "work", "formality", "casual", "formal", repeat=1),
           O("a", "personal", "formality", "formal", "formal", repeat=0),
           O("a", "personal", "formality", "formal", "formal", repeat=1)]
    assert dict(prefs.psa_units(out)) == {("a", "work", "formality"): 0.5, ("a", "personal", "formality"): 1.0}
    assert dict(prefs.cs_units(out)) == {("a", "formality"): 0.5}  # repeats paired by index


def test_random_baseline_is_the_exact_expectation():
    suite = prefsuite.parse(_mini_suite())
    r = prefs.random_baseline(suite)
    want = sum(1 / len(INV.attributes[a].settings) for a in INV.attributes) * 2 / 28
    assert r["psa"] == (pytest.approx(want), 28)
    # defaults earn every final cell whose target is the default: 28 - 3 changed from the default,
    # and the change moved work breadth back to its default 'low'
    assert r["defaults_psa"] == (pytest.approx(26 / 28), 28)
    assert r["pet"] == (pytest.approx(1 / 4), 1)


# ---------------------------------------------------------------- the replay through the turn


@pytest.fixture
def hashed(monkeypatch):
    """No sentence model: the hybrid retriever's dense half hashes words (same machinery)."""
    monkeypatch.setattr(embeddings, "_default", embeddings.HashEmbedder())


def _replay(tmp_path, settings, condition, suite=None, repeats=1):
    suite = suite or prefsuite.parse(_mini_suite())
    return prefs.replay(suite, condition, settings, tmp_path / condition, repeats=repeats)


def test_oracle_with_the_selector_path_scores_every_cell(tmp_path, settings, hashed):
    run = _replay(tmp_path, settings, "oracle", repeats=2)
    assert run.paths == ["selector"]
    ms = {(m.name, m.subset): m for m in prefs.metrics(run)}
    assert ms[("psa", "all")].value == 1.0 and ms[("psa", "all")].n == 28
    assert ms[("pet", "all")].value == 1.0
    assert {o.source for o in run.outcomes} == {"oracle"}
    assert len(run.outcomes) == 2 * (28 + 1)


def test_none_scores_what_the_defaults_alone_earn(tmp_path, settings, hashed):
    suite = prefsuite.parse(_mini_suite())
    run = _replay(tmp_path, settings, "none", suite)
    psa = next(m for m in prefs.metrics(run) if m.name == "psa" and m.subset == "all")
    assert psa.value == pytest.approx(prefs.defaults_earn(suite)[0])
    assert {o.source for o in run.outcomes} == {"default"}
    # the participant corrected (the defaults were wrong at stake) every time: nothing is read back
    [log] = run.logs
    assert log.corrections == 3 and log.corrected_attributes == 4


def test_cells_learn_the_corrections_on_policy(tmp_path, settings, hashed):
    run = _replay(tmp_path, settings, "cells")
    [log] = run.logs
    # s1 turn 1: breadth and formality wrong -> one correction; turn 2: formality now right -> ack
    # s2: verbosity wrong -> correction; the change's transcript is learned too
    assert (log.corrections, log.corrected_attributes, log.acknowledgements) == (2, 3, 1)
    assert log.cells_written == 4  # breadth and formality at work, verbosity at home, then breadth superseded
    before = {(o.context, o.attribute): o for o in run.outcomes if o.kind == "before_change"}
    assert before[("work", "solution_breadth")].chosen == "high" and before[("work", "solution_breadth")].right
    final = {(o.context, o.attribute): o for o in run.outcomes if o.kind == "final"}
    assert final[("work", "solution_breadth")].chosen == "low" and final[("work", "solution_breadth")].source == "cells"
    assert final[("work", "formality")].chosen == "casual"
    assert final[("personal", "verbosity")].chosen == "detailed"
    assert final[("personal", "formality")].chosen == "casual"  # its default; the work rule did not leak
    ms = {(m.name, m.subset): m for m in prefs.metrics(run)}
    assert ms[("psa", "all")].value == 1.0 and ms[("pet", "all")].value == 1.0


def test_a_probe_never_changes_the_main_timeline(tmp_path, settings, hashed):
    from consent import records as consent
    from memory.store import Store

    store = Store(tmp_path / "main")
    consent.accept(store, "maya", tz="UTC")
    from companion.turn import turn

    turn(store, "maya", "Just give me one option.", context="work", settings=settings,
         at=datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc))
    before = prefs._counts(store, "maya"), [c.public() for c in cells.all_(store, "maya")]
    suite = prefsuite.parse(_mini_suite())
    rp = prefs._Replay(suite, "cells", settings, tmp_path / "w", 2, None, None, None)
    (tmp_path / "w").mkdir()
    cp = prefsuite.Checkpoint("final", "final", 3, prefsuite.item_end(suite, suite.personas[0].timeline[-1]),
                              [("work", "solution_breadth"), ("work", "formality")], prefsuite.final_targets(suite.personas[0]))
    log = prefs.PersonaLog("maya")
    # the probe message states a preference here on purpose: learned in the copy, never in the main store
    suite.probe["formality"]["work"] = "Keep it casual."
    out = rp._probe(store, suite.personas[0], cp, prefsuite.Scripted(suite, suite.personas[0]), log)
    assert len(out) == 4 and log.probes == 4 and log.main_untouched
    assert (prefs._counts(store, "maya"), [c.public() for c in cells.all_(store, "maya")]) == before
    assert cells.settings_for(store, "maya", "work") == {"solution_breadth": "low"}
    assert list((tmp_path / "w").iterdir()) == []  # every copy was thrown away
    store.close()


def test_the_command_writes_the_report(tmp_path, settings, hashed, monkeypatch):
    from click.testing import CliRunner

    from companion.cli import main

    path = tmp_path / "suite.json"
    path.write_text(json.dumps(_mini_suite()))
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["eval", "preferences", "--suite", str(path), "--condition", "none",
                                    "--condition", "cells", "--out", str(out), "--model", "echo", "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "report.json").read_text())
    assert [r["condition"] for r in doc["runs"]] == ["none", "cells", "oracle"]  # the oracle row is added
    assert all(c["ok"] for c in doc["checks"])
    md = (out / "report.md").read_text()
    assert "RANDOM" in md and "DEFAULTS" in md and "BRS" in md and "no --judge" in md
    assert "companion eval preferences --suite" in md
    assert (out / "psa_by_attribute.png").exists() and (out / "outcomes.jsonl").exists()


# ---------------------------------------------------------------- model-driven simulator and judge


class SimModel:
    """Plays the participant and the judge from the prompt alone (registered as a model backend)."""

    seen: list = []

    def generate(self, model, messages, params):
        system, user = messages[0]["content"], messages[-1]["content"]
        type(self).seen.append(user)
        if "Rate how well" in system:
            yield "SimJudge says 4" if "judge" in system else "3"
        elif "Give the alternatives side by side" in system or "relaxed, conversational register" in system:
            yield "Give me the options side by side, and no need to be so formal."
        else:
            yield "ACCEPT"


def test_model_simulator_and_judge_see_only_public_behaviour(tmp_path, settings, hashed, install_plugin):
    from companion.backends.base import TextBackend

    globals()["SimBackend"] = type("SimBackend", (SimModel, TextBackend), {})
    install_plugin("prefs-sim", {"companion.models": {"simfake": "tests.test_preferences_track:SimBackend"}})
    SimModel.seen.clear()
    suite = prefsuite.parse(_mini_suite())
    judge = prefsuite.Judge("simfake/judge")
    run = prefs.replay(suite, "cells", settings, tmp_path / "cells", simulator="simfake/sim", judge=judge)
    # what the model saw is what was shown and done, never the declared settings
    assert SimModel.seen and all(s.startswith("Reply shown:") and "selector" not in s and "setting" not in s
                                 for s in SimModel.seen)
    [log] = run.logs
    # it asks for breadth and formality at both s1 decision points (it reads the wanted settings, not
    # the behaviour) and accepts s2; its words are learned like anyone's
    assert (log.corrections, log.acknowledgements) == (2, 0)
    final = {(o.context, o.attribute): o for o in run.outcomes if o.kind == "final"}
    assert final[("work", "formality")].chosen == "casual"  # learned from the model's own words
    ms = {(m.name, m.subset): m for m in prefs.metrics(run)}
    assert ms[("brs", "all")].value == 4.0 and ms[("brs", "all")].n == 28
    assert ms[("prs", "all")].value == 3.0 and ms[("prs", "all")].n == 28
