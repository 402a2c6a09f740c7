"""What the action tests share: the plain settings they turn with, the participant's clock, their
own autonomy as the settings panel stores it, and the actions stored for them."""

from __future__ import annotations

from datetime import datetime, timedelta

from companion import actions
from companion.settings import Settings
from eval import everyday
from memory import cells, messages

NOW = everyday.NOW  # Monday 2026-11-30 10:00 UTC


def plain(home) -> Settings:
    return Settings(home=home, model="echo", gate="never", file_memory=False)


def wall(iso: str) -> str:
    """A stored time as the participant's clock reads it (their own time zone)."""
    return datetime.fromisoformat(iso).strftime("%a %d %b %H:%M")


def own_autonomy(store, who: str, setting: str = "autonomous", *, days_before: int = 3) -> None:
    """The participant's own setting, as the settings panel stores it (both contexts)."""
    note = messages.append(store, who, "user", "(settings changed in the panel)", "personal",
                           ts=NOW - timedelta(days=days_before))
    for context in ("personal", "work"):
        cells.set_(store, who, context=context, attribute="autonomy", setting=setting,
                   sources=[(note.dayid, note.ordinal)], evidence="set in the panel", origin="manual")


def made(store, who):
    """The actions stored for the participant (an offer the settings dropped is not one)."""
    return [a for a in actions.history(store, who) if a.status != "dropped"]
