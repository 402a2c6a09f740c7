"""The one turn. The app, the terminal chat and the eval replay all call `turn` (the replay
calls its steps 3-5 and 6-7, which store nothing).

    1 consent    no consent on record -> nothing is stored, the participant is told why
    2 log        store the participant message under its dayid; the turn's time (TurnTime)
   2b ANSWER     a stated preference updates its cell; an answer to a pending action resolves it
                 (the companion replies itself: steps 3-7 are skipped, step 8 stores the reply)
    3 DECIDE     gate.decide(ctx)              -> Decision(retrieve, score, threshold, reason)
    4 RETRIEVE   retriever.search(ctx, q, k)   -> ranked hits, nothing at or after as_of
    5 APPLY      policy.apply(recent, hits)    -> labelled prompt section within budget
    6 GENERATE   gateway.complete(messages)
    7 WRAP       wrapper.render(...)           -> shown text; proposed actions decided
    8 log        store the companion message, its actions, the session and the turn's Trace
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Callable

from companion import actions, gateway, prompts, toolprobe, trials
from companion.settings import Settings
from consent import erasure
from consent import records as consent
from memory import answers, derived, filememory, grounding, ix_state, messages, nlp, parses, registry, traces
from memory.context import TurnContext, TurnTime
from memory.gates import Decision
from memory.messages import Message
from memory.policies import Applied
from memory.retrievers import Hit
from memory.store import Store
from memory.traces import Trace
from wrapper import render, selector
from wrapper.actions import acted_by, default_when, propose
from wrapper import tools as ix_tools
from wrapper.inventory import load as inventory


@dataclass
class TurnResult:
    shown: str  # what the participant sees
    message: Message | None = None  # their stored message (None when refused)
    reply: Message | None = None  # the stored companion reply (None on refusal or model fault)
    trace: Trace | None = None
    refused: bool = False


@dataclass
class Wrapped:
    """Steps 6-7 of one turn, before anything is stored."""
    shown: str | None  # None on a model fault
    reply_text: str | None = None
    rendered: render.Rendered | None = None
    selected: dict = field(default_factory=dict)  # attribute -> selector.Declared
    proposals: list[dict] = field(default_factory=list)  # kind, args, requested, origin, status, reason
    calls: ix_tools.Calls = field(default_factory=ix_tools.Calls)
    path: str = "selector"
    ceiling: str | None = None  # the participant's own autonomy: external actions never exceed it
    ix: dict | None = None  # what build_prompt was (or would have been) given: the next prompt opens alike


class _Clock:
    def __init__(self, trace: Trace):
        self.trace, self.t = trace, time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.trace.latency_ms[step] = round((now - self.t) * 1000, 3)
        self.t = now


def turn(
    store: Store,
    participant: str,
    text: str,
    context: str = "personal",
    settings: Settings | None = None,
    on_token: Callable[[str], None] | None = None,
    at: datetime | None = None,
    extra: dict | None = None,
) -> TurnResult:
    # every parse of this turn reads the participant's stored parses first, and the messages of
    # theirs it parses afresh are stored after the reply (memory.parses)
    reading = parses.Reading(store, participant)
    with nlp.source(reading):
        result = _turn(store, participant, text, context, settings, on_token, at, extra)
    reading.store_later()
    return result


def _turn(store: Store, participant: str, text: str, context: str, settings: Settings | None,
          on_token, at: datetime | None, extra: dict | None) -> TurnResult:
    settings = settings or Settings()
    if context not in messages.CONTEXTS:
        raise ValueError(f"context must be one of {messages.CONTEXTS}, got {context!r}")
    registry.get("ix_source", settings.ix_source)  # an unknown source is refused before anything is stored
    started = time.perf_counter()
    trace = Trace(participant=participant, context=context)
    clock = _Clock(trace)

    # 1 consent (after the previous turn's work off its reply path is committed: see finish)
    store.settle(participant)
    erasure.forget_erased_elsewhere(store)  # someone erased by another process: drop their words kept here
    state = consent.status(store, participant)
    clock.lap("consent")
    if not state.accepted:
        return TurnResult(shown=consent.refusal(participant, state), refused=True)

    # 2 log
    msg = messages.append(store, participant, "user", text, context, ts=at)
    trace.dayid = msg.dayid
    when = TurnTime.of(store, participant, msg.ts, msg.ordinal)
    ctx = context_at(store, participant, msg.text, msg.ordinal, context, settings, extra, time=when)
    clock.lap("log_message")

    # 2b ANSWER
    asked = actions.requested(msg.text, when.instant)  # read once: both readers leave out what it dictates
    learned = ix_state.learn(store, participant, msg, actions.own_words(msg.text, when.instant, asked))
    learned = actions.learn_autonomy(store, participant, msg, learned, asked)
    sess = ix_state.load(store, participant, context, when.instant, settings.session_gap_minutes)
    clock.lap("learn")  # the preference read of the message is on the reply path: its cost is traced
    if handled := answer_pending(ctx, msg, settings, sess, trace, learned):
        trace.interaction = {"learned": learned} if learned else {}
        trace.fallbacks.append("the reply answered a pending action or listed reminders: the wrapper replied, "
                               "no model call")
        return finish(ctx, msg, Wrapped(shown=handled), None, trace, state, clock, started, at)

    # 3-5 DECIDE, RETRIEVE, APPLY
    arm = trials.arm_for(store, participant, settings)
    decision, hits, applied = recall(ctx, arm, settings, trace, clock, memory_allowed=state.allows("memory"))
    if applied.file_lines:  # the re-capture guard: what was injected is never extracted back
        derived.note_injected(store, participant, msg.ordinal, applied.file_lines)

    # 6-7 GENERATE, WRAP
    wrapped = respond(ctx, applied, settings, trace, time=when, on_token=on_token, session=sess.declared,
                      carried=sess.carried, clock=clock)
    if learned:
        trace.interaction["learned"] = learned
        if wrapped.shown and (ack := ix_state.acknowledgement(learned, context)):
            wrapped.shown = f"{ack}\n\n{wrapped.shown}"  # a learned preference is said, in one line
            trace.interaction["acknowledged"] = ack

    # 8 log
    result = finish(ctx, msg, wrapped, sess, trace, state, clock, started, at)
    if wrapped.ix is not None and result.reply is not None:  # after the reply is stored and shown
        prefetch_next(ctx, applied, wrapped.ix, settings, [msg, result.reply])
    return result


def prefetch_next(ctx: TurnContext, applied: Applied, ix: dict, settings: Settings, added: list) -> bool:
    """The next turn's prompt without its question (system prompt, recent window with this turn's
    message and reply), handed to an in-process model to evaluate while the participant reads
    (gateway.prefetch): the next turn then evaluates only its message. Nothing is stored; the
    next turn builds its own prompt as always, and a prompt that opens otherwise just misses."""
    if not gateway.prefetches(settings.model):  # no prompt cache to fill: build nothing
        return False
    recent = (list(ctx.recent) + list(added))[-settings.recent_window:] if settings.recent_window else []
    prompt = build_prompt(replace(ctx, text="", recent=recent), replace(applied, items=[]), ix)
    return gateway.prefetch(settings.model, prompt[:-1])


# ---------------------------------------------------------------- 2: what the later steps see


def context_at(store: Store, participant: str, text: str, as_of: int, context: str,
               settings: Settings, extra: dict | None = None, time: TurnTime | None = None) -> TurnContext:
    """What steps 3-7 see: the message, the recent window, everything before `as_of`, the time
    (the replay passes the time of the position it replays; by default that of `as_of`)."""
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
        time=time or TurnTime.at(store, participant, as_of),
    )


def _source_settings(settings: Settings, ctx: TurnContext) -> dict[str, str]:
    """What the participant's interaction-setting source (a registered ix_source) says now."""
    return registry.create("ix_source", settings.ix_source).settings(ctx)


