"""The researcher's view of traces: filter, inspect one turn, export JSONL.

Plain functions; the Gradio researcher page calls them only after its password check.
"""

from __future__ import annotations

import hmac

from companion import auth
from companion.markup import cell, text
from memory import traces
from memory.store import Store
from memory.traces import Trace

COLUMNS = ["id", "participant", "dayid", "arm", "gate", "score", "threshold", "decision", "hits", "applied", "errors"]


class Refused(PermissionError):
    pass


class Shut(Refused):
    """No researcher credential exists at all: a refusal, but not a wrong guess."""


def check_password(given: str | None, configured: str | None, stored_hash: str | None = None) -> None:
    """The data directory's researcher credential (scrypt hash, `companion researcher
    set-password`) when one is set, else the password the app was started with."""
    if stored_hash:
        if not given or not auth.verify(given, stored_hash):
            raise Refused("wrong researcher password")
        return
    if not configured:
        raise Shut("the researcher page is shut: start the app with --researcher-password "
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
        out.append([t.id, t.participant, t.dayid, t.arm.get("name"), t.gate.get("name"), _round(d.get("score")),
                    _round(d.get("threshold")),
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


def _round(x, places: int = 3):
    return round(x, places) if isinstance(x, float) else x


def _params(p) -> str:
    """Plugin parameters as "name value, ..." (not a Python dict)."""
    if not p:
        return "defaults"
    return ", ".join(f"{k} {_round(v, 3)}" for k, v in p.items())


def explain(t: Trace) -> str:
    """One turn as Markdown: gate score and threshold, retrieved text, what was applied. Every
    stored text goes through markup.text: it is shown, never rendered."""
    d = t.decision
    arm = t.arm
    how = arm.get("assignment") or "fixed"
    if arm.get("seed") is not None:
        how += f", seed {arm.get('seed')}, turn {arm.get('index')}"
    lines = [f"### Turn {t.id}: {text(t.participant)} {t.dayid} ({text(t.context)})",
             f"- arm: `{arm.get('name')}` ({how})",
             f"- gate: `{t.gate.get('name')}` version {t.gate.get('version')}; parameters: {text(_params(t.gate.get('params')))}"]
    if d:
        lines.append(f"- decision: **{'retrieve' if d['retrieve'] else 'abstain'}**, score {d['score']:.3f} "
                     f"vs threshold {d['threshold']:.3f}: {text(d['reason'])}")
    else:
        lines.append("- decision: none (" + text("; ".join(t.fallbacks)) + ")")
    r = t.retriever
    if t.hits:
        lines.append(f"- retriever: `{r.get('name')}` ({text(_params(r.get('params')))}), top {r.get('k')}, "
                     f"as of {r.get('as_of') or 'now'}")
        lines.append("\n| dayid | score | sender | text |\n|---|---|---|---|")
        for h in t.hits:
            lines.append(f"| {h['dayid']} | {h['score']:.3f} | {h['sender']} | {cell(h['text'])} |")
    elif d and not d["retrieve"]:
        lines.append("- retrieval: not run (the gate abstained)")
    else:
        lines.append(f"- retriever: `{r.get('name')}` found nothing")
    a = t.applied
    if a.get("items"):
        budget = a.get("params", {}).get("budget_tokens")
        lines.append(f"\n- applied under **“{text(a.get('heading'))}”**: {', '.join(a.get('items', []))} "
                     f"({a.get('tokens', 0)} tokens of {budget}); "
                     f"cut for budget: {', '.join(a.get('dropped_for_budget', [])) or 'none'}; "
                     f"already on screen: {', '.join(a.get('deduplicated', [])) or 'none'}")
    else:
        lines.append("- applied: nothing")
    lat = ", ".join(f"{k} {v:.0f}" for k, v in (t.latency_ms or {}).items()) if isinstance(t.latency_ms, dict) else t.latency_ms
    toks = ", ".join(f"{k} {v}" for k, v in (t.tokens or {}).items()) if isinstance(t.tokens, dict) else t.tokens
    lines.append(f"- model: `{text(t.model)}`; tokens: {toks or 'not counted'}; time (ms): {lat or 'not timed'}")
    if t.errors:
        lines.append("- errors: " + "; ".join(f"{e.step}: {e.type}: {text(e.message)}" for e in t.errors))
    return "\n".join(lines)


def export_jsonl(store: Store, participant: str | None = None, arm: str | None = None,
                 decision: str | None = None) -> str:
    return traces.to_jsonl(traces.list_(store, participant=participant or None, arm=arm or None,
                                        decision=_decision(decision)))
