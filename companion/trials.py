"""Live gate trials: which gate, retriever and policy a turn runs (its arm).

A researcher either fixes an arm per participant or randomizes per turn among arms with a
seed. Randomization is blocked: turns are taken in blocks of len(arms), each block a seeded
shuffle of the arms, so arms stay balanced at every point and the sequence is reproducible
from (seed, participant) alone. Without a trial, a turn runs the arm in the settings.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from companion.settings import Settings
from memory import participants, registry
from memory.store import Store, StoreError


@dataclass(frozen=True)
class Arm:
    gate: str
    retriever: str
    policy: str
    assignment: str = "settings"  # settings | fixed | randomized
    seed: int | None = None
    index: int | None = None  # the turn's position in the randomization sequence
    control: str | None = None  # a randomized trial's reference arm: the first arm given to `randomize`

    @property
    def name(self) -> str:
        return f"{self.gate}/{self.retriever}/{self.policy}"

    def describe(self) -> dict:
        return {"name": self.name, "gate": self.gate, "retriever": self.retriever, "policy": self.policy,
                "assignment": self.assignment, "seed": self.seed, "index": self.index, "control": self.control}


def _check(kind: str, name: str) -> str:
    registry.get(kind, name)  # raises with the list of available names
    return name


def _check_live(kind: str, name: str) -> str:
    if getattr(registry.get(kind, name), "eval_only", False):
        raise StoreError(f"the {kind} {name!r} is eval-only and cannot run in a live trial")
    return name


def _save(store: Store, participant: str, mode: str, arms: list[dict], seed: int | None) -> None:
    if not participants.exists(store, participant):
        raise StoreError(f"unknown participant {participant!r}")
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO trials (participant, mode, arms, seed, turns, created_at) VALUES (?,?,?,?,0,?) "
            "ON CONFLICT(participant) DO UPDATE SET mode=excluded.mode, arms=excluded.arms, "
            "seed=excluded.seed, turns=0, created_at=excluded.created_at",
            (participant, mode, json.dumps(arms), seed, datetime.now(timezone.utc).isoformat()),
        )


def set_arm(store: Store, participant: str, gate: str, retriever: str, policy: str) -> None:
    arm = {"gate": _check_live("gate", gate), "retriever": _check_live("retriever", retriever),
           "policy": _check("policy", policy)}
    _save(store, participant, "fixed", [arm], None)


def randomize(store: Store, participant: str, gates: list[str], seed: int, retriever: str, policy: str) -> None:
    if len(gates) < 2:
        raise StoreError("randomize needs at least two gates")
    arms = [{"gate": _check_live("gate", g), "retriever": _check_live("retriever", retriever),
             "policy": _check("policy", policy)} for g in gates]
    _save(store, participant, "randomized", arms, int(seed))


def clear(store: Store, participant: str) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM trials WHERE participant=?", (participant,))


def sequence(arms: list[dict], seed: int, participant: str, index: int) -> dict:
    """The arm of the index-th randomized turn: a seeded shuffle per block of len(arms) turns."""
    block, pos = divmod(index, len(arms))
    order = list(range(len(arms)))
    random.Random(f"{seed}:{participant}:{block}").shuffle(order)
    return arms[order[pos]]


def current(store: Store, participant: str) -> dict | None:
    r = store.conn.execute("SELECT * FROM trials WHERE participant=?", (participant,)).fetchone()
    if r is None:
        return None
    return {"mode": r["mode"], "arms": json.loads(r["arms"]), "seed": r["seed"], "turns": r["turns"]}


def arm_for(store: Store, participant: str, settings: Settings) -> Arm:
    """The arm of this turn; only a randomized trial writes (it advances its counter), so the
    usual turn takes no write lock here."""
    r = store.conn.execute("SELECT mode, arms FROM trials WHERE participant=?", (participant,)).fetchone()
    if r is None:
        return Arm(settings.gate, settings.retriever, settings.policy)
    if r["mode"] == "fixed":
        return Arm(**json.loads(r["arms"])[0], assignment="fixed")
    with store.transaction(participant=participant) as conn:  # re-read under the lock: two turns never share an index
        r = conn.execute("SELECT * FROM trials WHERE participant=?", (participant,)).fetchone()
        if r is None or r["mode"] != "randomized":  # changed by a researcher meanwhile
            return arm_for(store, participant, settings)
        arms = json.loads(r["arms"])
        index = r["turns"]
        conn.execute("UPDATE trials SET turns=turns+1 WHERE participant=?", (participant,))
    return Arm(**sequence(arms, r["seed"], participant, index), assignment="randomized",
               seed=r["seed"], index=index, control=arm_name(arms[0]))


def arm_name(arm: dict) -> str:
    return f"{arm['gate']}/{arm['retriever']}/{arm['policy']}"


def control(store: Store, participant: str) -> str | None:
    """The reference arm of the participant's current randomized trial (the first arm given)."""
    t = current(store, participant)
    return arm_name(t["arms"][0]) if t and t["mode"] == "randomized" else None
