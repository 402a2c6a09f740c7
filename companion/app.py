"""The Gradio app: sign-in, consent, chat with streamed replies and a memory line per reply.

Each browser session holds its participant in server-side state; every handler reads and
writes that participant only, so a participant sees only their own conversation. The page is
built from panels (companion/panels/), composed here in page order.
"""

from __future__ import annotations

import logging
import os

import companion  # noqa: F401  (no-telemetry environment first)
import anyio
import gradio as gr
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from companion import annotatepanel, auth, gate, trialpanel
from companion.markup import html_text as as_html_text, text as as_text
from companion.panels import chat, signin
from companion.panels.common import Shared, new_session, plan_outreach
from companion.panels.held_actions import HeldActions
from companion.panels.memory_inspector import MemoryInspector
from companion.panels.research import Research
from companion.settings import Settings
from consent import downloads
from memory.store import Store

# Kept importable from here: scripts and tests read the chat as a participant sees it.
history, memory_line, unpaired_surrogate = chat.history, chat.memory_line, chat.unpaired_surrogate
HISTORY_SHOWN = chat.HISTORY_SHOWN
__all__ = ["App", "build", "history", "memory_line", "model_note", "new_session", "schedule_jobs", "serve",
           "unpaired_surrogate"]
log = logging.getLogger(__name__)


# Gradio shows a trash icon on the chat that empties the view while every message stays
# stored (deleting is "What I remember" and withdrawal); it has no option to hide it.
CSS = """
#chat button[aria-label="Clear"] { display: none !important; }
"""


def model_note(model: str) -> str:
    """Which model answers, and for the embedded one, what it is."""
    line = f"Replies come from the model `{as_text(model)}`."
    if model.startswith("local/"):
        line += (" This is a small demo model that runs on this computer: it often loses the thread, "
                 "repeats itself or invents things. To talk to a real model, see “Connecting a real model” "
                 "in the README.")
    return line


def build(settings: Settings, store: Store | None = None, scheduler=None) -> gr.Blocks:
    """The app. `scheduler` (companion.scheduler, running) gets a delivery job for each reminder or
    check-in that a reply or an approval schedules; without it the rows wait for the next start.

    Components are laid out first, panel by panel in page order, then the handlers are wired:
    Gradio names an event's API after its function, suffixing repeats in the order events are
    wired, so this order keeps the API names (/sign_in, /respond, /act_view, /lambda ...)."""
    store = store or Store(settings.data_dir)
    downloads.sweep(store.data_dir)

    with App(title="Companion", analytics_enabled=False) as demo:
        demo.companion_settings, demo.companion_store = settings, store
        sh = Shared(settings, store, scheduler, gr.State(new_session()), auth.SignInGuard(store, "participant"),
                    auth.SignInGuard(store, "researcher-page"))
        demo.companion_session = sh.session
        gr.Markdown("## Companion")
        gr.Markdown(model_note(settings.model), elem_id="model-note")
        with gr.Tab("Chat", elem_id="tab-chat"):
            door = signin.build_door(sh)
            with gr.Column(visible=False) as chat_box:
                talk = chat.build(sh)
                trialpanel.feedback_hook(talk.chatbot, sh.session, store)  # thumbs and tags on replies
                account = signin.build_account(sh)
                held = HeldActions(sh)
                mem = MemoryInspector(sh)
        with gr.Tab("Researcher", elem_id="tab-research"):
            research = Research(sh)  # traces, participants, trial arms; shown once the password is given
            with research.box:
                trialpanel.results_panel(sh.session, store)  # the trial report under the arms
                gr.Markdown("#### Annotate a release")
                annotatepanel.build(sh.session, settings)  # companion/annotatepanel.py

        entry = signin.SignIn(sh, door, chat_box, talk)
        # events after which the page shows another participant (or none): the panels follow
        switched = entry.wire_door()
        held.wire()
        chat.wire(sh, talk)
        held.follow(talk.sent)
        switched += entry.wire_account(account)
        mem.wire()

        @gate.view
        def panels_for(sess: dict):
            return (*mem.mem_view(sess), "", "", *held.act_view(sess), "", signin.zone_of(store, sh.acting(sess)))

        for ev in switched:
            ev.then(panels_for, [sh.session], mem.outs + [mem.msg, mem.text, held.pending, held.hist, held.msg,
                                                          account.zone], api_visibility="private")
        research.wire()
        demo.load(None, None, [door.browser_zone], js=signin.BROWSER_ZONE_JS)
    ungated = demo.ungated()
    if ungated:  # a handler that declares no policy would be refused at every call: say so now
        raise RuntimeError(f"events without a session-gate policy (companion/gate.py): {', '.join(ungated)}")
    return demo


