"""The researcher page: opened by the researcher password (one sign-in guard with the
participants'), it lists traces by participant, arm and decision, explains one turn, exports
traces as JSONL, shows participants with their consent state, and holds the trial arms."""

from __future__ import annotations

import gradio as gr

from companion import auth, gate, researcher
from companion.panels.common import Shared, client_address, r_guard
from companion.panels.trial_arms import TrialArms
from consent import access, downloads
from memory import participants


class Research:
    def __init__(self, sh: Shared):
        self.sh = sh
        with gr.Row():
            self.password = gr.Textbox(label="Researcher password", type="password", elem_id="r-pass", scale=3)
            self.open = gr.Button("Open", elem_id="r-open", scale=1)
        self.msg = gr.Markdown(elem_id="r-msg")
        with gr.Column(visible=False) as self.box:
            with gr.Row():
                self.f_part = gr.Dropdown(label="Participant", choices=[""], value="", allow_custom_value=True,
                                          elem_id="r-part")
                self.f_arm = gr.Dropdown(label="Arm", choices=[""], value="", allow_custom_value=True, elem_id="r-arm")
                self.f_dec = gr.Dropdown(label="Decision", choices=["", "retrieved", "abstained"], value="", elem_id="r-dec")
                self.refresh = gr.Button("Refresh")
            self.table = gr.Dataframe(headers=researcher.COLUMNS, interactive=False, elem_id="r-table")
            with gr.Row():
                self.trace_id = gr.Number(label="Trace id", precision=0, elem_id="r-trace")
                self.show = gr.Button("Show turn")
                self.export = gr.Button("Export JSONL")
            self.detail = gr.Markdown(elem_id="r-detail")
            self.file = gr.Markdown(elem_id="r-file")
            gr.Markdown("#### Participants and consent")
            self.people = gr.Dataframe(headers=access.COLUMNS, interactive=False)
            self.arms = TrialArms(sh)

    @gate.door
    def r_login(self, pw, sess: dict, request: gr.Request):
        settings, guard = self.sh.settings, self.sh.researcher_guard  # the page's own keys, never a participant's
        address = client_address(request)
        wait = guard.blocked_for("researcher", address)
        if wait > 0:
            return sess, gr.update(visible=False), f"Too many failed attempts; try again in {wait:.0f} s.", ""
        try:
            researcher.check_password(pw, settings.researcher_password, auth.researcher_hash(settings.data_dir))
        except researcher.Shut as e:  # no credential exists: nothing to guess
            return sess, gr.update(visible=False), str(e), ""
        except researcher.Refused as e:
            # whichever credential was checked (the app's, or the stored hash), one guard
            guard.failed("researcher", address)
            return sess, gr.update(visible=False), str(e), ""
        guard.succeeded("researcher", address)
        gate.open_researcher(self.sh.store, sess)
        return sess, gr.update(visible=True), "Researcher page open.", ""

    @gate.view
    def r_choices(self, sess: dict):
        store = self.sh.store
        if not sess.get("researcher"):  # r_login already said why: no second error, no traceback
            return gr.update(), gr.update(), gr.update(), gr.update()
        names = [""] + participants.names(store)
        return (gr.update(choices=names), gr.update(choices=[""] + researcher.arms(store)),
                gr.update(choices=names), access.participants_rows(store))

    @gate.researcher
    def r_rows(self, part, arm, dec, sess: dict):
        r_guard(sess)
        return researcher.rows(self.sh.store, participant=part, arm=arm, decision=dec)

    @gate.researcher
    def r_one(self, trace_id, sess: dict):
        r_guard(sess)
        t = researcher.one(self.sh.store, int(trace_id or 0))
        return researcher.explain(t) if t else f"No trace {trace_id}."

    @gate.researcher
    def r_dump(self, part, arm, dec, sess: dict):
        r_guard(sess)
        store = self.sh.store
        token = downloads.stage(store.data_dir, downloads.RESEARCHER, "traces.jsonl",
                                researcher.export_jsonl(store, participant=part, arm=arm, decision=dec))
        return (f"[Download the traces (JSONL)](download/{token}): the link works once, for "
                f"{downloads.TTL_SECONDS / 60:.0f} minutes.")

    def wire(self) -> None:
        s, filters = self.sh.session, [self.f_part, self.f_arm, self.f_dec, self.sh.session]
        self.open.click(self.r_login, [self.password, s], [s, self.box, self.msg, self.password]).then(
            self.r_choices, [s], [self.f_part, self.f_arm, self.arms.part, self.people])
        self.refresh.click(self.r_rows, filters, [self.table])
        self.show.click(self.r_one, [self.trace_id, s], [self.detail])
        self.export.click(self.r_dump, filters, [self.file])
        self.arms.wire()
