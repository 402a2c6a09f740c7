"""Actions held for the participant's approval (each with Approve and Reject), and the history
of actions with the outbox (drafts and messages that ran, never sent)."""

from __future__ import annotations

import functools
from datetime import datetime

import gradio as gr

from companion import actions, gate
from companion.markup import text as as_text
from companion.panels.common import Shared
from memory import participants
from memory.keys import zone
from memory.store import Store

ACTION_COLUMNS = ["id", "action", "what", "status", "why", "context"]


def _tz(store: Store, participant: str):
    try:
        return zone((participants.get(store, participant) or {}).get("tz") or "UTC")
    except ValueError:
        return zone("UTC")


def summary_in_zone(a, tz) -> str:
    """The action's summary with its time in the participant's zone as it is now (a reminder
    set before they changed zone keeps its instant, and is shown at their new wall-clock time)."""
    when = a.payload.get("when")
    if not when:
        return a.summary
    try:
        local = datetime.fromisoformat(when)
        local = local.astimezone(tz) if local.tzinfo else local
    except ValueError:
        return a.summary
    return actions.describe(a.kind, {**a.payload, "when": local.isoformat()})


def held_rows(store: Store, participant: str) -> list[dict]:
    """The participant's actions waiting for approval (or for missing facts), as the panel shows them."""
    tz = _tz(store, participant)
    return [{"id": a.id, "title": a.title, "summary": summary_in_zone(a, tz), "reason": a.reason, "status": a.status,
             "missing": actions.missing(a.kind, a.payload) if a.status == "awaiting_facts" else []}
            for a in actions.pending(store, participant)]


def action_history(store: Store, participant: str) -> list[list]:
    """The participant's actions, newest first; drafts and messages that ran are in the outbox.
    Proposals the wrapper dropped unasked (outreach switched off ...) were never offered: they
    are in the turn's trace, not here."""
    outbox = {a.id for a in actions.outbox(store, participant)}
    tz = _tz(store, participant)
    return [[a.id, a.title, summary_in_zone(a, tz), "in your outbox (not sent)" if a.id in outbox else a.status,
             a.reason, a.context] for a in actions.history(store, participant) if a.status != "dropped"]


def held_markdown(r: dict) -> str:
    """One held action as the approval panel shows it: every part of it is text."""
    needs = f" Still missing: {', '.join(r['missing'])}." if r["missing"] else ""
    return (f"**#{r['id']} {as_text(r['title'])}**: {as_text(r['summary'])}  \n"
            f"_{as_text(r['reason'])}._{as_text(needs)}")


def _resolved(a, tz) -> str:
    summary = as_text(summary_in_zone(a, tz))
    if a.status == "rejected":
        return f"Rejected #{a.id}: {summary}. It will not run."
    done = {"scheduled": "scheduled", "done": "done"}.get(a.status, a.status)
    if a.kind in ("draft_message", "send_message"):
        done = "written to your outbox, not sent"
    return f"Approved #{a.id}: {summary} ({done})."


class HeldActions:
    """Built inside the chat column; `view` refreshes it for whoever the session acts for now."""

    def __init__(self, sh: Shared):
        self.sh = sh
        self.pending = gr.State([])  # what the approval panel lists (rows of held_rows)
        with gr.Accordion("Waiting for your approval", open=True, elem_id="held-actions"):
            self.msg = gr.Markdown(elem_id="act-msg")

            @gr.render(inputs=[self.pending, sh.session], triggers=[self.pending.change])
            @gate.view
            def held_list(rows, sess):
                if not rows or not sh.acting(sess):  # signed out, or the account ended: nothing shown
                    gr.Markdown("_Nothing is waiting for your approval._", elem_id="act-none")
                    return
                for r in rows:
                    with gr.Row(key=f"held-{r['id']}", elem_classes=["held-action"]):
                        gr.Markdown(held_markdown(r), key=f"held-text-{r['id']}")
                        yes = gr.Button("Approve", variant="primary", size="sm", scale=0,
                                        key=f"approve-{r['id']}", elem_id=f"act-approve-{r['id']}")
                        no = gr.Button("Reject", size="sm", scale=0, key=f"reject-{r['id']}",
                                       elem_id=f"act-reject-{r['id']}")
                        yes.click(functools.partial(self.act_resolve, r["id"], True), [sh.session], self.outs,
                                  api_visibility="private")
                        no.click(functools.partial(self.act_resolve, r["id"], False), [sh.session], self.outs,
                                 api_visibility="private")

            # The same handlers by action number, for the API (scripts, tests): not shown.
            self.act_id = gr.Number(visible=False, precision=0, elem_id="act-id")
            self.approve_api = gr.Button(visible=False)
            self.reject_api = gr.Button(visible=False)
        with gr.Accordion("Actions and outbox", open=False, elem_id="action-history"):
            self.refresh = gr.Button("Refresh", size="sm")
            self.hist = gr.Dataframe(headers=ACTION_COLUMNS, interactive=False, wrap=True, elem_id="act-history")
        self.outs = [self.msg, self.pending, self.hist]

    @gate.view
    def act_view(self, sess: dict):
        p = self.sh.acting(sess)
        if not p:
            return [], []
        return held_rows(self.sh.store, p), action_history(self.sh.store, p)

    @gate.participant
    def act_resolve(self, action_id, approve: bool, sess: dict):
        participant = self.sh.require(sess)
        if action_id in (None, ""):
            raise gr.Error("Choose an action.")
        try:
            a = (actions.approve if approve else actions.reject)(self.sh.store, participant, int(action_id),
                                                                via="ui")
        except (actions.ActionError, ValueError) as e:
            raise gr.Error(str(e)) from None
        self.sh.plan_outreach()
        return (_resolved(a, _tz(self.sh.store, participant)), *self.act_view(sess))

    @gate.participant
    def act_approve(self, action_id, sess: dict):
        return self.act_resolve(action_id, True, sess)

    @gate.participant
    def act_reject(self, action_id, sess: dict):
        return self.act_resolve(action_id, False, sess)

    def wire(self) -> None:
        s = self.sh.session
        self.approve_api.click(self.act_approve, [self.act_id, s], self.outs, api_name="act_approve")
        self.reject_api.click(self.act_reject, [self.act_id, s], self.outs, api_name="act_reject")
        self.refresh.click(self.act_view, [s], [self.pending, self.hist], api_name="act_view")

    def follow(self, events) -> None:
        """Refresh after `events` (a reply may have held an action, or resolved one: "yes" in the chat)."""
        for ev in events:
            ev.then(self.act_view, [self.sh.session], [self.pending, self.hist], api_visibility="private")
