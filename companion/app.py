"""The Gradio app: sign-in, consent, chat with streamed replies and a memory line per reply.

Each browser session holds its participant in server-side state; every handler reads and
writes that participant only, so a participant sees only their own conversation.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import queue
import threading

import companion  # noqa: F401  (no-telemetry environment first)
import gradio as gr
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from companion import auth, inspector, researcher, trialpanel, trials
from companion.markup import text as as_text
from consent import access, downloads
from companion.settings import Settings
from companion.turn import turn
from consent import records as consent
from memory import messages, participants, registry, traces
from memory.store import Store, StoreError
from memory.traces import Trace
from companion import actions

HISTORY_SHOWN = 200  # messages loaded into the chat on sign-in
ACTION_COLUMNS = ["id", "action", "what", "status", "why", "context"]
log = logging.getLogger(__name__)


# Gradio shows a trash icon on the chat that empties the view while every message stays
# stored (deleting is "What I remember" and withdrawal); it has no option to hide it.
CSS = """
#chat button[aria-label="Clear"] { display: none !important; }
"""


def new_session() -> dict:
    # participant + uid: signed in and consented, as the account with that identity (a
    # withdrawal retires the uid, so the session cannot act for a newcomer with the same name);
    # pending: waiting for consent, either a sign-up ({"name", "pass_hash", "new"}) or an
    # existing account whose passphrase was checked ({"name", "verified": (uid, pass_hash)});
    # researcher: the researcher password was given in this session.
    return {"participant": None, "uid": None, "pending": {}, "researcher": False}


def model_note(model: str) -> str:
    """Which model answers, and for the embedded one, what it is."""
    line = f"Replies come from the model `{as_text(model)}`."
    if model.startswith("local/"):
        line += (" This is a small demo model that runs on this computer: it often loses the thread, "
                 "repeats itself or invents things. To talk to a real model, see “Connecting a real model” "
                 "in the README.")
    return line


def unpaired_surrogate(message: str) -> int | None:
    """Where a message holds a lone UTF-16 surrogate (from a broken client; it cannot be
    stored or sent back as UTF-8), or None."""
    for i, ch in enumerate(message):
        if "\ud800" <= ch <= "\udfff":
            return i
    return None


def memory_line(trace: Trace | None) -> tuple[str, str]:
    """The collapsible line under a reply: a title, and details from the turn's trace."""
    if trace is None:
        return "Memory: no trace for this reply", ""
    d = trace.decision
    gate = trace.gate.get("name", "?")
    if d is None:
        title = "Memory: not consulted"
        details = "; ".join(trace.fallbacks) or "no decision was made"
    elif not d["retrieve"]:
        title = f"Memory: abstained (score {d['score']:.2f} < threshold {d['threshold']:.2f})"
        details = f"Gate `{gate}`: {as_text(d['reason'])}"
    else:
        used = trace.applied.get("items", [])
        head = f"score {d['score']:.2f} ≥ threshold {d['threshold']:.2f}"
        if used:
            title = f"Memory: used {', '.join(used)} ({head})"
        else:
            title = f"Memory: looked back, nothing applied ({head})"
        snippets = {h["dayid"]: h for h in trace.hits}
        lines = [f"Gate `{gate}`: {as_text(d['reason'])}",
                 f"Retriever `{trace.retriever.get('name')}`; placed under “{trace.applied.get('heading')}”"]
        for dayid in used:
            h = snippets.get(dayid, {})
            lines.append(f"- **{dayid}** ({h.get('score', 0):.3f}): {as_text(h.get('text', ''))}")
        details = "\n".join(lines)
    if trace.errors:
        title += " · error"
        details += "\n" + "\n".join(f"- {e.step}: {e.type}: {as_text(e.message)}" for e in trace.errors)
    return title, details


def _memory_message(trace: Trace | None) -> dict:
    title, details = memory_line(trace)
    return {"role": "assistant", "content": details or title, "metadata": {"title": title, "status": "done"}}