# ---------------------------------------------------------------- 2b ANSWER


def answer_pending(ctx: TurnContext, msg: Message, settings: Settings, sess: ix_state.Session, trace: Trace,
                   learned: list) -> str | None:
    """The companion's own reply when the message answers a pending action, else None."""
    def chosen(declared: bool = True) -> dict[str, str]:
        found = _source_settings(settings, ctx)
        return selector.plain(selector.select(ctx.context, settings.ix_source, found,
                                              sess.declared if declared else {}, {}))

    return actions.answer(ctx.store, ctx.participant, ctx.context, msg, ctx.time.local, chosen,
                          trace.actions_resolved, learned)


# ---------------------------------------------------------------- 3-5 DECIDE, RETRIEVE, APPLY


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
        trace.decision = decision.model_dump(exclude_none=True)
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
                     "memory_items": filememory.prompt_items(ctx.store, ctx.participant, ctx.context, ctx.as_of)
                     if memory_allowed and settings.file_memory else [],
                     "prompt_versions": [prompts.SYSTEM_VERSION, prompts.MEMORY_VERSION]}
    clock.lap("apply")
    return decision, hits, applied




# ---------------------------------------------------------------- 6-7 GENERATE, WRAP


def build_prompt(ctx: TurnContext, applied: Applied, ix: dict | None = None) -> list[dict]:
    """The messages for the model. Retrieved memory goes in the system prompt for a model that
    takes tools, and as short notes next to the question for one that does not (a small model
    loses what is far from the question)."""
    compact = bool((ix or {}).get("compact"))
    system = prompts.SYSTEM.format(context=ctx.context)
    if ix:
        system += "\n\n" + ix_block(ix)
    # The compact prompt (a model not marked capable): memory only when the message asks about the
    # past (on other turns a small model retold it as new facts about them, and a system prompt that
    # changes whenever file memory does is read again in full), the facts as a short list.
    past = not compact or _asks_about_the_past(ctx.text)
    facts_list = prompts.short_facts(applied.file_memory) if compact and applied.file_memory and past else ""
    if applied.file_memory and not compact:
        system += "\n\n" + prompts.FILE_MEMORY.format(text=applied.file_memory)
    notes = None
    if applied.items and past:
        if (ix or {}).get("path") == "model":
            items = "\n".join(
                prompts.MEMORY_ITEM.format(dayid=h.dayid, who=prompts.speaker(h.sender), text=h.text)
                for h in applied.items
            )
            system += "\n\n" + prompts.MEMORY.format(heading=applied.heading, items=items)
        else:
            items = "\n".join(
                prompts.NOTE_ITEM.format(dayid=h.dayid, who=prompts.NOTE_WHO.get(h.sender, h.sender),
                                         text=prompts.note(h.text))
                for h in applied.items
            )
            notes = prompts.NOTES.format(heading=applied.heading, items=items)
    out = [{"role": "system", "content": system}]
    for m in ctx.recent:
        out.append({"role": "user" if m.sender == "user" else "assistant", "content": m.text})
    if facts_list:  # next to the question, with the notes: after the history, so the opening stays the same
        notes = prompts.FACTS.format(items=facts_list) + ("\n\n" + notes if notes else "")
    if notes:
        out.append({"role": "system", "content": notes})
    out.append({"role": "user", "content": ctx.text})
    return out


