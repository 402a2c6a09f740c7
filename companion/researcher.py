"""The researcher's view of traces: filter, inspect one turn, export JSONL.

Plain functions; the Gradio researcher page calls them only after its password check.
"""

from __future__ import annotations

import hmac

from companion import auth
from memory import traces
from memory.store import Store
from memory.traces import Trace

COLUMNS = ["id", "participant", "dayid", "arm", "gate", "score", "threshold", "decision", "hits", "applied", "errors"]


class Refused(PermissionError):
    pass


def check_password(given: str | None, configured: str | None, stored_hash: str | None = None) -> None:
    """The data directory's researcher credential (scrypt hash, `companion researcher
    set-password`) when one is set, else the password the app was started with."""
    if stored_hash:
        if not given or not auth.verify(given, stored_hash):
            raise Refused("wrong researcher password")
        return
    if not configured:
        raise Refused("the researcher page is shut: start the app with --researcher-password "
                      "(or COMPANION_RESEARCHER_PASSWORD), or set one with `companion researcher set-password`")
    if not given or not hmac.compare_digest(given.encode(), configured.encode()):
        raise Refused("wrong researcher password")


def _decision(value: str | None) -> bool | None:
    return {"retrieved": True, "abstained": False}.get(value or "")


def rows(store: Store, participant: str | None = None, arm: str | None = None, decision: str | None = None,
         limit: int = 500) -> list[list]:
    out = []
    for t in traces.list_(store, participant=participant or None, arm=arm or None,
                          decision=_decision(decision), limit=limit):
        d = t.decision or {}
        out.append([t.id, t.participant, t.dayid, t.arm.get("name"), t.gate.get("name"), d.get("score"),
                    d.get("threshold"),
                    "retrieved" if d.get("retrieve") else ("abstained" if d else "none"),
                    " ".join(h["dayid"] for h in t.hits), " ".join(t.applied.get("items", [])), len(t.errors)])
    return out


def arms(store: Store) -> list[str]:
    return [r[0] for r in store.conn.execute("SELECT DISTINCT arm FROM traces WHERE arm IS NOT NULL ORDER BY arm")]


def one(store: Store, trace_id: int) -> Trace | None:
    r = store.conn.execute("SELECT id, data FROM traces WHERE id=?", (int(trace_id),)).fetchone()
    if r is None:
        return None
    t = Trace.model_validate_json(r["data"])
    t.id = r["id"]
    return t


def explain(t: Trace) -> str:
    """One turn as Markdown: gate score and threshold, retrieved text, what was applied."""
    d = t.decision
    lines = [f"### Turn {t.id}: {t.participant} {t.dayid} ({t.context})",
             f"- arm: `{t.arm.get('name')}` ({t.arm.get('assignment')}"
             + (f", seed {t.arm.get('seed')}, turn {t.arm.get('index')}" if t.arm.get("seed") is not None else "") + ")",
             f"- gate: `{t.gate.get('name')}` v{t.gate.get('version')} params {t.gate.get('params')}"]
    if d:
        lines.append(f"- decision: **{'retrieve' if d['retrieve'] else 'abstain'}**, score {d['score']:.3f} "
                     f"vs threshold {d['threshold']:.3f}: {d['reason']}")
    else:
        lines.append("- decision: none (" + "; ".join(t.fallbacks) + ")")
    lines.append(f"- retriever: `{t.retriever.get('name')}` params {t.retriever.get('params')}, "
                 f"k={t.retriever.get('k')}, as_of={t.retriever.get('as_of')}")
    lines.append("\n| dayid | score | sender | text |\n|---|---|---|---|")
    for h in t.hits:
        lines.append(f"| {h['dayid']} | {h['score']:.4f} | {h['sender']} | {h['text'].replace('|', '/')} |")
    a = t.applied
    lines.append(f"\n- applied under **“{a.get('heading')}”**: {', '.join(a.get('items', [])) or 'nothing'} "
                 f"({a.get('tokens', 0)} tokens of {a.get('params', {}).get('budget_tokens')}); "
                 f"cut for budget: {', '.join(a.get('dropped_for_budget', [])) or 'none'}; "
                 f"already on screen: {', '.join(a.get('deduplicated', [])) or 'none'}")
    lines.append(f"- model: `{t.model}`, tokens {t.tokens}, latency (ms) {t.latency_ms}")
    if t.errors:
        lines.append("- errors: " + "; ".join(f"{e.step}: {e.type}: {e.message}" for e in t.errors))
    return "\n".join(lines)


def export_jsonl(store: Store, participant: str | None = None, arm: str | None = None,
                 decision: str | None = None) -> str:
    return traces.to_jsonl(traces.list_(store, participant=participant or None, arm=arm or None,
                                        decision=_decision(decision)))