def history(store: Store, participant: str) -> list[dict]:
    rows = messages.read(store, participant, messages.next_ordinal(store, participant), limit=HISTORY_SHOWN)
    by_reply = {t.reply_dayid: t for t in traces.list_(store, participant=participant, limit=HISTORY_SHOWN)}
    out = []
    prev = None
    for m in rows:
        if m.sender == "user":
            out.append({"role": "user", "content": as_text(m.text)})
        else:
            out.append({"role": "assistant", "content": as_text(m.text)})
            trace = by_reply.get(m.dayid)
            if trace is not None or prev == "user":  # a reminder or check-in answers nothing: no memory line
                out.append(_memory_message(trace))
        prev = m.sender
    return out


def held_rows(store: Store, participant: str) -> list[dict]:
    """The participant's actions waiting for approval (or for missing facts), as the panel shows them."""
    return [{"id": a.id, "title": a.title, "summary": a.summary, "reason": a.reason, "status": a.status,
             "missing": actions.missing(a.kind, a.payload) if a.status == "awaiting_facts" else []}
            for a in actions.pending(store, participant)]


def action_history(store: Store, participant: str) -> list[list]:
    """The participant's actions, newest first; drafts and messages that ran are in the outbox.
    Proposals the wrapper dropped unasked (outreach switched off ...) were never offered: they
    are in the turn's trace, not here."""
    outbox = {a.id for a in actions.outbox(store, participant)}
    return [[a.id, a.title, a.summary, "in your outbox (not sent)" if a.id in outbox else a.status, a.reason,
             a.context] for a in actions.history(store, participant) if a.status != "dropped"]


def _resolved(a) -> str:
    if a.status == "rejected":
        return f"Rejected #{a.id}: {as_text(a.summary)}. It will not run."
    done = {"scheduled": "scheduled", "done": "done"}.get(a.status, a.status)
    if a.kind in ("draft_message", "send_message"):
        done = "written to your outbox, not sent"
    return f"Approved #{a.id}: {as_text(a.summary)} ({done})."


def plan_outreach(scheduler, store: Store) -> None:
    """Give reminders and check-ins that now run their delivery job (idempotent)."""
    if scheduler is None:
        return
    try:
        from companion.scheduler import plan

        plan(scheduler, store)
    except Exception:  # a reply or an approval never fails for it; the next call tries again
        log.exception("could not schedule reminder delivery")


