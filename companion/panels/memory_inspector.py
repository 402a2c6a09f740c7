"""“What I remember”: the participant's derived items with the messages they came from,
corrections and deletions, the persona, and the memory document with its versions.

Every handler reads the participant from the server-side session; item keys from the browser
are looked up within that participant's rows only."""

from __future__ import annotations

import gradio as gr

from companion import gate, inspector
from companion.markup import text as as_text
from companion.panels.common import Shared
from memory.store import StoreError


class MemoryInspector:
    def __init__(self, sh: Shared):
        self.sh = sh
        with gr.Accordion("What I remember", open=False, elem_id="memory-inspector") as self.box:
            gr.Markdown("What the companion has learned about you, each item with the messages it "
                        "came from. Pick an item to see them; correct or delete what is wrong. "
                        "A deleted item is gone everywhere and is not learned again from the same messages.")
            self.refresh = gr.Button("Refresh", size="sm", elem_id="mem-refresh")
            self.table = gr.Dataframe(headers=inspector.COLUMNS, interactive=False, wrap=True, elem_id="mem-table")
            with gr.Row():
                self.item = gr.Dropdown(label="Item", choices=[], value=None, allow_custom_value=True,
                                        scale=2, elem_id="mem-item")
                self.text = gr.Textbox(label="New wording (profile, file memory) or setting (preference)",
                                       scale=3, elem_id="mem-text")
            with gr.Row():
                self.show_btn = gr.Button("Show sources", size="sm", elem_id="mem-show")
                self.edit_btn = gr.Button("Save correction", size="sm", elem_id="mem-edit")
                self.delete_btn = gr.Button("Delete everywhere", size="sm", variant="stop", elem_id="mem-delete")
            self.msg = gr.Markdown(elem_id="mem-msg")
            self.sources = gr.Markdown(elem_id="mem-sources")
            gr.Markdown("#### Persona")
            self.persona = gr.Markdown(elem_id="mem-persona")
            gr.Markdown("#### Memory document")
            self.file = gr.Markdown(elem_id="mem-file")
            with gr.Row():
                self.version = gr.Dropdown(label="Version", choices=[], value=None, allow_custom_value=True,
                                           scale=3, elem_id="mem-version")
                self.show_v = gr.Button("Show version", size="sm", scale=1)
                self.restore_btn = gr.Button("Restore this version", size="sm", scale=1, elem_id="mem-restore")
            self.version_text = gr.Markdown(elem_id="mem-version-text")
        self.outs = [self.table, self.item, self.persona, self.file, self.version, self.sources, self.version_text]

    @gate.view
    def mem_view(self, sess: dict):
        store = self.sh.store
        p = self.sh.acting(sess)
        if not p:  # signed out: nothing of the last participant stays on the page
            return ([], gr.update(choices=[], value=None), "", "", gr.update(choices=[], value=None), "", "")
        table = inspector.rows(store, p)
        return (table, gr.update(choices=inspector.choices(table), value=None),
                inspector.persona_markdown(store, p), inspector.file_markdown(store, p),
                gr.update(choices=inspector.versions(store, p), value=None), "", "")

    @staticmethod
    def _do(action, *args):
        try:
            return action(*args)
        except (inspector.Refused, StoreError, ValueError) as e:
            raise gr.Error(str(e)) from None

    @gate.participant
    def mem_sources_of(self, key, sess: dict):
        if not key:
            return ""
        return self._do(inspector.sources, self.sh.store, self.sh.require(sess), key)

    @gate.participant
    def mem_select(self, evt: gr.SelectData, sess: dict):
        # a click on a row of the table picks its item (the key is in the first column)
        row = evt.row_value or []
        return row[0] if row else gr.update()

    @gate.participant
    def mem_edit(self, key, new, sess: dict):
        return as_text(self._do(inspector.edit, self.sh.store, self.sh.require(sess), key, new))

    @gate.participant
    def mem_delete(self, key, sess: dict):
        return as_text(self._do(inspector.delete, self.sh.store, self.sh.require(sess), key))

    @gate.participant
    def mem_version_of(self, version, sess: dict):
        if version in (None, ""):
            return ""
        return self._do(inspector.version_markdown, self.sh.store, self.sh.require(sess), version)

    @gate.participant
    def mem_restore(self, version, sess: dict):
        return as_text(self._do(inspector.restore, self.sh.store, self.sh.require(sess), version))

    def wire(self) -> None:
        s, outs = self.sh.session, self.outs
        self.refresh.click(self.mem_view, [s], outs, api_name="mem_view")
        self.box.expand(self.mem_view, [s], outs, api_visibility="private")
        self.table.select(self.mem_select, [s], [self.item], api_visibility="private").then(
            self.mem_sources_of, [self.item, s], [self.sources], api_visibility="private")
        self.item.input(self.mem_sources_of, [self.item, s], [self.sources], api_visibility="private")
        self.show_btn.click(self.mem_sources_of, [self.item, s], [self.sources], api_name="mem_sources")
        self.edit_btn.click(self.mem_edit, [self.item, self.text, s], [self.msg], api_name="mem_edit").success(
            self.mem_view, [s], outs, api_visibility="private")
        self.delete_btn.click(self.mem_delete, [self.item, s], [self.msg], api_name="mem_delete").success(
            self.mem_view, [s], outs, api_visibility="private")
        self.show_v.click(self.mem_version_of, [self.version, s], [self.version_text], api_name="mem_version")
        self.version.input(self.mem_version_of, [self.version, s], [self.version_text], api_visibility="private")
        self.restore_btn.click(self.mem_restore, [self.version, s], [self.msg], api_name="mem_restore").success(
            self.mem_view, [s], self.outs, api_visibility="private")