class App(gr.Blocks):
    """The app's Blocks, launched with its security settings (by `serve` and by tests alike):
    - every event through the one session gate (companion/gate.py) before its handler, and
      every error message it shows made text (a toast renders HTML);
    - uploads refused (max_file_size 0): no component takes a file, and anonymous uploads to
      /gradio_api/upload would otherwise fill the disk;
    - nothing on disk served by path: no allowed paths, the data directory blocked; downloads go
      through /download/<token> (consent.downloads), once, then deleted;
    - X-Forwarded-For believed only from the proxies in settings.trusted_proxies (uvicorn trusts
      127.0.0.1 by default, which let any local client pick its address for the sign-in guard);
    - the CSS that hides the chat's trash icon.
    """

    companion_settings: Settings
    companion_store: Store
    companion_session: gr.State

    async def call_function(self, block_fn, processed_input, iterator=None, requests=None, event_id=None,
                            event_data=None, in_event_listener=False, state=None, oauth_token=None):
        """Gradio calls this for every event (also by fn_index, also events gr.render made): the
        gate runs first, on a worker thread (it reads the database)."""
        fn = block_fn if not isinstance(block_fn, int) else self.fns[block_fn]
        try:
            if iterator is None:  # the first call of an event (a generator's later steps are the same event)
                sess = state[self.companion_session._id] if state is not None else None
                await anyio.to_thread.run_sync(gate.check, self.companion_store, gate.handler_of(fn), sess)
            return await super().call_function(block_fn, processed_input, iterator, requests, event_id,
                                               event_data, in_event_listener, state, oauth_token)
        except gr.Error as e:
            e.message = as_html_text(e.message)
            raise

    def ungated(self) -> list[str]:
        """Events whose handler declares no gate policy (must be none)."""
        return [f"{f.api_name} (fn {f._id})" for f in self.fns.values()
                if f.fn is not None and gate.policy_of(gate.handler_of(f)) is None]

    def launch(self, *args, **kwargs):
        _patient_self_check()
        data_dir = str(self.companion_store.data_dir.resolve())
        kwargs["max_file_size"] = 0
        if os.environ.pop("GRADIO_ALLOWED_PATHS", None):
            log.warning("GRADIO_ALLOWED_PATHS is ignored: the app serves no files by path")
        kwargs["allowed_paths"] = []
        kwargs["blocked_paths"] = list(kwargs.get("blocked_paths") or []) + [data_dir]
        # uvicorn reads this when the server is configured, inside Blocks.launch
        os.environ["FORWARDED_ALLOW_IPS"] = self.companion_settings.trusted_proxies or "-"
        app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
        app_kwargs["routes"] = list(app_kwargs.get("routes") or []) + [
            Route("/download/{token}", self._download, methods=["GET"])]
        kwargs["app_kwargs"] = app_kwargs
        kwargs["css"] = (kwargs.get("css") or "") + CSS
        return super().launch(*args, **kwargs)

    def _download(self, request) -> Response:
        got = downloads.take(self.companion_store.data_dir, request.path_params.get("token", ""))
        if got is None:
            return PlainTextResponse("This download link was already used, has expired, or its owner withdrew. "
                                     "Ask for the download again in the app.", status_code=404)
        name, data = got
        kind = "application/x-ndjson" if name.endswith(".jsonl") else "application/json"
        return Response(data, media_type=kind, headers={
            "Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})


def _patient_self_check() -> None:
    """Gradio's launch asks its own server for the page once it starts (`networking.url_ok`) and,
    if one HEAD request takes over 3 s, refuses to start ("When localhost is not accessible ...").
    On a loaded machine the first page can take longer, so the check waits for the server that is
    starting: up to 120 s, each try given 30 s. It still fails on a server that never answers."""
    import time

    import httpx
    from gradio import networking

    if getattr(networking.url_ok, "patient", False):
        return

    def url_ok(url: str) -> bool:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.head(url, timeout=30, verify=False).status_code in (200, 401, 301, 302, 303, 307, 308):
                    return True
            except (httpx.ConnectError, httpx.TimeoutException):
                pass
            time.sleep(0.5)
        return False

    url_ok.patient = True
    networking.url_ok = url_ok


def schedule_jobs(settings: Settings, store: Store):
    """Background work of the app (companion.scheduler): memory consolidation, the retention
    sweep if configured, and jobs other parts scheduled (reminders, check-ins), all kept in
    the app's database so they survive a restart.

    None runs on the reply's path; consolidation runs one instance at a time.
    """
    from companion import scheduler as jobs

    scheduler = jobs.build(settings, store)
    scheduler.start()
    plan_outreach(scheduler, store)  # reminders scheduled while the app was not running (CLI chats)
    return scheduler


def serve(settings: Settings, block: bool = True):
    store = Store(settings.data_dir)
    # Everything the first turn needs is loaded before the app answers (and says "ready").
    from companion import warmup

    log.info("warmed before ready: %s", warmup.warm(settings, store))
    warmup.read_ahead(store, warmup.recent_participants(store))  # their recall readings, in the background
    scheduler = schedule_jobs(settings, store)
    demo = build(settings, store, scheduler)
    demo.queue(default_concurrency_limit=8)
    return demo.launch(server_name=settings.host, server_port=settings.port, share=False,
                       ssr_mode=False, mcp_server=False, prevent_thread_lock=not block,
                       footer_links=[], quiet=True)
