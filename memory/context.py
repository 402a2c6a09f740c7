"""What a gate, a retriever and a policy see of a turn, and the turn's one time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from memory.messages import Message
from memory.store import Store


@dataclass(frozen=True)
class TurnTime:
    """When a turn happens, computed once after its message is stored and carried in the context:
    the instant (UTC), the same instant on the participant's own clock (so "tomorrow at 8am"
    means their 8am), and the ordinal bound the turn sees (`as_of`)."""

    instant: datetime
    local: datetime
    as_of: int

    @classmethod
    def of(cls, store: Store, participant: str, ts: str | datetime, as_of: int) -> "TurnTime":
        from memory import keys, participants

        instant = (datetime.fromisoformat(ts) if isinstance(ts, str) else ts).astimezone(timezone.utc)
        p = participants.get(store, participant)
        local = instant.astimezone(keys.zone(p["tz"])) if p and p.get("tz") else instant.astimezone()
        return cls(instant, local, as_of)

    @classmethod
    def at(cls, store: Store, participant: str, as_of: int) -> "TurnTime":
        """The time of a replayed position: that of the message at `as_of` (the probe), else of the
        last one before it, else now."""
        r = store.conn.execute("SELECT ts FROM messages WHERE participant = ? AND ordinal <= ? "
                               "ORDER BY ordinal DESC LIMIT 1", (participant, as_of)).fetchone()
        return cls.of(store, participant, r["ts"] if r else datetime.now(timezone.utc), as_of)


@dataclass
class TurnContext:
    store: Store
    participant: str
    text: str
    context: str
    as_of: int  # sees ordinals < as_of: the turn's own message and everything later are hidden
    recent: list[Message] = field(default_factory=list)  # the recent window, oldest first
    ask_model: Callable[[list[dict]], str] | None = None  # for model-judged gates
    extra: dict = field(default_factory=dict)  # eval-only facts (gold for oracle gates)
    cache: dict = field(default_factory=dict)  # per-turn memo: a gate and a retriever share scores
    time: TurnTime | None = None  # the turn's time (None only for contexts built outside a turn)

    @property
    def recent_ordinals(self) -> set[int]:
        return {m.ordinal for m in self.recent}

    def bm25(self, query: str):
        """BM25 scores of every message before as_of (computed once per turn and query)."""
        key = ("bm25", query, self.as_of)
        if key not in self.cache:
            self.cache[key] = self.store.bm25.scores(self.participant, query, self.as_of)
        return self.cache[key]

    def dense(self, query: str):
        """Cosine similarities of every message before as_of to the query."""
        key = ("dense", query, self.as_of)
        if key not in self.cache:
            vec = self.store.vectors.embedder.encode_one(query)
            self.cache[key] = self.store.vectors.similarities(self.participant, vec, self.as_of)
        return self.cache[key]