def _asks_about_the_past(text: str) -> bool:
    """A question about the participant's past (a back-reference cue alone is not enough for the
    compact prompt: "thinking of running again" and "remind me to ..." ask nothing of memory)."""
    t = text.strip()
    question = t.endswith("?") or bool(re.match(r"(?i)(what|where|when|who|whose|which|how|why|did|do|does|is|are|was|"
                                                r"were|have|has|can|could|remind me (what|where|who|when|which|how))\b", t))
    return question and grounding.asks_about_the_past(t)


def ix_block(ix: dict) -> str:
    """The interaction part of the system prompt: instructions (selector) or the tool contract."""
    inv = inventory()
    if ix["path"] == "model":
        known = ", ".join(f"{inv.attributes[a].title}: {v}" for a, v in sorted(ix["found"].items()))
        return prompts.IX_TOOLS.format(known=prompts.IX_KNOWN.format(items=known) if known else "")
    lines = [f"- {inv.attributes[a].settings[d.setting]}" for a, d in ix["selected"].items()
             if inv.attributes[a].processing == "pass_through" or a == "solution_breadth"]
    return prompts.IX_SELECTOR.format(lines="\n".join(lines))


def _verbosity(selected: dict) -> str | None:
    d = selected.get("verbosity")
    return getattr(d, "setting", None)


def _grounds(settings: Settings, path: str) -> bool:
    """Whether a recall answer is checked for naming the participant's statement (memory.grounding):
    `auto` for the embedded demo model (it often answers without naming what its notes say)."""
    if settings.cite_notes == "auto":
        return (path == "selector" and not settings.model_capable
                and gateway.resolve(settings.model).startswith("local/"))
    return settings.cite_notes == "on"


def _grounded(settings: Settings) -> bool:
    """Whether the turn says only what memory holds (recall answered from the participant's own
    statements, unheard names dropped, the compact prompt): `auto` for every model not marked capable."""
    if settings.grounded == "auto":
        return not settings.model_capable
    return settings.grounded == "on"


def _path(settings: Settings) -> toolprobe.Choice:
    """The tool path only for a model that called a tool when probed (companion.toolprobe); tools
    off, not taken or not working: the rule-based (selector) path, which proposes actions itself."""
    return toolprobe.choose(settings.model, settings.tools, settings.timeout)


