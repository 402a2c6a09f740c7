"""The conversation: who is signed in, the context, the chat with streamed replies and a
memory line under each reply, and the message box."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import gradio as gr

from companion import gate, trialpanel
from companion.markup import text as as_text
from companion.panels.common import Shared
from companion.turn import turn
from memory import messages, traces
from memory.store import Store
from memory.traces import Trace

HISTORY_SHOWN = 200  # messages loaded into the chat on sign-in


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


@dataclass
class Chat:
    who: gr.Markdown
    context: gr.Radio
    chatbot: gr.Chatbot
    box: gr.Textbox
    send: gr.Button
    sent: list  # the events of a sent message: other panels follow them (a reply may hold an action)


def build(sh: Shared) -> Chat:
    """The conversation's components, inside the chat column; wires sending a message."""
    who = gr.Markdown(elem_id="who")
    context = gr.Radio(["personal", "work"], value="personal", label="Context", elem_id="context")
    # The label sits above the box, not floating over its first line as the chat scrolls.
    gr.Markdown("**Conversation**", elem_id="chat-label")
    chatbot = gr.Chatbot(label="Conversation", show_label=False, height=480, elem_id="chat",
                         buttons=["copy"], feedback_options=trialpanel.FEEDBACK_OPTIONS)
    with gr.Row():
        box = gr.Textbox(label="Message", placeholder="Write a message…", scale=5, elem_id="msg")
        send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
    return Chat(who, context, chatbot, box, send, sent=[])


def wire(sh: Shared, c: Chat) -> None:
    store, settings = sh.store, sh.settings

    @gate.participant
    def respond(message, ctx_name, chat, sess: dict):
        participant = sh.require(sess)
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
        sh.plan_outreach()  # a reminder the reply scheduled gets its delivery job
        chat[-1] = {"role": "assistant", "content": as_text(r.shown)}
        if r.trace is not None:
            chat.append(_memory_message(r.trace))
        yield chat, ""

    c.sent += [c.send.click(respond, [c.box, c.context, c.chatbot, sh.session], [c.chatbot, c.box]),
               c.box.submit(respond, [c.box, c.context, c.chatbot, sh.session], [c.chatbot, c.box])]
