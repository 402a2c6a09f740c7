"""`companion actions ...`: list, approve, reject."""

from __future__ import annotations

import json

import click

from companion.cli.access import guarded
from companion.cli.base import common, fail, known_participant, main, open_store


@main.group("actions")
def actions_group():
    """The participant's actions: held ones wait for approval; nothing is ever sent off the machine."""


@actions_group.command("list")
@click.option("--participant", "-p", required=True)
@click.option("--all", "show_all", is_flag=True, help="Everything, not only what waits for approval.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def actions_list(participant, show_all, as_json, settings):
    """Held actions (or all of them, with --all): id, status, what it does."""
    from companion import actions

    store = open_store(settings)
    known_participant(store, participant, need_consent=False)  # names an unknown participant
    rows = actions.history(store, participant) if show_all else actions.pending(store, participant)
    number = _numbers(store, participant)
    if as_json:
        click.echo(json.dumps([{**a.public(), "number": number.get(a.id)} for a in rows], ensure_ascii=False,
                              indent=1))
        return
    if not rows:
        click.echo(f"No actions for {participant} yet." if show_all else
                   f"Nothing waits for {participant}'s approval." + ("" if show_all else " (--all lists everything)"))
        return
    width = max(1, *(len(str(number.get(a.id, "-"))) for a in rows))
    click.echo(f"{'#':>{width}}  {'status':<14} {'context':<8} action")
    for a in rows:
        click.echo(f"{number.get(a.id, '-'):>{width}}  {a.status:<14} {a.context:<8} {a.summary}")


def _numbers(store, participant: str) -> dict[int, int]:
    """Action id -> the participant's own number for it: 1, 2, 3 ... over the actions they could
    see, so dropped ones (never shown) leave no gaps and nobody else's actions count."""
    from companion import actions

    shown = [a.id for a in actions.history(store, participant) if a.status != "dropped"]
    return {aid: n for n, aid in enumerate(sorted(shown), 1)}


def _resolve_cmd(approve: bool):
    @click.argument("number", type=int)
    @click.option("--participant", "-p", required=True)
    @click.option("--id", "by_id", is_flag=True, help="NUMBER is the stored id (`id` in --json), not the # listed.")
    @common
    @guarded("participant")
    def cmd(number, participant, by_id, settings):
        from companion import actions

        store = open_store(settings)
        if by_id:
            action_id = number
        else:
            ids = {n: aid for aid, n in _numbers(store, participant).items()}
            if number not in ids:
                fail(f"no action #{number} for {participant}: `companion actions list -p {participant} --all` "
                     "lists them")
            action_id = ids[number]
        try:
            row = (actions.approve if approve else actions.reject)(store, participant, action_id, via="cli")
        except actions.ActionError as e:
            fail(str(e))
        click.echo(f"{row.status}: {row.summary}")

    cmd.__doc__ = ("Approve held action NUMBER (the # in `actions list`): it runs now." if approve else
                   "Reject held action NUMBER (the # in `actions list`): it never runs.")
    return cmd


actions_group.command("approve")(_resolve_cmd(True))
actions_group.command("reject")(_resolve_cmd(False))
