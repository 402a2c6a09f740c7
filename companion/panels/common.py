"""What every panel shares: the settings, the store, the scheduler, the browser session's
server-side state (resolved from the database by the one session gate, companion/gate.py, before
every handler), and the sign-in guards."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from companion import auth, gate
from companion.gate import new_session
from companion.settings import Settings
from memory.store import Store

log = logging.getLogger("companion.app")
__all__ = ["Shared", "client_address", "new_session", "plan_outreach", "r_guard"]


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
    """Researcher handlers check the session (as the gate resolved it), not only the page's visibility."""
    if not sess.get("researcher"):
        raise gr.Error(gate.RESEARCHER_REFUSAL)


@dataclass
class Shared:
    settings: Settings
    store: Store
    scheduler: object | None  # companion.scheduler, running; None: reminders wait for the next start
    session: gr.State
    guard: auth.SignInGuard  # participant sign-ins: per name and address (in the database)
    researcher_guard: auth.SignInGuard  # the researcher page's password: its own keys, never a participant's

    def acting(self, sess: dict) -> str | None:
        """The participant this session acts for, or None, as the gate resolved it from the
        database for this event (an account withdrawn, and perhaps registered again by someone
        else, since sign-in resolves to no one)."""
        return sess.get("participant")

    def require(self, sess: dict) -> str:
        p = self.acting(sess)
        if p:
            return p
        raise gate.refusal(sess)

    def plan_outreach(self) -> None:
        plan_outreach(self.scheduler, self.store)
