"""The one session gate: every event the app serves passes here before its handler runs.

`App.call_function` (companion/app.py), the method Gradio calls for every event, whether the
page shows it, the queue accepts it by `fn_index`, or `gr.render` created it at run time, calls
`check` first. `check` resolves the tab's session from the database (memory.sessions: the tab
holds only a token; the database says which live account or researcher page it stands for),
writes the answer into the session dict the handler receives (`participant`, `uid`,
`researcher`), and refuses the event unless its handler's declared policy is met:

- `door`: sign-in, consent, sign-out, the researcher password: needs no account;
- `view`: fills panels for whoever the session stands for now, possibly no one (empty panels);
- `participant`: needs a live participant account (a withdrawn one, or a name re-registered
  by a newcomer, is refused: "your session has ended");
- `researcher`: needs the researcher page opened in this session.

A handler without a declared policy is refused (and `App.build` refuses to start with one), so a
new handler cannot skip the gate. Nothing a handler reads of the session comes from process
memory alone: a session ended by another process (a withdrawal there) is refused here.
"""

from __future__ import annotations

import functools

import gradio as gr

from memory import sessions
from memory.store import Store

DOOR, VIEW, PARTICIPANT, RESEARCHER = "door", "view", "participant", "researcher"
POLICIES = (DOOR, VIEW, PARTICIPANT, RESEARCHER)
_ATTR = "__companion_gate__"


def _mark(fn, policy: str):
    setattr(fn, _ATTR, policy)
    return fn


def door(fn):
    return _mark(fn, DOOR)


def view(fn):
    return _mark(fn, VIEW)


def participant(fn):
    return _mark(fn, PARTICIPANT)


def researcher(fn):
    return _mark(fn, RESEARCHER)


def policy_of(fn) -> str | None:
    """The policy declared on `fn` (through partials, bound methods and wrappers), or None."""
    seen = 0
    while fn is not None and seen < 10:
        seen += 1
        p = getattr(fn, _ATTR, None)
        if p in POLICIES:
            return p
        if isinstance(fn, functools.partial):
            fn = fn.func
        else:
            fn = getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
    return None


def handler_of(block_fn):
    """The function whose policy counts for a Gradio BlockFunction (a render's own function)."""
    renderable = getattr(block_fn, "renderable", None)
    return renderable.fn if renderable is not None else block_fn.fn


def new_session() -> dict:
    # token: what the database knows this tab by (memory.sessions); bound: the participant a
    # sign-in in this tab bound it to (so an end is told as such); participant, uid, researcher:
    # written by `resolve` before every handler, from the database; pending: waiting for consent,
    # either a sign-up ({"name", "pass_hash", "new", "tz"}) or an existing account whose
    # passphrase was checked ({"name", "verified": (uid, pass_hash)}).
    return {"token": None, "bound": None, "participant": None, "uid": None, "researcher": False, "pending": {}}


def resolve(store: Store, sess: dict) -> dict:
    """Write into `sess` whom it stands for now, as the database says."""
    now = sessions.resolve(store, sess.get("token"))
    sess["participant"], sess["uid"], sess["researcher"] = now["participant"], now["uid"], now["researcher"]
    if sess.get("bound") and not now["participant"]:
        sess["ended"], sess["bound"] = sess["bound"], None
    return sess


def refusal(sess: dict) -> gr.Error:
    if sess.pop("ended", None):
        return gr.Error("Your session has ended: this account was withdrawn. Sign in again.")
    return gr.Error("Sign in first.")


RESEARCHER_REFUSAL = "The researcher page needs its password."


def check(store: Store, fn, sess: dict | None) -> None:
    """Refuse the event (gr.Error) unless `fn`'s policy is met by the session as it is now."""
    policy = policy_of(fn)
    if policy is None:
        raise gr.Error("This action is not available.")
    if not isinstance(sess, dict):
        raise gr.Error("This action is not available.")
    resolve(store, sess)
    if policy == PARTICIPANT and not sess["participant"]:
        raise refusal(sess)
    if policy == RESEARCHER and not sess["researcher"]:
        raise gr.Error(RESEARCHER_REFUSAL)


def sign_in(store: Store, sess: dict, participant: str, uid: str) -> None:
    """Bind the tab to the account (`uid` as checked at sign-in)."""
    sess["token"] = sess.get("token") or sessions.new_token()
    sessions.open_(store, sess["token"], sessions.PARTICIPANT, participant, uid)
    sess["bound"], sess["participant"], sess["uid"] = participant, participant, uid
    sess.pop("ended", None)


def sign_out(store: Store, sess: dict) -> None:
    """End the tab's participant session (its researcher page stays open)."""
    sessions.close(store, sess.get("token"), sessions.PARTICIPANT)
    sess.update(bound=None, participant=None, uid=None, pending={})
    sess.pop("ended", None)


def open_researcher(store: Store, sess: dict) -> None:
    sess["token"] = sess.get("token") or sessions.new_token()
    sessions.open_(store, sess["token"], sessions.RESEARCHER)
    sess["researcher"] = True