def respond(ctx: TurnContext, applied: Applied, settings: Settings, trace: Trace, *, time: TurnTime,
            on_token: Callable[[str], None] | None = None, session: dict | None = None,
            carried: list | None = None, clock: "_Clock | None" = None) -> Wrapped:
    """Steps 6-7: choose interaction settings, generate, wrap. Stores nothing (the eval calls it too,
    with the time of the position it replays)."""
    now = time.local
    clock = clock or _Clock(trace)
    tools_choice = _path(settings)
    path = tools_choice.path
    try:
        found = _source_settings(settings, ctx)
    except Exception as e:  # a broken source must not lose the turn: defaults hold
        trace.error("select", e)
        trace.fallbacks.append(f"interaction source {settings.ix_source} failed: defaults used")
        found = {}
    before = selector.select(ctx.context, settings.ix_source, found, session or {}, {})

    # 6 GENERATE
    trace.model = gateway.resolve(settings.model)
    grounded = _grounded(settings)
    said: dict = {}  # what the grounded policy did, for the trace
    recall_text = None
    if grounded:  # a question about their own past is answered from what they said, not generated
        try:
            recall_text, read = answers.answer(ctx.store, ctx.participant, ctx.as_of, ctx.text, applied.items,
                                               ctx.recent, now, select=settings.answer_select != "off")
        except Exception as e:  # the answerer must not lose the turn: the model answers instead
            trace.error("answer", e)
            recall_text, read = None, {}
        if read:
            said["recall_answer"] = read
    if recall_text is not None:
        if on_token:
            on_token(recall_text)
        done = gateway.Completion(text=recall_text, model=trace.model, prompt_tokens=0, completion_tokens=0,
                                  attempts=0)
        trace.tokens = {"prompt": 0, "completion": 0, "attempts": 0}
    else:
        try:
            done = _generate(ctx, applied, settings, trace, path, found, before, on_token, grounded, said)
        except gateway.ModelError as e:
            trace.error("generate", e)
            trace.fallbacks.append("model fault: the participant was told, no reply stored")
            clock.lap("generate")
            return Wrapped(shown=None, path=path, selected=before)
        trace.tokens = {"prompt": done.prompt_tokens, "completion": done.completion_tokens, "attempts": done.attempts}
    clock.lap("generate")

    # 7 WRAP
    calls = ix_tools.parse(done.tool_calls)
    for fault in calls.faults:
        trace.error("tool_call", fault)
    chosen = selector.select(ctx.context, settings.ix_source, found, session or {}, calls.declared)
    plain = selector.plain(chosen)
    own = selector.plain(before if not session else selector.select(ctx.context, settings.ix_source, found, {}, {}))
    read = actions.read(ctx.text, now)  # every action the message names, each a request or not, with why
    detected, detector = actions.detect(ctx.text, now, read) if not calls.actions else (None, None)
    proposals = propose(ctx.text, path, calls.actions, read, plain, now, ceiling=own["autonomy"], detected=detected)
    shown_actions = [{"summary": actions.describe(p["kind"], p["args"]), "status": p["status"],
                      "kind": p["kind"], "requested": p["requested"], "reason": p["reason"],
                      "missing": actions.missing(p["kind"], p["args"]) if p["status"] == "awaiting_facts" else []}
                     for p in proposals if p["status"] != "dropped"]
    rendered = render.render(done.text, plain, calls.payload, actions=shown_actions, faults=calls.faults,
                              carried=carried)
    trace.interaction = {"path": path, "source": settings.ix_source, "version": inventory().version,
                         "settings": {a: d.public() for a, d in chosen.items()}, "mode": rendered.mode,
                         **rendered.interaction, "faults": calls.faults, "tools": tools_choice.public(),
                         "acted_by": acted_by(proposals), "read": [i.public() for i in read],
                         "grounded": grounded, **said, **({"detector": detector} if detector else {})}
    if recall_text is None and _grounds(settings, path):  # an answer about their past names what they said, or quotes it
        line, checked = grounding.ground(ctx.text, rendered.shown, applied.items, ctx.recent)
        if checked:
            trace.interaction["grounding"] = checked
        if line:
            rendered.shown = f"{rendered.shown.rstrip()}\n\n{line}"
    clock.lap("wrap")
    if not rendered.shown.strip():  # tool calls and nothing to show: a fault, like an empty reply
        trace.error("wrap", "the model called tools but gave nothing the participant could be shown")
        trace.fallbacks.append("model fault: the participant was told, no reply stored")
        return Wrapped(shown=None, path=path, selected=chosen)
    return Wrapped(shown=rendered.shown, reply_text=done.text, rendered=rendered,
                   selected=chosen, proposals=proposals, calls=calls, path=path, ceiling=own["autonomy"],
                   ix={"path": path, "found": found, "selected": before, "compact": grounded})


