"""The one turn. The app, the terminal chat and the eval replay all call `turn`.

    1 consent    no consent on record -> nothing is stored, the participant is told why
    2 log        store the participant message under its dayid
    3 DECIDE     gate.decide(ctx)              -> Decision(retrieve, score, threshold, reason)
    4 RETRIEVE   retriever.search(ctx, q, k)   -> ranked hits, nothing at or after as_of
    5 APPLY      policy.apply(recent, hits)    -> labelled prompt section within budget
    6 GENERATE   gateway.complete(messages)
    7 WRAP       wrapper.render(...)           -> shown text, actions run, actions held
    8 log        store the companion message and the turn's Trace
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from companion import gateway, prompts, trials
from companion.settings import Settings
from consent import records as consent
from memory import derived, filememory, messages, registry, traces
from memory.context import TurnContext
from memory.gates import Decision
from memory.messages import Message
from memory.policies import Applied
from memory.retrievers import Hit
from memory.store import Store
from memory.traces import Trace
from wrapper import render as wrapper


@dataclass
class TurnResult:
    shown: str  # what the participant sees
    message: Message | None = None  # their stored message (None when refused)
    reply: Message | None = None  # the stored companion reply (None on refusal or model fault)
    trace: Trace | None = None
    refused: bool = False


class _Clock:
    def __init__(self, trace: Trace):
        self.trace, self.t = trace, time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.trace.latency_ms[step] = round((now - self.t) * 1000, 3)
        self.t = now


def build_prompt(ctx: TurnContext, applied: Applied) -> list[dict]:
    system = prompts.SYSTEM.format(context=ctx.context)
    if applied.file_memory:
        system += "\n\n" + prompts.FILE_MEMORY.format(text=applied.file_memory)
    if applied.items:
        items = "\n".join(
            prompts.MEMORY_ITEM.format(dayid=h.dayid, who=prompts.speaker(h.sender), text=h.text)
            for h in applied.items
        )
        system += "\n\n" + prompts.MEMORY.format(heading=applied.heading, items=items)
    out = [{"role": "system", "content": system}]
    for m in ctx.recent:
        out.append({"role": "user" if m.sender == "user" else "assistant", "content": m.text})
    out.append({"role": "user", "content": ctx.text})
    return out


def context_at(store: Store, participant: str, text: str, as_of: int, context: str,
               settings: Settings, extra: dict | None = None) -> TurnContext:
    """What steps 3-5 see: the message, the recent window and everything before `as_of`."""
    return TurnContext(
        store=store,
        participant=participant,
        text=text,
        context=context,
        as_of=as_of,
        recent=messages.read(store, participant, as_of, limit=settings.recent_window),
        ask_model=lambda prompt: gateway.complete(settings.model, prompt, timeout=settings.timeout,
                                                  max_tokens=8, retries=0).text,
        extra=dict(extra or {}),
    )


def recall(ctx: TurnContext, arm: trials.Arm, settings: Settings, trace: Trace, clock: "_Clock | None" = None,
           memory_allowed: bool = True) -> tuple[Decision | None, list[Hit], Applied]:
    """Steps 3-5. The live turn and the eval replay both come here: there is no other road."""
    clock = clock or _Clock(trace)
    # 3 DECIDE
    trace.arm = arm.describe()
    gate = registry.create("gate", arm.gate, **settings.params_for("gate", arm.gate))
    trace.gate = gate.describe()
    decision = None
    if not memory_allowed:
        trace.fallbacks.append("memory scope not consented: the past is not consulted")
    else:
        try:
            decision = gate.decide(ctx)
        except Exception as e:  # a broken gate must not lose the turn
            trace.error("decide", e)
            trace.fallbacks.append("gate failed: abstained")
    if decision is not None:
        trace.decision = decision.model_dump()
    clock.lap("decide")

    # 4 RETRIEVE
    retriever = registry.create("retriever", arm.retriever, **settings.params_for("retriever", arm.retriever))
    trace.retriever = {**retriever.describe(), "k": settings.k, "as_of": ctx.as_of}
    hits: list[Hit] = []
    if decision is not None and decision.retrieve:
        try:
            hits = retriever.search(ctx, ctx.text, settings.k)
        except Exception as e:
            trace.error("retrieve", e)
            trace.fallbacks.append("retriever failed: no memory applied")
    trace.hits = [h.public() for h in hits]
    clock.lap("retrieve")

    # 5 APPLY
    policy = registry.create("policy", arm.policy, budget_tokens=settings.budget_tokens,
                             **settings.params_for("policy", arm.policy))
    applied = policy.apply(ctx.recent, hits)
    if memory_allowed and settings.file_memory:
        # File memory is read whole, gate or no gate: it is who the participant is, not an episode.
        applied.file_memory, applied.file_lines = filememory.prompt_block(ctx.store, ctx.participant,
                                                                          ctx.context, ctx.as_of)
    trace.applied = {**applied.describe(policy.describe()), "recent": [m.dayid for m in ctx.recent],
                     "prompt_versions": [prompts.SYSTEM_VERSION, prompts.MEMORY_VERSION]}
    clock.lap("apply")
    return decision, hits, applied


def turn(
    store: Store,
    participant: str,
    text: str,
    context: str = "personal",
    settings: Settings | None = None,
    on_token: Callable[[str], None] | None = None,
) -> TurnResult:
    settings = settings or Settings()
    if context not in messages.CONTEXTS:
        raise ValueError(f"context must be one of {messages.CONTEXTS}, got {context!r}")
    started = time.perf_counter()
    trace = Trace(participant=participant, context=context)
    clock = _Clock(trace)

    # 1 consent
    state = consent.status(store, participant)
    clock.lap("consent")
    if not state.accepted:
        return TurnResult(shown=consent.refusal(participant, state), refused=True)

    # 2 log
    msg = messages.append(store, participant, "user", text, context)
    trace.dayid = msg.dayid
    ctx = context_at(store, participant, msg.text, msg.ordinal, context, settings)
    clock.lap("log_message")

    # 3-5 DECIDE, RETRIEVE, APPLY
    arm = trials.arm_for(store, participant, settings)
    decision, hits, applied = recall(ctx, arm, settings, trace, clock, memory_allowed=state.allows("memory"))

    if applied.file_lines:  # the re-capture guard: what was injected is never extracted back
        derived.note_injected(store, participant, msg.ordinal, applied.file_lines)

    # 6 GENERATE
    trace.model = gateway.resolve(settings.model)
    reply_text = None
    try:
        done = gateway.complete(
            settings.model, build_prompt(ctx, applied), on_token=on_token,
            timeout=settings.timeout, max_tokens=settings.max_tokens, retries=settings.retries,
        )
        reply_text = done.text
        trace.tokens = {"prompt": done.prompt_tokens, "completion": done.completion_tokens,
                        "attempts": done.attempts}
    except gateway.ModelError as e:
        trace.error("generate", e)
        trace.fallbacks.append("model fault: the participant was told, no reply stored")
    clock.lap("generate")

    # 7 WRAP
    if reply_text is not None:
        rendered = wrapper.render(reply_text, interaction={})
        trace.interaction = {"mode": rendered.mode, **rendered.interaction}
        trace.actions_run, trace.actions_held = rendered.actions_run, rendered.actions_held
        shown = rendered.shown
    else:
        shown = prompts.FALLBACK_REPLY
    clock.lap("wrap")

    # 8 log: the reply and its trace land together or not at all
    def save_trace(conn, stored):
        if stored:
            trace.reply_dayid = stored[0].dayid
        clock.lap("log_reply")
        trace.latency_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
        if state.allows("logging"):  # no research logging consented: the turn leaves no trace row
            traces.save(store, trace, conn)

    if reply_text is not None:
        [reply] = messages.append_many(
            store, participant, [dict(sender="companion", text=shown, context=context)], also=save_trace)
    else:
        reply = None
        with store.transaction() as conn:
            save_trace(conn, [])
    return TurnResult(shown=shown, message=msg, reply=reply, trace=trace)