def build(settings: Settings, store: Store | None = None, scheduler=None) -> gr.Blocks:
    """The app. `scheduler` (companion.scheduler, running) gets a delivery job for each reminder or
    check-in that a reply or an approval schedules; without it the rows wait for the next start."""
    store = store or Store(settings.data_dir)
    guard = auth.SignInGuard()  # sign-ins (participants' names, and "researcher"): per name and address
    text = consent.current()
    live_gates = [n for n in registry.names("gate") if not getattr(registry.get("gate", n), "eval_only", False)]
    downloads.sweep(store.data_dir)

    with App(title="Companion", analytics_enabled=False) as demo:
        demo.companion_settings, demo.companion_store = settings, store
        session = gr.State(new_session())
        gr.Markdown("## Companion")
        gr.Markdown(model_note(settings.model), elem_id="model-note")
        with gr.Tab("Chat", elem_id="tab-chat"):
            with gr.Column(visible=True) as signin_box:
                name = gr.Textbox(label="Name", elem_id="signin-name")
                passphrase = gr.Textbox(label="Passphrase", type="password", elem_id="signin-pass")
                signin_btn = gr.Button("Sign in", variant="primary", elem_id="signin-btn")
                signin_msg = gr.Markdown(elem_id="signin-msg")
            with gr.Column(visible=False) as consent_box:
                gr.Markdown(f"### Consent (version {text.version})\n\n{text.text}", elem_id="consent-text")
                with gr.Row():
                    accept_btn = gr.Button("I accept", variant="primary", elem_id="consent-accept")
                    decline_btn = gr.Button("I decline", elem_id="consent-decline")
            with gr.Column(visible=False) as chat_box:
                who = gr.Markdown(elem_id="who")
                context = gr.Radio(["personal", "work"], value="personal", label="Context", elem_id="context")
                # The label sits above the box, not floating over its first line as the chat scrolls.
                gr.Markdown("**Conversation**", elem_id="chat-label")
                chatbot = gr.Chatbot(label="Conversation", show_label=False, height=480, elem_id="chat",
                                     buttons=["copy"], feedback_options=trialpanel.FEEDBACK_OPTIONS)
                with gr.Row():
                    box = gr.Textbox(label="Message", placeholder="Write a message…", scale=5, elem_id="msg")
                    send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
                trialpanel.feedback_hook(chatbot, session, store)  # thumbs and tags on replies
                with gr.Row():
                    signout = gr.Button("Sign out", size="sm")
                    download_btn = gr.Button("Download my data", size="sm", elem_id="download")
                    withdraw_btn = gr.Button("Withdraw from the study", size="sm", variant="stop", elem_id="withdraw")
                download_link = gr.Markdown(elem_id="download-link")
                withdraw_confirm = gr.Checkbox(label="Yes, erase everything about me", value=False)
                account_msg = gr.Markdown(elem_id="account-msg")
                act_pending = gr.State([])  # what the approval panel lists (rows of held_rows)
                with gr.Accordion("Waiting for your approval", open=True, elem_id="held-actions"):
                    act_msg = gr.Markdown(elem_id="act-msg")

                    @gr.render(inputs=[act_pending])
                    def held_list(rows):
                        if not rows:
                            gr.Markdown("_Nothing is waiting for your approval._", elem_id="act-none")
                            return
                        for r in rows:
                            with gr.Row(key=f"held-{r['id']}", elem_classes=["held-action"]):
                                needs = f" Still missing: {', '.join(r['missing'])}." if r["missing"] else ""
                                needs = as_text(needs)
                                gr.Markdown(f"**#{r['id']} {as_text(r['title'])}**: {as_text(r['summary'])}  \n"
                                            f"_{as_text(r['reason'])}._{needs}",
                                            key=f"held-text-{r['id']}")
                                yes = gr.Button("Approve", variant="primary", size="sm", scale=0,
                                                key=f"approve-{r['id']}", elem_id=f"act-approve-{r['id']}")
                                no = gr.Button("Reject", size="sm", scale=0, key=f"reject-{r['id']}",
                                               elem_id=f"act-reject-{r['id']}")
                                yes.click(functools.partial(act_resolve, r["id"], True), [session], act_outs,
                                          api_visibility="private")
                                no.click(functools.partial(act_resolve, r["id"], False), [session], act_outs,
                                         api_visibility="private")

                    # The same handlers by action number, for the API (scripts, tests): not shown.
                    act_id = gr.Number(visible=False, precision=0)
                    act_approve_api = gr.Button(visible=False)
                    act_reject_api = gr.Button(visible=False)
                with gr.Accordion("Actions and outbox", open=False, elem_id="action-history"):
                    act_refresh = gr.Button("Refresh", size="sm")
                    act_hist = gr.Dataframe(headers=ACTION_COLUMNS, interactive=False, wrap=True,
                                            elem_id="act-history")
                with gr.Accordion("What I remember", open=False, elem_id="memory-inspector") as mem_box:
                    gr.Markdown("What the companion has learned about you, each item with the messages it "
                                "came from. Pick an item to see them; correct or delete what is wrong. "
                                "A deleted item is gone everywhere and is not learned again from the same messages.")
                    mem_refresh = gr.Button("Refresh", size="sm", elem_id="mem-refresh")
                    mem_table = gr.Dataframe(headers=inspector.COLUMNS, interactive=False, wrap=True,
                                             elem_id="mem-table")
                    with gr.Row():
                        mem_item = gr.Dropdown(label="Item", choices=[], value=None, allow_custom_value=True,
                                               scale=2, elem_id="mem-item")
                        mem_text = gr.Textbox(label="New wording (profile, file memory) or setting (preference)",
                                              scale=3, elem_id="mem-text")
                    with gr.Row():
                        mem_show_btn = gr.Button("Show sources", size="sm", elem_id="mem-show")
                        mem_edit_btn = gr.Button("Save correction", size="sm", elem_id="mem-edit")
                        mem_delete_btn = gr.Button("Delete everywhere", size="sm", variant="stop",
                                                   elem_id="mem-delete")
                    mem_msg = gr.Markdown(elem_id="mem-msg")
                    mem_sources = gr.Markdown(elem_id="mem-sources")
                    gr.Markdown("#### Persona")
                    mem_persona = gr.Markdown(elem_id="mem-persona")
                    gr.Markdown("#### Memory document")
                    mem_file = gr.Markdown(elem_id="mem-file")
                    with gr.Row():
                        mem_version = gr.Dropdown(label="Version", choices=[], value=None, allow_custom_value=True,
                                                  scale=3, elem_id="mem-version")
                        mem_show_v = gr.Button("Show version", size="sm", scale=1)
                        mem_restore_btn = gr.Button("Restore this version", size="sm", scale=1,
                                                    elem_id="mem-restore")
                    mem_version_text = gr.Markdown(elem_id="mem-version-text")

        with gr.Tab("Researcher", elem_id="tab-research"):
            with gr.Row():
                r_pass = gr.Textbox(label="Researcher password", type="password", elem_id="r-pass", scale=3)
                r_open = gr.Button("Open", elem_id="r-open", scale=1)
            r_msg = gr.Markdown(elem_id="r-msg")
            with gr.Column(visible=False) as r_box:
                with gr.Row():
                    f_part = gr.Dropdown(label="Participant", choices=[""], value="", allow_custom_value=True)
                    f_arm = gr.Dropdown(label="Arm", choices=[""], value="", allow_custom_value=True)
                    f_dec = gr.Dropdown(label="Decision", choices=["", "retrieved", "abstained"], value="")
                    r_refresh = gr.Button("Refresh")
                r_table = gr.Dataframe(headers=researcher.COLUMNS, interactive=False, elem_id="r-table")
                with gr.Row():
                    r_id = gr.Number(label="Trace id", precision=0)
                    r_show = gr.Button("Show turn")
                    r_export = gr.Button("Export JSONL")
                r_detail = gr.Markdown(elem_id="r-detail")
                r_file = gr.Markdown(elem_id="r-file")
                gr.Markdown("#### Participants and consent")
                r_people = gr.Dataframe(headers=access.COLUMNS, interactive=False)
                gr.Markdown("#### Trial arms")
                with gr.Row():
                    t_part = gr.Dropdown(label="Participant", choices=[""], value="", allow_custom_value=True)
                    t_gates = gr.Dropdown(label="Gate(s)", multiselect=True, choices=live_gates)
                    t_seed = gr.Number(label="Seed (randomize)", value=1, precision=0)
                with gr.Row():
                    t_fix = gr.Button("Fix the first gate")
                    t_rand = gr.Button("Randomize per turn")
                t_msg = gr.Markdown()
                trialpanel.results_panel(session, store)

        def show(stage: str):
            return (gr.update(visible=stage == "signin"), gr.update(visible=stage == "consent"),
                    gr.update(visible=stage == "chat"))

        def acting(sess: dict) -> str | None:
            """The participant this session acts for, or None. Checked on every action: an
            account withdrawn (and perhaps registered again by someone else) since sign-in ends
            the session instead of handing it the new account."""
            p = sess.get("participant")
            if p and participants.uid(store, p) != sess.get("uid"):
                sess.update(new_session(), researcher=sess.get("researcher", False), ended=p)
                return None
            return p

        def require(sess: dict) -> str:
            p = acting(sess)
            if p:
                return p
            if sess.pop("ended", None):
                raise gr.Error("Your session has ended: this account was withdrawn. Sign in again.")
            raise gr.Error("Sign in first.")

        def enter_chat(sess: dict, participant: str, uid: str):
            sess["participant"], sess["uid"], sess["pending"] = participant, uid, {}
            return (sess, *show("chat"), f"Signed in as **{as_text(participant)}**", history(store, participant), "")

        def client_address(request: gr.Request | None) -> str:
            # The socket's peer: uvicorn replaces it from X-Forwarded-For only for the proxies
            # named in settings.trusted_proxies (App.launch), so a client cannot pick it.
            return getattr(getattr(request, "client", None), "host", None) or "unknown"

        def sign_in(n, p, sess: dict, request: gr.Request):
            n = (n or "").strip()
            address = client_address(request)
            blank = (sess, *show("signin"), gr.update(), gr.update(), "")
            sess["pending"] = {}
            try:
                participants.check_name(n)
            except StoreError as e:
                return (*blank[:-1], str(e))
            wait = guard.blocked_for(n, address)
            if wait > 0:
                return (*blank[:-1], f"Too many failed sign-ins for {n}; try again in {wait:.0f} s.")
            record = participants.get(store, n)
            if record is None:  # a new participant: nothing is stored until consent
                try:
                    sess["pending"] = {"name": n, "pass_hash": auth.hash_passphrase(p or ""), "new": True}
                except ValueError as e:
                    return (*blank[:-1], str(e))
                return (sess, *show("consent"), gr.update(), gr.update(), "")
            if not auth.verify(p or "", record["pass_hash"]):
                guard.failed(n, address)
                return (*blank[:-1], "Name or passphrase is wrong.")
            guard.succeeded(n, address)
            if not consent.status(store, n).accepted:
                sess["pending"] = {"name": n, "verified": (record["uid"], record["pass_hash"])}
                return (sess, *show("consent"), gr.update(), gr.update(), "")
            return enter_chat(sess, n, record["uid"])

        def accept(sess: dict):
            pend = sess["pending"]
            if not pend:
                return (sess, *show("signin"), gr.update(), gr.update(), "Sign in first.")
            sess["pending"] = {}
            name = pend["name"]
            try:
                if pend.get("new"):
                    consent.accept(store, name, pass_hash=pend["pass_hash"], new=True)
                else:
                    consent.accept(store, name, verified=tuple(pend["verified"]))
            except StoreError as e:  # the name was taken, or the account changed, since sign-in
                return (sess, *show("signin"), gr.update(), gr.update(), str(e))
            return enter_chat(sess, name, participants.uid(store, name))

        def decline(sess: dict):
            sess["pending"] = {}
            return (sess, *show("signin"), gr.update(), gr.update(),
                    "You declined: nothing about you was stored.")

        outs = [session, signin_box, consent_box, chat_box, who, chatbot, signin_msg]
        # events after which the page shows another participant (or none): the inspector follows
        switched = [signin_btn.click(sign_in, [name, passphrase, session], outs),
                    passphrase.submit(sign_in, [name, passphrase, session], outs),
                    accept_btn.click(accept, [session], outs)]
        decline_btn.click(decline, [session], outs)

        def respond(message, ctx_name, chat, sess: dict):
            participant = require(sess)
            message = message or ""
            if not message.strip():
                yield chat, ""
                return
            bad = unpaired_surrogate(message)
            if bad is not None:
                chat = list(chat or []) + [{"role": "assistant", "content": (
                    f"Your message could not be taken: character {bad + 1} is a broken character (an unpaired "
                    "UTF-16 surrogate) that cannot be stored. Nothing was stored; please send it again.")}]
                yield chat, message.encode("utf-8", "replace").decode("utf-8")
                return
            chat = list(chat or []) + [{"role": "user", "content": as_text(message)},
                                       {"role": "assistant", "content": ""}]
            yield chat, ""
            pieces: queue.Queue = queue.Queue()
            result: dict = {}

            def work():
                try:
                    result["r"] = turn(store, participant, message, context=ctx_name,
                                       settings=settings, on_token=pieces.put)
                except Exception as e:  # shown to the participant, never a crash of the app
                    result["e"] = e
                finally:
                    pieces.put(None)

            threading.Thread(target=work, daemon=True).start()
            streamed = ""
            while (piece := pieces.get()) is not None:
                streamed += piece
                chat[-1] = {"role": "assistant", "content": as_text(streamed)}
                yield chat, ""
            if "e" in result:
                chat[-1] = {"role": "assistant", "content": f"Your message could not be taken: {as_text(result['e'])}"}
                yield chat, ""
                return
            r = result["r"]
            plan_outreach(scheduler, store)  # a reminder the reply scheduled gets its delivery job
            chat[-1] = {"role": "assistant", "content": as_text(r.shown)}
            if r.trace is not None:
                chat.append(_memory_message(r.trace))
            yield chat, ""

        def act_view(sess: dict):
            p = acting(sess)
            if not p:
                return [], []
            return held_rows(store, p), action_history(store, p)

        def act_resolve(action_id, approve: bool, sess: dict):
            participant = require(sess)
            if action_id in (None, ""):
                raise gr.Error("Choose an action.")
            try:
                a = (actions.approve if approve else actions.reject)(store, participant, int(action_id),
                                                                    via="ui")
            except (actions.ActionError, ValueError) as e:
                raise gr.Error(str(e)) from None
            plan_outreach(scheduler, store)
            return (_resolved(a), *act_view(sess))

        act_outs = [act_msg, act_pending, act_hist]
        def act_approve(action_id, sess: dict):
            return act_resolve(action_id, True, sess)

        def act_reject(action_id, sess: dict):
            return act_resolve(action_id, False, sess)

        act_approve_api.click(act_approve, [act_id, session], act_outs, api_name="act_approve")
        act_reject_api.click(act_reject, [act_id, session], act_outs, api_name="act_reject")
        act_refresh.click(act_view, [session], [act_pending, act_hist], api_name="act_view")
        for ev in (send.click(respond, [box, context, chatbot, session], [chatbot, box]),
                   box.submit(respond, [box, context, chatbot, session], [chatbot, box])):
            # a reply may have held an action (or resolved one: "yes" in the chat)
            ev.then(act_view, [session], [act_pending, act_hist], api_visibility="private")

        def sign_out(sess: dict):
            sess.update(new_session(), researcher=sess.get("researcher", False))
            return (sess, *show("signin"), "", [], "Signed out.", "", "")

        # signing out or withdrawing also empties the sign-in form (name and passphrase)
        switched.append(signout.click(sign_out, [session], outs + [name, passphrase]))

        def my_data(sess: dict):
            participant = require(sess)
            token = downloads.stage(store.data_dir, participant, f"{participant}.json",
                                    json.dumps(access.download(store, participant), ensure_ascii=False, indent=1))
            return (f"[Download your data (JSON)](download/{token}): the link works once, for "
                    f"{downloads.TTL_SECONDS / 60:.0f} minutes, and only until you withdraw.")

        def withdraw(confirmed: bool, sess: dict):
            participant = require(sess)
            if not confirmed:
                return (sess, *show("chat"), gr.update(), gr.update(), "",
                        "Tick “Yes, erase everything about me” first.", gr.update(), gr.update())
            erased = consent.withdraw(store, participant)
            sess.update(new_session(), researcher=sess.get("researcher", False))
            return (sess, *show("signin"), "", [], erased.message(), "", "", "")

        download_btn.click(my_data, [session], [download_link])
        switched.append(withdraw_btn.click(withdraw, [withdraw_confirm, session],
                                           outs + [account_msg, name, passphrase]))

        # "What I remember": every handler reads the participant from the server-side session;
        # item keys from the browser are looked up within that participant's rows only.
        def mem_guard(sess: dict) -> str:
            return require(sess)

        def mem_view(sess: dict):
            p = acting(sess)
            if not p:  # signed out: nothing of the last participant stays on the page
                return ([], gr.update(choices=[], value=None), "", "", gr.update(choices=[], value=None), "", "")
            table = inspector.rows(store, p)
            return (table, gr.update(choices=inspector.choices(table), value=None),
                    inspector.persona_markdown(store, p), inspector.file_markdown(store, p),
                    gr.update(choices=inspector.versions(store, p), value=None), "", "")

        def mem_do(action, *args):
            try:
                return action(*args)
            except (inspector.Refused, StoreError, ValueError) as e:
                raise gr.Error(str(e)) from None

        def mem_sources_of(key, sess: dict):
            if not key:
                return ""
            return mem_do(inspector.sources, store, mem_guard(sess), key)

        def mem_select(evt: gr.SelectData, sess: dict):
            # a click on a row of the table picks its item (the key is in the first column)
            row = evt.row_value or []
            return row[0] if row else gr.update()

        def mem_edit(key, new, sess: dict):
            return as_text(mem_do(inspector.edit, store, mem_guard(sess), key, new))

        def mem_delete(key, sess: dict):
            return as_text(mem_do(inspector.delete, store, mem_guard(sess), key))

        def mem_version_of(version, sess: dict):
            if version in (None, ""):
                return ""
            return mem_do(inspector.version_markdown, store, mem_guard(sess), version)

        def mem_restore(version, sess: dict):
            return as_text(mem_do(inspector.restore, store, mem_guard(sess), version))

        mem_outs = [mem_table, mem_item, mem_persona, mem_file, mem_version, mem_sources, mem_version_text]
        mem_refresh.click(mem_view, [session], mem_outs, api_name="mem_view")
        mem_box.expand(mem_view, [session], mem_outs, api_visibility="private")
        mem_table.select(mem_select, [session], [mem_item], api_visibility="private").then(
            mem_sources_of, [mem_item, session], [mem_sources], api_visibility="private")
        mem_item.input(mem_sources_of, [mem_item, session], [mem_sources], api_visibility="private")
        mem_show_btn.click(mem_sources_of, [mem_item, session], [mem_sources], api_name="mem_sources")
        mem_edit_btn.click(mem_edit, [mem_item, mem_text, session], [mem_msg], api_name="mem_edit").success(
            mem_view, [session], mem_outs, api_visibility="private")
        mem_delete_btn.click(mem_delete, [mem_item, session], [mem_msg], api_name="mem_delete").success(
            mem_view, [session], mem_outs, api_visibility="private")
        def panels_for(sess: dict):
            return (*mem_view(sess), "", "", *act_view(sess), "")

        for ev in switched:
            ev.then(panels_for, [session], mem_outs + [mem_msg, mem_text, act_pending, act_hist, act_msg],
                    api_visibility="private")
        mem_show_v.click(mem_version_of, [mem_version, session], [mem_version_text], api_name="mem_version")
        mem_version.input(mem_version_of, [mem_version, session], [mem_version_text], api_visibility="private")
        mem_restore_btn.click(mem_restore, [mem_version, session], [mem_msg], api_name="mem_restore").success(
            mem_view, [session], mem_outs, api_visibility="private")

        def r_guard(sess: dict) -> None:
            if not sess.get("researcher"):
                raise gr.Error("The researcher page needs its password.")

        def r_login(pw, sess: dict, request: gr.Request):
            address = client_address(request)
            wait = guard.blocked_for("researcher", address)
            if wait > 0:
                return sess, gr.update(visible=False), f"Too many failed attempts; try again in {wait:.0f} s.", ""
            try:
                researcher.check_password(pw, settings.researcher_password, auth.researcher_hash(settings.data_dir))
            except researcher.Shut as e:  # no credential exists: nothing to guess
                return sess, gr.update(visible=False), str(e), ""
            except researcher.Refused as e:
                # whichever credential was checked (the app's, or the stored hash), one guard
                guard.failed("researcher", address)
                return sess, gr.update(visible=False), str(e), ""
            guard.succeeded("researcher", address)
            sess["researcher"] = True
            return sess, gr.update(visible=True), "Researcher page open.", ""

        def r_choices(sess: dict):
            if not sess.get("researcher"):  # r_login already said why: no second error, no traceback
                return gr.update(), gr.update(), gr.update(), gr.update()
            names = [""] + participants.names(store)
            return (gr.update(choices=names), gr.update(choices=[""] + researcher.arms(store)),
                    gr.update(choices=names), access.participants_rows(store))

        def r_rows(part, arm, dec, sess: dict):
            r_guard(sess)
            return researcher.rows(store, participant=part, arm=arm, decision=dec)

        def r_one(trace_id, sess: dict):
            r_guard(sess)
            t = researcher.one(store, int(trace_id or 0))
            return researcher.explain(t) if t else f"No trace {trace_id}."

        def r_dump(part, arm, dec, sess: dict):
            r_guard(sess)
            token = downloads.stage(store.data_dir, downloads.RESEARCHER, "traces.jsonl",
                                    researcher.export_jsonl(store, participant=part, arm=arm, decision=dec))
            return (f"[Download the traces (JSONL)](download/{token}): the link works once, for "
                    f"{downloads.TTL_SECONDS / 60:.0f} minutes.")

        def t_set(part, gates, seed, randomized: bool, sess: dict):
            r_guard(sess)
            try:
                if randomized:
                    trials.randomize(store, part, list(gates or []), int(seed or 0), settings.retriever, settings.policy)
                    return f"{as_text(part)}: each turn draws one of {', '.join(gates)} (seed {int(seed or 0)})"
                if not gates:
                    return "Choose a gate."
                trials.set_arm(store, part, gates[0], settings.retriever, settings.policy)
                return f"{as_text(part)}: every turn runs gate {gates[0]}"
            except (StoreError, LookupError) as e:
                return f"Refused: {as_text(e)}"

        r_open.click(r_login, [r_pass, session], [session, r_box, r_msg, r_pass]).then(
            r_choices, [session], [f_part, f_arm, t_part, r_people])
        r_refresh.click(r_rows, [f_part, f_arm, f_dec, session], [r_table])
        r_show.click(r_one, [r_id, session], [r_detail])
        r_export.click(r_dump, [f_part, f_arm, f_dec, session], [r_file])
        t_fix.click(lambda p, g, sd, ss: t_set(p, g, sd, False, ss), [t_part, t_gates, t_seed, session], [t_msg])
        t_rand.click(lambda p, g, sd, ss: t_set(p, g, sd, True, ss), [t_part, t_gates, t_seed, session], [t_msg])
    return demo


