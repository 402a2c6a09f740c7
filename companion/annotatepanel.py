"""The annotation panel of the researcher tab: consent.annotate behind a few Gradio controls.

Built inside the researcher page (`build(session, settings)` from app.py); every handler checks the
session's researcher sign-in first, as the rest of that page does. The annotator opens a release
folder, picks a pending probe, reads its recent window and searches its history, then sets stages
A-E in order, each with a note. A configured capable model may draft a stage; with a model that
may not (the embedded demo model, echo), drafting is not offered. A draft counts only after
"Confirm draft". Every text from the release or typed by an annotator is shown as text
(companion.markup): a release is participants' words.
"""

from __future__ import annotations

import re

import gradio as gr

from companion import gate
from companion.markup import text as T
from companion.settings import Settings
from consent import annotate as A
from consent.formats import STAGES

LOCI = ["thread", "episode", "profile", "companion", "none"]
TIERS = ["basic", "intermediate", "hard", "edge"]
ON_SCREEN = ["no", "partial", "clear"]


def _guard(sess: dict) -> None:
    if not sess.get("researcher"):
        raise gr.Error(gate.RESEARCHER_REFUSAL)


def may_draft(model: str) -> str | None:
    """None when `model` may draft, else why not (consent.annotate's rule)."""
    try:
        A.refuse_model(model)
    except A.AnnotationError as e:
        return str(e)
    return None


def _rows(rows: list[dict]) -> list[list]:
    return [[r["dayid"], r["sender"], r["text"]] for r in rows]


def _dayid(d) -> str:
    """A dayid as code; anything else a release calls a dayid, as text."""
    return f"`{d}`" if isinstance(d, str) and re.fullmatch(r"day\d+-\d+", d) else T(d)


def probe_view(folder: str, key: str, annotator: str, query: str = "") -> tuple[str, list[list], list[str], str]:
    """(probe and window as Markdown, history rows, dayids to pick from, stages so far as Markdown)."""
    p = A.probe(folder, key)
    win = "\n".join(f"- {_dayid(r['dayid'])} **{T(r['sender'])}**: {T(r['text'])}"
                    for r in A.window(folder, p)) or "- (empty)"
    head = (f"**{T(p.key)}** ({T(p.row.get('stratum'))}, {T(p.row.get('annotation'))}): {T(p.text)}\n\n"
            f"Recent window:\n{win}")
    hist = A.history(folder, p, query)
    picks = [r["dayid"] for r in A.history(folder, p)] + [c for c in p.claims]
    return head, _rows(hist), picks, stages_view(folder, key, annotator)


def stages_view(folder: str, key: str, annotator: str) -> str:
    if not annotator:
        return "Enter your annotator name."
    st = A.state(folder, annotator, key).get(key, {})
    lines = []
    for s, name in STAGES.items():
        r = st.get(s)
        if r is None:
            lines.append(f"- {s} ({T(name)}): not set")
            continue
        who = f"confirmed by {r['by']}" if r.get("confirmed") else f"DRAFT by {r.get('drafted_by')}, not confirmed"
        fields = {k: v for k, v in r.items() if k in A.MODELS[s].model_fields and k != "note"}
        lines.append(f"- {s} ({T(name)}), {T(who)}: {T(fields)}; note: {T(r['note'])}")
    return "\n".join(lines)


