"""The app's side of live trials: thumbs up/down (with an optional tag) on every companion
message, and the researcher tab's "Trial results" panel. app.py calls `feedback_hook` and
`results_panel` inside its layout and passes `FEEDBACK_OPTIONS` to its Chatbot.

Gradio's Chatbot `like` event names the rated message by its position in the chat and its
text, not by a key of ours. The chat shows a suffix of the participant's log (plus memory
lines, which are thoughts with a title, and fallback texts of failed turns, which were never
stored), so a reply is found by its text among the stored companion messages, the n-th
equal text from the end of the chat being the n-th equal one from the end of the log.

One click, one row: the same rating again stores nothing, and an account may change ratings at
most RATING_LIMITS times (counted in the database, shared by every app process).
"""

from __future__ import annotations

import base64
from pathlib import Path

import gradio as gr

from companion import gate, trialreport
from companion.markup import text as as_text
from consent import downloads
from memory import feedback, limits, messages, participants
from memory.store import Store, StoreError

LIKE, DISLIKE = "Like", "Dislike"  # Gradio draws these two as thumbs; the tags go under its flag icon
FEEDBACK_OPTIONS = (LIKE, DISLIKE, *(t["label"] for t in feedback.tags().values()))


def _is_reply(m: dict) -> bool:
    return m.get("role") == "assistant" and not (m.get("metadata") or {}).get("title")


def _text(m: dict) -> str:
    c = m.get("content")
    if isinstance(c, list):  # Gradio 6 gives content as a list of parts
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in c)
    return c if isinstance(c, str) else str(c or "")


def reply_dayid(store: Store, participant: str, chat: list[dict], index: int) -> str:
    """The dayid of the stored companion reply at `index` of the chat, or a StoreError saying why none."""
    if not 0 <= index < len(chat) or not _is_reply(chat[index]):
        raise StoreError("only the companion's replies can be rated")
    text = _text(chat[index])
    later_equal = sum(1 for m in chat[index + 1:] if _is_reply(m) and _text(m) == text)
    log = messages.read(store, participant, messages.next_ordinal(store, participant))
    equal = [m for m in log if m.sender == "companion" and m.text == text]
    if len(equal) <= later_equal:
        raise StoreError("this reply was not stored (the turn failed), so there is nothing to rate")
    return equal[-1 - later_equal].dayid


def rating_of(liked) -> tuple[str, str | None]:
    """Gradio's `liked` (True, False, None for a removed thumb, or an option's text) -> rating, tag."""
    if liked is True or liked == LIKE:
        return "up", None
    if liked is False or liked == DISLIKE:
        return "down", None
    if liked is None or liked == "":
        return "none", None
    return "down", feedback.tag_for_label(str(liked))  # every tag is a complaint


RATING_LIMITS = [limits.Limit(30, 60.0), limits.Limit(300, 3600.0)]  # changes of ratings per account


def rate(store: Store, participant: str | None, chat: list[dict], index, liked, uid: str | None = None) -> str:
    """Store one rating from the chat if it changes what stands; returns what the participant is told."""
    if not participant:
        raise StoreError("sign in first")
    if isinstance(index, (list, tuple)):
        index = index[0]
    dayid = reply_dayid(store, participant, chat, int(index))
    rating, tag = rating_of(liked)
    standing = feedback.standing(store, participant, dayid)
    value = (feedback.RATINGS[rating], tag)
    if standing is None and rating == "none":
        return f"Reply {dayid} has no rating to remove."
    if standing is not None and (standing.rating, standing.tag) == value:  # a second click (or a repeated event)
        return f"Already noted: {_said(standing)} for reply {dayid}."
    wait = limits.take(store, f"rating:{uid or participant}", RATING_LIMITS, subject=participant)
    if wait > 0:
        raise StoreError(f"too many ratings in a short time; try again in {wait:.0f} s")
    f, _ = feedback.change(store, participant, dayid, rating, tag=tag, via="app")
    if rating == "none":
        return f"Your rating of {dayid} was removed."
    return f"Thank you: {_said(f)} noted for reply {dayid}."