class App(gr.Blocks):
    """The app's Blocks, launched with its security settings (by `serve` and by tests alike):
    - uploads refused (max_file_size 0): no component takes a file, and anonymous uploads to
      /gradio_api/upload would otherwise fill the disk;
    - nothing on disk served by path: no allowed paths, the data directory blocked; downloads go
      through /download/<token> (consent.downloads), once, then deleted;
    - X-Forwarded-For believed only from the proxies in settings.trusted_proxies (uvicorn trusts
      127.0.0.1 by default, which let any local client pick its address for the sign-in guard);
    - the CSS that hides the chat's trash icon.
    """

    companion_settings: Settings
    companion_store: Store

    def launch(self, *args, **kwargs):
        data_dir = str(self.companion_store.data_dir.resolve())
        kwargs["max_file_size"] = 0
        if os.environ.pop("GRADIO_ALLOWED_PATHS", None):
            log.warning("GRADIO_ALLOWED_PATHS is ignored: the app serves no files by path")
        kwargs["allowed_paths"] = []
        kwargs["blocked_paths"] = list(kwargs.get("blocked_paths") or []) + [data_dir]
        # uvicorn reads this when the server is configured, inside Blocks.launch
        os.environ["FORWARDED_ALLOW_IPS"] = self.companion_settings.trusted_proxies or "-"
        app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
        app_kwargs["routes"] = list(app_kwargs.get("routes") or []) + [
            Route("/download/{token}", self._download, methods=["GET"])]
        kwargs["app_kwargs"] = app_kwargs
        kwargs["css"] = (kwargs.get("css") or "") + CSS
        return super().launch(*args, **kwargs)

    def _download(self, request) -> Response:
        got = downloads.take(self.companion_store.data_dir, request.path_params.get("token", ""))
        if got is None:
            return PlainTextResponse("This download link was already used, has expired, or its owner withdrew. "
                                     "Ask for the download again in the app.", status_code=404)
        name, data = got
        kind = "application/x-ndjson" if name.endswith(".jsonl") else "application/json"
        return Response(data, media_type=kind, headers={
            "Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})


def schedule_jobs(settings: Settings, store: Store):
    """Background work of the app (companion.scheduler): memory consolidation, the retention
    sweep if configured, and jobs other parts scheduled (reminders, check-ins), all kept in
    the app's database so they survive a restart.

    None runs on the reply's path; consolidation runs one instance at a time.
    """
    from companion import scheduler as jobs

    scheduler = jobs.build(settings, store)
    scheduler.start()
    plan_outreach(scheduler, store)  # reminders scheduled while the app was not running (CLI chats)
    return scheduler


def serve(settings: Settings, block: bool = True):
    store = Store(settings.data_dir)
    # Load the embedding model now, not inside the first participant's turn.
    threading.Thread(target=lambda: store.vectors.embedder.encode(["warm up"]), daemon=True).start()
    scheduler = schedule_jobs(settings, store)
    demo = build(settings, store, scheduler)
    demo.queue(default_concurrency_limit=8)
    return demo.launch(server_name=settings.host, server_port=settings.port, share=False,
                       ssr_mode=False, mcp_server=False, prevent_thread_lock=not block,
                       footer_links=[], quiet=True)
