"""What every panel shares: the settings, the store, the scheduler, the browser session's
server-side state, and the checks that say whom a session acts for."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from companion import auth
from companion.settings import Settings
from memory import participants
from memory.store import Store

log = logging.getLogger("companion.app")


def new_session() -> dict:
    # participant + uid: signed in and consented, as the account with that identity (a
    # withdrawal retires the uid, so the session cannot act for a newcomer with the same name);
    # pending: waiting for consent, either a sign-up ({"name", "pass_hash", "new"}) or an
    # existing account whose passphrase was checked ({"name", "verified": (uid, pass_hash)});
    # researcher: the researcher password was given in this session.
    return {"participant": None, "uid": None, "pending": {}, "researcher": False}


def plan_outreach(scheduler, store: Store) -> None:
    """Give reminders and check-ins that now run their delivery job (idempotent)."""
    if scheduler is None:
        return
    try:
        from companion.scheduler import plan

        plan(scheduler, store)
    except Exception:  # a reply or an approval never fails for it; the next call tries again
        log.exception("could not schedule reminder delivery")


def client_address(request: gr.Request | None) -> str:
    # The socket's peer: uvicorn replaces it from X-Forwarded-For only for the proxies
    # named in settings.trusted_proxies (App.launch), so a client cannot pick it.
    return getattr(getattr(request, "client", None), "host", None) or "unknown"


def r_guard(sess: dict) -> None:
    """Researcher handlers check the session, not only the page's visibility."""
    if not sess.get("researcher"):
        raise gr.Error("The researcher page needs its password.")


@dataclass
class Shared:
    settings: Settings
    store: Store
    scheduler: object | None  # companion.scheduler, running; None: reminders wait for the next start
    session: gr.State
    guard: auth.SignInGuard  # sign-ins (participants' names, and "researcher"): per name and address

    def acting(self, sess: dict) -> str | None:
        """The participant this session acts for, or None. Checked on every action: an
        account withdrawn (and perhaps registered again by someone else) since sign-in ends
        the session instead of handing it the new account."""
        p = sess.get("participant")
        if p and participants.uid(self.store, p) != sess.get("uid"):
            sess.update(new_session(), researcher=sess.get("researcher", False), ended=p)
            return None
        return p

    def require(self, sess: dict) -> str:
        p = self.acting(sess)
        if p:
            return p
        if sess.pop("ended", None):
            raise gr.Error("Your session has ended: this account was withdrawn. Sign in again.")
        raise gr.Error("Sign in first.")

    def plan_outreach(self) -> None:
        plan_outreach(self.scheduler, self.store)