def _said(f: feedback.Feedback) -> str:
    if f.rating == 0:
        return "no rating"
    return {1: "👍", -1: "👎"}[f.rating] + (f" ({f.public()['tag_label']})" if f.tag else "")


def feedback_hook(chatbot: gr.Chatbot, session: gr.State, store: Store) -> gr.Markdown:
    """Under the chat: stores every thumb or tag given on a companion message."""
    note = gr.Markdown(elem_id="feedback-msg")

    @gate.participant
    def on_like(chat, sess: dict, evt: gr.LikeData):
        try:
            return rate(store, sess["participant"], list(chat or []), evt.index, evt.liked, uid=sess["uid"])
        except StoreError as e:
            return f"Not rated: {as_text(e)}."

    chatbot.like(on_like, [chatbot, session], [note], api_visibility="private")
    return note


def _allowed(sess: dict) -> None:
    if not sess.get("researcher"):
        raise gr.Error(gate.RESEARCHER_REFUSAL)


def results(store: Store, who: list[str] | None, since: str | None, bootstrap: int = trialreport.BOOTSTRAP,
            out: Path | None = None) -> tuple[str, list[str], str]:
    """report.md's text, the plot paths and report.json's path, written to `out` (a folder the
    caller chose; the panel uses `shown`, which keeps nothing outside the data directory)."""
    doc = trialreport.report(store, who or None, since or None, bootstrap=bootstrap)
    doc = trialreport.write(doc, Path(out))
    return trialreport.markdown(doc), [str(Path(out) / p) for p in doc["plots"]], str(Path(out) / "report.json")


def shown(store: Store, who: list[str] | None, since: str | None,
          bootstrap: int = trialreport.BOOTSTRAP) -> tuple[str, str, str]:
    """What the panel shows: (report as Markdown, the plots as inline images, the one-time link to
    report.json). Written in a private folder under the data directory and removed before this
    returns: nothing goes to /tmp or Gradio's cache, and the link (consent.downloads) works once
    and dies with any participant's withdrawal."""
    with downloads.scratch(store.data_dir) as work:
        md, pngs, js = results(store, who, since, bootstrap, out=work)
        imgs = "".join(f'<img alt="{Path(p).name}" style="max-width:48%;margin:4px" '
                       f'src="data:image/png;base64,{base64.b64encode(Path(p).read_bytes()).decode()}">'
                       for p in pngs)
        token = downloads.stage(store.data_dir, downloads.RESEARCHER, "report.json",
                                Path(js).read_text(encoding="utf-8"))
    link = (f"[Download report.json](download/{token}): the link works once, for "
            f"{downloads.TTL_SECONDS / 60:.0f} minutes.")
    return md, imgs, link


def results_panel(session: gr.State, store: Store) -> None:
    """The researcher tab's "Trial results": the trial report for chosen participants."""
    with gr.Accordion("Trial results", open=False, elem_id="trial-results"):
        gr.Markdown("Per arm: turns, retrieval, feedback and implicit signals with rates; differences "
                    "between arms with participant-cluster bootstrap intervals (docs/METRICS.md).")
        with gr.Row():
            who = gr.Dropdown(label="Participants (none: all)", multiselect=True, choices=[], elem_id="tr-who")
            since = gr.Textbox(label="Since (ISO date, optional)", elem_id="tr-since")
            go = gr.Button("Compute", elem_id="tr-go")
        body = gr.Markdown(elem_id="tr-report")
        plots = gr.HTML(elem_id="tr-plots", js_on_load=None)
        file = gr.Markdown(elem_id="tr-json")

    @gate.researcher
    def compute(people, since_text, sess: dict):
        _allowed(sess)
        try:
            return shown(store, list(people or []), since_text)
        except ValueError as e:
            return f"Refused: {as_text(e)}", "", ""

    @gate.researcher
    def choices(sess: dict):
        return gr.update(choices=participants.names(store))

    go.click(compute, [who, since, session], [body, plots, file], api_name="trial_results")
    who.focus(choices, [session], [who], api_visibility="private")