def build(session: gr.State, settings: Settings) -> None:
    """Add the panel to the Blocks being built (call inside the researcher page's column)."""
    with gr.Column(elem_id="annotate-panel"):
        with gr.Row():
            folder = gr.Textbox(label="Release folder", elem_id="an-folder", scale=3)
            who = gr.Textbox(label="Annotator", elem_id="an-who", scale=1)
            load = gr.Button("Load pending probes", elem_id="an-load", scale=1)
        key = gr.Dropdown(label="Pending probe", choices=[], elem_id="an-key", allow_custom_value=True)
        head = gr.Markdown(elem_id="an-probe")
        with gr.Row():
            query = gr.Textbox(label="Search the history", elem_id="an-query", scale=3)
            search = gr.Button("Search", elem_id="an-search", scale=1)
        hist = gr.Dataframe(headers=["dayid", "sender", "text"], interactive=False, elem_id="an-history")
        stages = gr.Markdown(elem_id="an-stages")
        with gr.Accordion("A: what the probe points at", open=True):
            a_locus = gr.Radio(LOCI, label="locus", elem_id="an-a-locus")
            a_note = gr.Textbox(label="note A", elem_id="an-a-note")
            a_save = gr.Button("Save A", elem_id="an-a-save", size="sm")
        with gr.Accordion("B: evidence checked against the source", open=True):
            b_episode = gr.Dropdown(label="episode_refs", multiselect=True, choices=[], elem_id="an-b-episode")
            b_profile = gr.Dropdown(label="profile_refs", multiselect=True, choices=[], elem_id="an-b-profile")
            b_ground = gr.Dropdown(label="grounding_dayids", multiselect=True, choices=[], elem_id="an-b-ground")
            b_screen = gr.Radio(ON_SCREEN, label="referent_on_screen", value="no", elem_id="an-b-screen")
            b_note = gr.Textbox(label="note B", elem_id="an-b-note")
            b_save = gr.Button("Save B", elem_id="an-b-save", size="sm")
        with gr.Accordion("C: tier and category, with the rule applied", open=True):
            c_tier = gr.Radio(TIERS, label="tier", elem_id="an-c-tier")
            c_cat = gr.Textbox(label="category", elem_id="an-c-cat")
            c_rule = gr.Textbox(label="rule applied", elem_id="an-c-rule")
            c_note = gr.Textbox(label="note C", elem_id="an-c-note")
            c_save = gr.Button("Save C", elem_id="an-c-save", size="sm")
        with gr.Accordion("D: reference reply from the recorded context only", open=True):
            d_reply = gr.Textbox(label="reference reply", lines=3, elem_id="an-d-reply")
            d_note = gr.Textbox(label="note D", elem_id="an-d-note")
            d_save = gr.Button("Save D", elem_id="an-d-save", size="sm")
        with gr.Accordion("E: final check", open=True):
            e_score = gr.Checkbox(label="scoreable", value=True, elem_id="an-e-score")
            e_note = gr.Textbox(label="note E", elem_id="an-e-note")
            e_save = gr.Button("Save E", elem_id="an-e-save", size="sm")
        with gr.Row():
            why_not = may_draft(settings.model)  # drafting is offered only with a model that may draft
            d_stage = gr.Radio(list(STAGES), label="Stage", value="A", elem_id="an-draft-stage",
                               visible=why_not is None)
            draft = gr.Button(f"Draft with {settings.model}", elem_id="an-draft", visible=why_not is None)
            confirm = gr.Button("Confirm draft", elem_id="an-confirm", visible=why_not is None)
        if why_not:
            gr.Markdown(f"Drafting is off: {T(why_not)}.", elem_id="an-draft-off")
        with gr.Row():
            finalize = gr.Button("Finalize my annotations into the release", elem_id="an-finalize")
            other = gr.Textbox(label="Agreement with annotator", elem_id="an-other")
            agree = gr.Button("Agreement", elem_id="an-agree")
        msg = gr.Markdown(elem_id="an-msg")

    @gate.researcher
    def on_load(f, w, sess):
        _guard(sess)
        try:
            keys = [p.key for p in A.probes(f)]
        except (A.AnnotationError, OSError) as e:
            return gr.update(choices=[], value=None), f"Refused: {T(e)}"
        return gr.update(choices=keys, value=keys[0] if keys else None), f"{len(keys)} probes pending in {T(f)}."

    @gate.researcher
    def on_pick(f, k, w, q, sess):
        _guard(sess)
        if not k:
            return "", [], *(gr.update(choices=[]),) * 3, ""
        try:
            h, rows, picks, st = probe_view(f, k, w, q)
        except A.AnnotationError as e:
            return f"Refused: {T(e)}", [], *(gr.update(choices=[]),) * 3, ""
        return h, rows, *(gr.update(choices=picks, value=[]),) * 3, st

    @gate.researcher
    def on_search(f, k, q, sess):
        _guard(sess)  # only the table changes: refs already picked stay picked
        try:
            return _rows(A.history(f, A.probe(f, k), q)) if k else []
        except A.AnnotationError:
            return []

    def saver(stage, build_data):
        @gate.researcher
        def save(f, k, w, *values):
            sess = values[-1]
            _guard(sess)
            try:
                A.set_stage(f, k, stage, build_data(*values[:-1]), w)
            except A.AnnotationError as e:
                return f"Refused: {T(e)}", stages_view(f, k, w) if (f and k) else ""
            return f"Stage {stage} saved and confirmed by {T(w)}.", stages_view(f, k, w)
        return save

    def _list(v):
        return list(v or [])

    common = [folder, key, who]
    a_save.click(saver("A", lambda loc, note: {"locus": loc, "note": note or ""}),
                 common + [a_locus, a_note, session], [msg, stages], api_name="an_save_A")
    b_save.click(saver("B", lambda ep, pr, gd, scr, note: {
        "episode_refs": _list(ep), "profile_refs": _list(pr), "grounding_dayids": _list(gd),
        "referent_on_screen": scr, "note": note or ""}),
        common + [b_episode, b_profile, b_ground, b_screen, b_note, session], [msg, stages], api_name="an_save_B")
    c_save.click(saver("C", lambda t, c, r, note: {"tier": t, "category": c or "", "rule": r or "", "note": note or ""}),
                 common + [c_tier, c_cat, c_rule, c_note, session], [msg, stages], api_name="an_save_C")
    d_save.click(saver("D", lambda r, note: {"reference_reply": r or "", "note": note or ""}),
                 common + [d_reply, d_note, session], [msg, stages], api_name="an_save_D")
    e_save.click(saver("E", lambda s, note: {"scoreable": bool(s), "note": note or ""}),
                 common + [e_score, e_note, session], [msg, stages], api_name="an_save_E")

    @gate.researcher
    def on_draft(f, k, w, stage, sess):
        _guard(sess)
        from companion import gateway

        def complete(prompt):
            return gateway.complete(settings.model, [{"role": "user", "content": prompt}], timeout=settings.timeout,
                                    max_tokens=600, retries=settings.retries).text
        try:
            A.draft(f, k, stage, w, settings.model, complete)
        except (A.AnnotationError, gateway.ModelError) as e:
            return f"Refused: {T(e)}", stages_view(f, k, w)
        return f"Stage {T(stage)} drafted by {T(settings.model)}: check it, then Confirm draft.", stages_view(f, k, w)

    @gate.researcher
    def on_confirm(f, k, w, stage, sess):
        _guard(sess)
        try:
            A.confirm(f, k, stage, w)
        except A.AnnotationError as e:
            return f"Refused: {T(e)}", stages_view(f, k, w)
        return f"Stage {T(stage)} confirmed by {T(w)}.", stages_view(f, k, w)

    @gate.researcher
    def on_finalize(f, w, sess):
        _guard(sess)
        try:
            r = A.finalize(f, w)
        except A.AnnotationError as e:
            return f"Refused: {T(e)}"
        return (f"{len(r['finalized'])} probes finalized ({r['scoreable']} scoreable), {len(r['unfinished'])} "
                "unfinished; the release passes `release check`.")

    @gate.researcher
    def on_agree(f, w, o, sess):
        _guard(sess)
        try:
            r = A.agreement(f, w, o)
        except A.AnnotationError as e:
            return f"Refused: {T(e)}"
        out = [f"Agreement {T(w)} vs {T(o)}:"]
        for name in ("locus", "tier", "demand"):
            x = r[name]
            k = f"{x['kappa']:.3f}" if x["kappa"] is not None else f"not computed ({T(x['reason'])})"
            out.append(f"- {name}: kappa {k}, n = {x['n']}")
        return "\n".join(out)

    load.click(on_load, [folder, who, session], [key, msg], api_name="an_load")
    pick_outs = [head, hist, b_episode, b_profile, b_ground, stages]
    key.change(on_pick, [folder, key, who, query, session], pick_outs, api_name="an_pick")
    search.click(on_search, [folder, key, query, session], [hist], api_name="an_search")
    draft.click(on_draft, common + [d_stage, session], [msg, stages], api_name="an_draft")
    confirm.click(on_confirm, common + [d_stage, session], [msg, stages], api_name="an_confirm")
    finalize.click(on_finalize, [folder, who, session], [msg], api_name="an_finalize")
    agree.click(on_agree, [folder, who, other, session], [msg], api_name="an_agree")