def _generate(ctx: TurnContext, applied: Applied, settings: Settings, trace: Trace, path: str, found: dict,
              before: dict, on_token, grounded: bool, said: dict) -> gateway.Completion:
    """The model's reply. Grounded: the compact prompt, and every sentence naming a person, pet or
    place the participant never mentioned is dropped before it is shown; a reply left with nothing
    is generated once more."""
    prompt = build_prompt(ctx, applied, {"path": path, "found": found, "selected": before, "compact": grounded})
    budget = prompts.reply_tokens(_verbosity(before), settings.max_tokens)
    tools = ix_tools.all_tools() if path == "model" else None
    if not grounded:
        return gateway.complete(settings.model, prompt, on_token=on_token, timeout=settings.timeout,
                                retries=settings.retries, max_tokens=budget, tools=tools)
    said["memory_in_prompt"] = _asks_about_the_past(ctx.text)  # compact: memory only for the past
    heard = grounding.words_heard(ctx.store, ctx.participant, ctx.as_of, ctx.text)
    dropped: list[dict] = []
    for attempt in range(2):
        stream = grounding.NameCheck(heard, on_token)
        done = gateway.complete(settings.model, prompt, on_token=stream.feed, timeout=settings.timeout,
                                retries=settings.retries, max_tokens=budget, tools=tools)
        stream.finish()
        check = grounding.NameCheck(heard)
        kept = check.text(done.text)
        dropped += check.dropped
        if kept or not check.dropped or done.tool_calls:
            break
    said["postcheck"] = {"version": grounding.POSTCHECK_VERSION, "dropped": dropped, "attempts": attempt + 1}
    done.text = kept
    return done


# ---------------------------------------------------------------- 8 log


def finish(ctx: TurnContext, msg: Message, wrapped: Wrapped, sess: ix_state.Session | None, trace: Trace,
           state, clock: _Clock, started: float, at: datetime | None) -> TurnResult:
    """Step 8, the one way a turn ends after its message is stored: the reply, its actions, the
    session state and the trace land together or not at all. `sess` is None when the companion
    answered a pending action itself (no model, no session change)."""
    store, participant = ctx.store, ctx.participant

    def save_all(conn, stored):
        if stored:
            trace.reply_dayid = stored[0].dayid
        for p in wrapped.proposals:
            row, _ = actions.record(conn, participant, ctx.context, p["kind"], p["args"], requested=p["requested"],
                                    origin=p["origin"], dayid=msg.dayid, settings=selector.plain(wrapped.selected),
                                    default_when=default_when(ctx.time.local), ceiling=wrapped.ceiling)
            (trace.actions_run if row.status in ("done", "scheduled") else trace.actions_held
             if row.status in actions.PENDING else trace.actions_dropped).append(row.public())
        if sess is not None:
            model_ok = wrapped.shown is not None
            ix_state.save(conn, participant, sess,
                          {a: d.setting for a, d in wrapped.selected.items()
                           if model_ok and d.by == "model" and d.source == "turn"},
                          wrapped.rendered.consumed if wrapped.rendered else [],
                          wrapped.rendered.deferred if wrapped.rendered else [], msg, ctx.time.local)
        clock.lap("log_reply")
        trace.latency_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
        if state.allows("logging"):  # no research logging consented: the turn leaves no trace row
            traces.save(store, trace, conn)

    if wrapped.shown is None:
        with store.transaction() as conn:
            save_all(conn, [])
        return TurnResult(shown=prompts.FALLBACK_REPLY, message=msg, reply=None, trace=trace)
    # The reply, its actions, session state and trace commit together here: once `turn` returns,
    # the turn is acknowledged and survives any crash. Its vector (no step of this turn searches
    # the reply) is embedded and stored after it, off the reply path; the participant's next turn
    # waits for it before reading (store.settle), so as-of reads are unchanged.
    [reply] = messages.append_many(  # stamped at the turn's time: a replayed timeline stays in order
        store, participant, [dict(sender="companion", text=wrapped.shown, context=ctx.context, ts=_reply_ts(at))],
        also=save_all, index_later=True)
    return TurnResult(shown=wrapped.shown, message=msg, reply=reply, trace=trace)


def _reply_ts(at: datetime | None) -> datetime | None:
    """The reply's time: now, or just after the message's given time when a timeline is replayed."""
    return None if at is None else at + timedelta(seconds=1)
