"""The Gradio app: sign-in, consent, chat with streamed replies and a memory line per reply.

Each browser session holds its participant in server-side state; every handler reads and
writes that participant only, so a participant sees only their own conversation.
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import tempfile
import threading
from pathlib import Path

import companion  # noqa: F401  (no-telemetry environment first)
import gradio as gr

from companion import annotatepanel, auth, inspector, researcher, trials
from consent import access
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


def new_session() -> dict:
    # participant: signed in and consented; pending: a new name waiting for consent;
    # researcher: the researcher password was given in this session.
    return {"participant": None, "pending": {}, "researcher": False}


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
        details = f"Gate `{gate}`: {d['reason']}"
    else:
        used = trace.applied.get("items", [])
        head = f"score {d['score']:.2f} ≥ threshold {d['threshold']:.2f}"
        if used:
            title = f"Memory: used {', '.join(used)} ({head})"
        else:
            title = f"Memory: looked back, nothing applied ({head})"
        snippets = {h["dayid"]: h for h in trace.hits}
        lines = [f"Gate `{gate}`: {d['reason']}",
                 f"Retriever `{trace.retriever.get('name')}`; placed under “{trace.applied.get('heading')}”"]
        for dayid in used:
            h = snippets.get(dayid, {})
            lines.append(f"- **{dayid}** ({h.get('score', 0):.3f}): {h.get('text', '')}")
        details = "\n".join(lines)
    if trace.errors:
        title += " · error"
        details += "\n" + "\n".join(f"- {e.step}: {e.type}: {e.message}" for e in trace.errors)
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
            out.append({"role": "user", "content": m.text})
        else:
            out.append({"role": "assistant", "content": m.text})
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
        return f"Rejected #{a.id}: {a.summary}. It will not run."
    done = {"scheduled": "scheduled", "done": "done"}.get(a.status, a.status)
    if a.kind in ("draft_message", "send_message"):
        done = "written to your outbox, not sent"
    return f"Approved #{a.id}: {a.summary} ({done})."


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

    with gr.Blocks(title="Companion", analytics_enabled=False) as demo:
        session = gr.State(new_session())
        gr.Markdown("## Companion")
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
                chatbot = gr.Chatbot(label="Conversation", height=480, elem_id="chat")
                with gr.Row():
                    box = gr.Textbox(label="Message", placeholder="Write a message…", scale=5, elem_id="msg")
                    send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
                with gr.Row():
                    signout = gr.Button("Sign out", size="sm")
                    download_btn = gr.Button("Download my data", size="sm", elem_id="download")
                    withdraw_btn = gr.Button("Withdraw from the study", size="sm", variant="stop", elem_id="withdraw")
                download_file = gr.File(label="Your data (JSON)", visible=False, interactive=False)
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
                                gr.Markdown(f"**#{r['id']} {r['title']}**: {r['summary']}  \n_{r['reason']}._{needs}",
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
                r_file = gr.File(label="Exported traces", interactive=False)
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
                gr.Markdown("#### Annotate a release")
                annotatepanel.build(session, settings)  # companion/annotatepanel.py

        def show(stage: str):
            return (gr.update(visible=stage == "signin"), gr.update(visible=stage == "consent"),
                    gr.update(visible=stage == "chat"))

        def enter_chat(sess: dict, participant: str):
            sess["participant"], sess["pending"] = participant, {}
            return (sess, *show("chat"), f"Signed in as **{participant}**", history(store, participant), "")

        def sign_in(n, p, sess: dict, request: gr.Request):
            n = (n or "").strip()
            address = getattr(getattr(request, "client", None), "host", None) or "unknown"
            blank = (sess, *show("signin"), gr.update(), gr.update(), "")
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
                    sess["pending"] = {"name": n, "pass_hash": auth.hash_passphrase(p or "")}
                except ValueError as e:
                    return (*blank[:-1], str(e))
                return (sess, *show("consent"), gr.update(), gr.update(), "")
            if not auth.verify(p or "", record["pass_hash"]):
                guard.failed(n, address)
                return (*blank[:-1], "Name or passphrase is wrong.")
            guard.succeeded(n, address)
            if not consent.status(store, n).accepted:
                sess["pending"] = {"name": n, "pass_hash": None}
                return (sess, *show("consent"), gr.update(), gr.update(), "")
            return enter_chat(sess, n)

        def accept(sess: dict):
            if not sess["pending"]:
                return (sess, *show("signin"), gr.update(), gr.update(), "Sign in first.")
            consent.accept(store, sess["pending"]["name"], pass_hash=sess["pending"].get("pass_hash"))
            return enter_chat(sess, sess["pending"]["name"])

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
            if not sess["participant"]:
                raise gr.Error("Sign in first.")
            message = message or ""
            if not message.strip():
                yield chat, ""
                return
            chat = list(chat or []) + [{"role": "user", "content": message},
                                       {"role": "assistant", "content": ""}]
            yield chat, ""
            pieces: queue.Queue = queue.Queue()
            result: dict = {}

            def work():
                try:
                    result["r"] = turn(store, sess["participant"], message, context=ctx_name,
                                       settings=settings, on_token=pieces.put)
                except Exception as e:  # shown to the participant, never a crash of the app
                    result["e"] = e
                finally:
                    pieces.put(None)

            threading.Thread(target=work, daemon=True).start()
            streamed = ""
            while (piece := pieces.get()) is not None:
                streamed += piece
                chat[-1] = {"role": "assistant", "content": streamed}
                yield chat, ""
            if "e" in result:
                chat[-1] = {"role": "assistant", "content": f"Your message could not be taken: {result['e']}"}
                yield chat, ""
                return
            r = result["r"]
            plan_outreach(scheduler, store)  # a reminder the reply scheduled gets its delivery job
            chat[-1] = {"role": "assistant", "content": r.shown}
            if r.trace is not None:
                chat.append(_memory_message(r.trace))
            yield chat, ""

        def act_view(sess: dict):
            p = sess.get("participant")
            if not p:
                return [], []
            return held_rows(store, p), action_history(store, p)

        def act_resolve(action_id, approve: bool, sess: dict):
            if not sess.get("participant"):
                raise gr.Error("Sign in first.")
            if action_id in (None, ""):
                raise gr.Error("Choose an action.")
            try:
                a = (actions.approve if approve else actions.reject)(store, sess["participant"], int(action_id),
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
            sess["participant"], sess["pending"] = None, {}
            return (sess, *show("signin"), "", [], "Signed out.")

        switched.append(signout.click(sign_out, [session], outs))

        def my_data(sess: dict):
            if not sess["participant"]:
                raise gr.Error("Sign in first.")
            path = Path(tempfile.mkdtemp(prefix="my-data-")) / f"{sess['participant']}.json"
            path.write_text(json.dumps(access.download(store, sess["participant"]), ensure_ascii=False, indent=1),
                            encoding="utf-8")
            return gr.update(value=str(path), visible=True)

        def withdraw(confirmed: bool, sess: dict):
            if not sess["participant"]:
                raise gr.Error("Sign in first.")
            if not confirmed:
                return (sess, *show("chat"), gr.update(), gr.update(), "",
                        "Tick “Yes, erase everything about me” first.")
            erased = consent.withdraw(store, sess["participant"])
            sess["participant"], sess["pending"] = None, {}
            return (sess, *show("signin"), "", [], erased.message(), "")

        download_btn.click(my_data, [session], [download_file])
        switched.append(withdraw_btn.click(withdraw, [withdraw_confirm, session], outs + [account_msg]))

        # "What I remember": every handler reads the participant from the server-side session;
        # item keys from the browser are looked up within that participant's rows only.
        def mem_guard(sess: dict) -> str:
            if not sess.get("participant"):
                raise gr.Error("Sign in first.")
            return sess["participant"]

        def mem_view(sess: dict):
            p = sess.get("participant")
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
            return mem_do(inspector.edit, store, mem_guard(sess), key, new)

        def mem_delete(key, sess: dict):
            return mem_do(inspector.delete, store, mem_guard(sess), key)

        def mem_version_of(version, sess: dict):
            if version in (None, ""):
                return ""
            return mem_do(inspector.version_markdown, store, mem_guard(sess), version)

        def mem_restore(version, sess: dict):
            return mem_do(inspector.restore, store, mem_guard(sess), version)

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
            address = getattr(getattr(request, "client", None), "host", None) or "unknown"
            wait = guard.blocked_for("researcher", address)
            if wait > 0:
                return sess, gr.update(visible=False), f"Too many failed attempts; try again in {wait:.0f} s.", ""
            try:
                researcher.check_password(pw, settings.researcher_password, auth.researcher_hash(settings.data_dir))
            except researcher.Refused as e:
                if settings.researcher_password:
                    guard.failed("researcher", address)
                return sess, gr.update(visible=False), str(e), ""
            guard.succeeded("researcher", address)
            sess["researcher"] = True
            return sess, gr.update(visible=True), "Researcher page open.", ""

        def r_choices(sess: dict):
            r_guard(sess)
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
            path = Path(tempfile.mkdtemp(prefix="traces-")) / "traces.jsonl"
            path.write_text(researcher.export_jsonl(store, participant=part, arm=arm, decision=dec), encoding="utf-8")
            return str(path)

        def t_set(part, gates, seed, randomized: bool, sess: dict):
            r_guard(sess)
            try:
                if randomized:
                    trials.randomize(store, part, list(gates or []), int(seed or 0), settings.retriever, settings.policy)
                    return f"{part}: each turn draws one of {', '.join(gates)} (seed {int(seed or 0)})"
                if not gates:
                    return "Choose a gate."
                trials.set_arm(store, part, gates[0], settings.retriever, settings.policy)
                return f"{part}: every turn runs gate {gates[0]}"
            except (StoreError, LookupError) as e:
                return f"Refused: {e}"

        r_open.click(r_login, [r_pass, session], [session, r_box, r_msg, r_pass]).then(
            r_choices, [session], [f_part, f_arm, t_part, r_people])
        r_refresh.click(r_rows, [f_part, f_arm, f_dec, session], [r_table])
        r_show.click(r_one, [r_id, session], [r_detail])
        r_export.click(r_dump, [f_part, f_arm, f_dec, session], [r_file])
        t_fix.click(lambda p, g, sd, ss: t_set(p, g, sd, False, ss), [t_part, t_gates, t_seed, session], [t_msg])
        t_rand.click(lambda p, g, sd, ss: t_set(p, g, sd, True, ss), [t_part, t_gates, t_seed, session], [t_msg])
    return demo


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
