"""`companion trial ...` (arms, reports, the adaptive learner, planning) and `companion feedback`."""

from __future__ import annotations

import json
import sys

import click

from companion.cli.access import guarded
from companion.cli.base import common, fail, main, open_store, unknown
from memory import feedback as feedback_mod
from memory.store import StoreError


@main.group()
def trial():
    """Live gate trials: fix an arm per participant, or randomize per turn with a seed."""


@trial.command("set")
@click.option("--participant", "-p", required=True)
@click.option("--gate", required=True)
@click.option("--retriever", default=None, help="Default: the configured retriever.")
@click.option("--policy", default=None, help="Default: the configured policy.")
@common
@guarded("researcher")
def trial_set(participant, gate, retriever, policy, settings):
    from companion import trials

    try:
        trials.set_arm(open_store(settings), participant, gate, retriever or settings.retriever,
                       policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: every turn runs gate {gate}")


@trial.command("randomize")
@click.option("--participant", "-p", required=True)
@click.option("--gates", required=True, help="Comma-separated gate names, e.g. lexical,dense,never.")
@click.option("--seed", type=int, required=True)
@click.option("--retriever", default=None)
@click.option("--policy", default=None)
@common
@guarded("researcher")
def trial_randomize(participant, gates, seed, retriever, policy, settings):
    from companion import trials

    names = [g.strip() for g in gates.split(",") if g.strip()]
    try:
        trials.randomize(open_store(settings), participant, names, seed, retriever or settings.retriever,
                         policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: each turn draws one of {', '.join(names)} (blocked, seed {seed})")


@trial.command("show")
@click.option("--participant", "-p", required=True)
@common
@guarded("researcher")
def trial_show(participant, settings):
    from companion import trials

    click.echo(json.dumps(trials.current(open_store(settings), participant)))


@trial.command("clear")
@click.option("--participant", "-p", required=True)
@common
@guarded("researcher")
def trial_clear(participant, settings):
    from companion import trials

    trials.clear(open_store(settings), participant)
    click.echo(f"{participant}: back to the configured arm")


SECRET_OPTIONS = ("--researcher-password", "--passphrase")


def command_line(argv: list[str]) -> str:
    """The command as written at the top of a report, credentials replaced by ***."""
    out, hide = [], False
    for a in argv:
        if hide:
            out.append("***")
            hide = False
        elif a in SECRET_OPTIONS:
            out.append(a)
            hide = True
        elif a.startswith(tuple(o + "=" for o in SECRET_OPTIONS)):
            out.append(a.split("=", 1)[0] + "=***")
        else:
            out.append(a)
    return "companion " + " ".join(out)


@main.command("feedback")
@click.option("--participant", "-p", required=True)
@click.argument("dayid")
@click.argument("rating", type=click.Choice(["up", "down", "none"]))
@click.option("--tag", type=click.Choice(list(feedback_mod.tags())), default=None,
              help="; ".join(f"{k}: {v['label']}" for k, v in feedback_mod.tags().items()))
@common
@guarded("participant")
def feedback_cmd(participant, dayid, rating, tag, settings):
    """Rate the companion reply DAYID up or down (none retracts), optionally with a tag."""
    try:
        f, changed = feedback_mod.change(open_store(settings), participant, dayid, rating, tag=tag, via="cli")
    except StoreError as e:
        fail(str(e))
    if not changed:
        click.echo(f"{participant} {dayid}: unchanged ({'no rating to retract' if f is None else 'already so'})")
        return
    click.echo(f"{participant} {dayid}: {rating}" + (f" ({f.public()['tag_label']})" if f.tag else "")
               + (f", arm {f.arm}" if f.arm else ""))


@trial.command("report")
@click.option("--participant", "-p", "who", multiple=True, help="Only these participants (repeatable).")
@click.option("--since", default=None, help="Only turns from this ISO date or time (UTC) on.")
@click.option("--control", "--reference", "control", default=None, metavar="ARM",
              help="The reference arm differences are taken against: an arm's name (gate/retriever/policy) or a "
                   "gate naming one arm (default: the first arm given to `trial randomize`).")
@click.option("--bootstrap", type=int, default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print report.json to stdout (with or without --out).")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for report.md, report.json, outcomes.jsonl and the plots.")
@common
@guarded("researcher")
def trial_report(who, since, control, bootstrap, seed, as_json, out, settings):
    """Per arm: turns, retrieval, feedback, implicit signals, latency; differences with intervals.
    Turns outside any trial (before a participant's first assignment, after `trial clear`) are
    counted apart."""
    from pathlib import Path

    from companion import trialreport
    from memory import participants

    if bootstrap < 1:
        fail(f"--bootstrap must be at least 1, got {bootstrap}")
    store = open_store(settings)
    for p in who:
        if not participants.exists(store, p):
            unknown(p)
    if not out and not as_json:
        fail("give --out DIR (report.md, report.json, plots) or --json (report.json on stdout), or both")
    try:
        doc = trialreport.report(store, list(who) or None, since, control, bootstrap, seed,
                                 command=command_line(sys.argv[1:]), show_progress=None)
    except ValueError as e:
        fail(str(e))
    if out:
        doc = trialreport.write(doc, Path(out))
    else:
        doc = {k: v for k, v in doc.items() if k != "outcomes"}
    for w in doc["warnings"]:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        click.echo(f"wrote {Path(out) / 'report.md'}, report.json and {len(doc['plots'])} plot(s): "
                   f"{doc['n_turns']} turns of {doc['n_participants']} participant(s) in {len(doc['arms'])} arm(s)"
                   + (f"; {sum(v['counts']['turns'] for v in doc['outside_trial'].values())} turn(s) outside "
                      "the trial counted apart" if any(v['counts']['turns'] for v in doc['outside_trial'].values())
                      else ""))


@trial.command("learner")
@click.option("--participant", "-p", required=True)
@click.option("--as-of", "as_of", type=int, default=None,
              help="An ordinal: what the adaptive gate knew at that turn (default: now).")
@click.option("--json", "as_json", is_flag=True)
@common
@guarded("researcher")
def trial_learner(participant, as_of, as_json, settings):
    """The adaptive gate's state for PARTICIPANT: outcomes by kind and the posterior per threshold."""
    from memory import adaptive, participants

    store = open_store(settings)
    if not participants.exists(store, participant):
        unknown(participant)
    params = settings.params_for("gate", "adaptive")
    try:
        st = adaptive.state(store, participant, as_of, params.get("base", "lexical"), params.get("base_params"),
                            params.get("grid"), int(params.get("recent_window", 6)))
    except (LookupError, ValueError) as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(st))
        return
    click.echo(f"{participant} as of ordinal {st['as_of']}: {st['outcomes']} outcome(s) {st['by_kind']} "
               f"over base gate {st['base']}")
    for t, (a, b), m in zip(st["grid"], st["alpha_beta"], st["mean"]):
        click.echo(f"  threshold {t:.2f}: Beta({a:g}, {b:g}), mean {m:.3f}")


@trial.command("plan")
@click.option("--baseline", type=float, required=True, help="The outcome's rate in the reference arm.")
@click.option("--effect", type=float, required=True, help="The difference to detect (rate units).")
@click.option("--icc", type=float, required=True, help="Intra-participant correlation of the outcome.")
@click.option("--turns-per-participant", type=int, required=True)
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option("--power", type=float, default=0.8, show_default=True)
@click.option("--arms", type=int, default=2, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def trial_plan(baseline, effect, icc, turns_per_participant, alpha, power, arms, as_json):
    """Participants needed for a given power (formula: docs/METRICS.md, "Planning a trial")."""
    from companion import trialreport

    try:
        p = trialreport.plan(baseline, effect, icc, turns_per_participant, alpha, power, arms)
    except ValueError as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(p))
        return
    click.echo(f"{p['participants']} participants, each with "
               f"{turns_per_participant} turns over {arms} arms\n"
               f"  independent turns per arm n = ({p['z_alpha']} + {p['z_power']})^2 * "
               f"(p1(1-p1) + p2(1-p2)) / effect^2 = {p['turns_per_arm_independent']}\n"
               f"  design effect 1 + (m - 1) * icc = {p['design_effect']} (m = {p['turns_per_participant_per_arm']:g}"
               f" turns per participant per arm)\n"
               f"  turns per arm = {p['turns_per_arm']}; participants = ceil(turns per arm / m)")
