"""The Goal: a two-arm randomized trial run through the CLI (turns, feedback, report), with the
report's numbers checked against numbers computed by hand from the script below."""

import json

import pytest
from click.testing import CliRunner

from companion import trialreport
from companion.cli import main
from companion.trialreport import Turn

NEVER, ALWAYS = "never/hybrid/earlier_turns", "always/hybrid/earlier_turns"

# Blocked randomization with seed 7 gives these arms (asserted below from the traces).
SCRIPT = {
    "ana": [("my sister Mia lives in Porto", NEVER),
            ("I told you my sister lives in Porto", ALWAYS),  # restate -> about reply 1 (never)
            ("what should I cook tonight", ALWAYS),
            ("why are you bringing that up", NEVER)],  # irrelevant -> about reply 3 (always)
    "ben": [("I started a new job at the bakery", NEVER),
            ("no, her name is Priya", ALWAYS),  # correct -> about reply 1 (never)
            ("how was your day", NEVER),
            ("like I said, the bakery opens at six", ALWAYS)],  # restate -> about reply 3 (never)
}
# (participant, turn number) -> rating, tag
FEEDBACK = {("ana", 1): ("down", "forgot"), ("ana", 2): ("up", None), ("ana", 3): ("down", "misfit"),
            ("ben", 2): ("up", None), ("ben", 3): ("down", None), ("ben", 4): ("up", None)}


def run(*args, input=None):
    r = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


@pytest.fixture
def trial_run(home, tmp_path):
    for p in SCRIPT:
        run("consent", "accept", "-p", p)
        run("trial", "randomize", "-p", p, "--gates", "never,always", "--seed", 7)
        run("chat", "-p", p, "--model", "echo", input="".join(t + "\n" for t, _ in SCRIPT[p]))
        traces = json.loads(run("traces", "-p", p, "--json").stdout)
        assert [t["arm"]["name"] for t in traces] == [arm for _, arm in SCRIPT[p]]
        replies = [t["reply_dayid"] for t in traces]
        for (who, k), (rating, tag) in FEEDBACK.items():
            if who == p:
                run("feedback", "-p", p, replies[k - 1], rating, *(["--tag", tag] if tag else []))
    out = tmp_path / "report"
    r = run("trial", "report", "--reference", NEVER, "--json", "--out", out)
    return json.loads(r.stdout), out


def test_report_numbers_match_the_hand_computation(trial_run):
    doc, out = trial_run
    never, always = doc["arms"][NEVER], doc["arms"][ALWAYS]
    # never: ana 1, 4 and ben 1, 3. Rated: ana 1 (down, forgot), ben 3 (down).
    # Signals about its replies: ana 1 restate, ben 1 correct, ben 3 restate.
    assert never["counts"] == {"turns": 4, "retrieved": 0, "rated": 2, "up": 0, "down": 2, "tag_forgot": 1,
                               "tag_misfit": 0, "tag_wrong": 0, "restate": 2, "irrelevant": 0, "correct": 1}
    # always: ana 2, 3 and ben 2, 4. Rated: all four (3 up, ana 3 down misfit). ana 3 drew 'irrelevant'.
    assert always["counts"] == {"turns": 4, "retrieved": 4, "rated": 4, "up": 3, "down": 1, "tag_forgot": 0,
                                "tag_misfit": 1, "tag_wrong": 0, "restate": 0, "irrelevant": 1, "correct": 0}
    v = lambda arm, m: arm["metrics"][m]["value"]  # noqa: E731
    assert (v(never, "retrieval_rate"), v(always, "retrieval_rate")) == (0.0, 1.0)
    assert (v(never, "up_share"), v(always, "up_share")) == (0.0, 0.75)
    assert (v(never, "down_rate"), v(always, "down_rate")) == (0.5, 0.25)
    assert (v(never, "implicit_miss_rate"), v(always, "implicit_miss_rate")) == (0.5, 0.0)
    assert (v(never, "implicit_misuse_rate"), v(always, "implicit_misuse_rate")) == (0.0, 0.25)
    assert (v(never, "implicit_correction_rate"), v(always, "tag_misfit_rate")) == (0.25, 0.25)
    assert never["metrics"]["up_share"]["n"] == 2 and v(never, "latency_ms_mean") > 0

    d = {x["metric"]: x for x in doc["differences"]}
    assert all(x["arm"] == ALWAYS and x["reference"] == NEVER for x in doc["differences"])
    # Two participants: a resample is ana+ana, ben+ben or one of each.
    # retrieval: 1 in every resample
    assert d["retrieval_rate"]["value"] == 1.0 and d["retrieval_rate"]["interval"] == [1.0, 1.0]
    # down rate: ana alone 1/2 - 1/2 = 0, ben alone 0/2 - 1/2 = -0.5, both -0.25; each extreme has p = 1/4
    assert d["down_rate"]["value"] == -0.25 and d["down_rate"]["interval"] == [-0.5, 0.0]
    # implicit miss: each alone 0 - 1/2
    assert d["implicit_miss_rate"]["value"] == -0.5 and d["implicit_miss_rate"]["interval"] == [-0.5, -0.5]
    # up share among rated: ana alone 1/2 - 0/1, ben alone 2/2 - 0/1
    assert d["up_share"]["value"] == 0.75 and d["up_share"]["interval"] == [0.5, 1.0]

    rows = {(r["participant"], r["arm"]): r for r in doc["participants"]}
    assert rows[("ana", NEVER)]["tag_forgot"] == 1 and rows[("ana", NEVER)]["restate"] == 1
    assert rows[("ben", ALWAYS)]["up"] == 2 and rows[("ben", NEVER)]["correct"] == 1
    assert any("only 2 participant(s)" in w for w in doc["warnings"])
    assert not any("unbalanced" in w for w in doc["warnings"])

    md = (out / "report.md").read_text()
    assert "| implicit_miss_rate | 0.000 (n=4) | 0.500 (n=4) |" in md  # columns: always, never
    assert f"| {ALWAYS} | down_rate | -0.250 [-0.500, 0.000] |" in md
    assert json.loads((out / "report.json").read_text())["differences"] == doc["differences"]
    assert sorted(p.name for p in out.glob("*.png")) == ["arms.png", "differences.png"]
    turns = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]
    assert len(turns) == 8 and "outcomes" not in doc
    ana1 = next(t for t in turns if t["participant"] == "ana" and t["dayid"] == "day1-1")
    assert (ana1["arm"], ana1["rating"], ana1["tag"], ana1["signals"]) == (NEVER, -1, "forgot", ["restate"])


def test_report_filters_by_participant_and_refuses_bad_input(trial_run, tmp_path):
    r = run("trial", "report", "-p", "ben", "--json", "--out", tmp_path / "ben")
    doc = json.loads(r.stdout)
    assert doc["n_participants"] == 1 and doc["n_turns"] == 4
    r = CliRunner().invoke(main, ["trial", "report", "-p", "zed", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown participant 'zed'" in r.output
    r = CliRunner().invoke(main, ["trial", "report", "--since", "yesterday", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--since must be an ISO date" in r.output
    r = run("trial", "report", "--since", "2999-01-01", "--json", "--out", tmp_path / "future")
    assert json.loads(r.stdout)["n_turns"] == 0


def test_unbalanced_arms_and_one_arm_participants_are_warned():
    turns = [Turn("p", "a", "a", i, None, None, "", False, 1.0) for i in range(10)]
    turns += [Turn("q", "b", "b", 100 + i, None, None, "", True, 1.0) for i in range(5)]
    doc = trialreport.analyse(turns, bootstrap=50)
    w = " ".join(doc["warnings"])
    assert "unbalanced: a 10 turns, b 5 turns" in w and "p ran only a" in w and "q ran only b" in w


def test_plan_matches_the_formula_by_hand():
    # z = 1.95996 + 0.84162; n = 2.80158^2 * (0.2*0.8 + 0.3*0.7) / 0.1^2 = 290.4 turns per arm;
    # m = 20, DE = 1 + 19 * 0.05 = 1.95; 290.4 * 1.95 / 20 = 28.3 -> 29 participants
    r = run("trial", "plan", "--baseline", 0.2, "--effect", 0.1, "--icc", 0.05, "--turns-per-participant", 40,
            "--json")
    p = json.loads(r.stdout)
    assert p["participants"] == 29 and p["design_effect"] == 1.95 and p["turns_per_arm_independent"] == 290.4
    r = CliRunner().invoke(main, ["trial", "plan", "--baseline", "0.95", "--effect", "0.1", "--icc", "0.05",
                                  "--turns-per-participant", "40"])
    assert r.exit_code == 2 and "baseline + effect strictly between 0 and 1" in r.output


def test_feedback_cli_refuses_by_name(home):
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="hello\n")
    r = CliRunner().invoke(main, ["feedback", "-p", "ana", "day1-1", "up"])
    assert r.exit_code == 2 and "participant's own message" in r.output
    r = run("feedback", "-p", "ana", "day1-2", "down", "--tag", "wrong")
    assert "got something about me wrong" in r.output


def test_a_credential_on_the_command_line_never_reaches_the_report():
    from companion.cli.trial import command_line

    assert command_line(["trial", "report", "--researcher-password", "s3cret", "--out", "r"]) == \
        "companion trial report --researcher-password *** --out r"
    assert "s3cret" not in command_line(["trial", "report", "--researcher-password=s3cret"])


def test_the_adaptive_learner_is_readable_as_of_a_turn(home):
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="my dog Rex\nwhy are you bringing that up\nhello\n")
    now = json.loads(run("trial", "learner", "-p", "ana", "--json").stdout)
    assert now["outcomes"] == 1 and now["by_kind"] == {"misuse": 1}
    before = json.loads(run("trial", "learner", "-p", "ana", "--as-of", 3, "--json").stdout)
    assert before["outcomes"] == 0 and before["mean"] == [0.5] * 11
    r = run("trial", "learner", "-p", "ana")
    assert "threshold 1.00: Beta(2, 1), mean 0.667" in r.stdout


def test_turns_outside_the_trial_are_apart_and_the_reference_is_the_first_arm_given(home):
    """ana: two turns before `trial randomize --gates never,always` (the configured arm), four
    trial turns (blocked, seed 7: never, always, always, never, as in SCRIPT), one after `trial
    clear`. Ratings: t0 down+forgot, t1 up, t2 down.
    By hand: never = t0, t3: 2 turns, 0 retrieved, 1 rated (down, forgot): down_rate 1/2, up_share 0/1.
    always = t1, t2: 2 turns, 2 retrieved, 2 rated (1 up, 1 down): down_rate 1/2, up_share 1/2.
    Reference never (the first given, not the first by name): always - never = retrieval 1.0,
    down_rate 0.0, up_share 0.5. Outside: 2 turns before the assignment, 1 after the trial."""
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="good morning\nthe weather is grey\n")
    run("trial", "randomize", "-p", "ana", "--gates", "never,always", "--seed", 7)
    run("chat", "-p", "ana", "--model", "echo", input="lunch was soup\nthe bus was full\nwatering plants\nreading now\n")
    run("trial", "clear", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="good night\n")
    traces = json.loads(run("traces", "-p", "ana", "--json").stdout)
    assert [t["arm"]["assignment"] for t in traces] == ["settings"] * 2 + ["randomized"] * 4 + ["settings"]
    assert [t["arm"]["name"] for t in traces[2:6]] == [NEVER, ALWAYS, ALWAYS, NEVER]
    for k, (rating, tag) in {2: ("down", "forgot"), 3: ("up", None), 4: ("down", None)}.items():
        run("feedback", "-p", "ana", traces[k]["reply_dayid"], rating, *(["--tag", tag] if tag else []))
    doc = json.loads(run("trial", "report", "--json", "--bootstrap", 50).stdout)  # no --out: stdout only
    assert sorted(doc["arms"]) == [ALWAYS, NEVER] and doc["n_turns"] == 4 and doc["reference"] == NEVER
    assert doc["outside_trial"]["before_assignment"]["counts"]["turns"] == 2
    assert doc["outside_trial"]["after_trial"]["counts"]["turns"] == 1
    never, always = doc["arms"][NEVER]["counts"], doc["arms"][ALWAYS]["counts"]
    assert (never["turns"], never["retrieved"], never["rated"], never["down"], never["tag_forgot"]) == (2, 0, 1, 1, 1)
    assert (always["turns"], always["retrieved"], always["rated"], always["up"], always["down"]) == (2, 2, 2, 1, 1)
    d = {x["metric"]: x["value"] for x in doc["differences"]}
    assert all(x["reference"] == NEVER for x in doc["differences"])
    assert (d["retrieval_rate"], d["down_rate"], d["up_share"]) == (1.0, 0.0, 0.5)
    named = json.loads(run("trial", "report", "--json", "--bootstrap", 50, "--control", "always").stdout)
    assert named["reference"] == ALWAYS and {x["metric"]: x["value"] for x in named["differences"]}[
        "retrieval_rate"] == -1.0
    r = CliRunner().invoke(main, ["trial", "report", "--json", "--control", "dense"])
    assert r.exit_code == 2 and "--control 'dense' ran no turns here" in r.output
    r = CliRunner().invoke(main, ["trial", "report"])
    assert r.exit_code == 2 and "give --out DIR" in r.output
