"""A browser tab as a hostile client speaks to the served app: Gradio's queue over raw HTTP,
events called by `fn_index` (also those the page does not show, and those `gr.render` made in
this tab), with whatever data and event data the caller chooses."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

import httpx


_http = httpx.Client()  # one connection pool for every tab (a browser's tabs share one too)


@dataclass
class Reply:
    success: bool
    data: list | None  # the outputs, when it succeeded
    error: str | None  # what the page would show, when it did not
    render: dict | None = None  # a gr.render's new layout (components with their values, events)

    def strings(self) -> list[str]:
        """Every string the reply carries (outputs, error, rendered components)."""
        out: list[str] = []

        def walk(x):
            if isinstance(x, str):
                out.append(x)
            elif isinstance(x, dict):
                for v in x.values():
                    walk(v)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)

        walk(self.data)
        walk(self.error)
        walk(self.render)
        return out


@dataclass
class Tab:
    url: str
    session_hash: str = field(default_factory=lambda: secrets.token_hex(10))

    def call(self, fn_index: int, data: list, event_data: dict | None = None, timeout: float = 90) -> Reply:
        r = _http.post(f"{self.url}gradio_api/queue/join", timeout=30, json={
            "data": data, "fn_index": fn_index, "session_hash": self.session_hash, "event_data": event_data,
            "trigger_id": None})
        if r.status_code != 200:
            return Reply(False, None, f"HTTP {r.status_code}: {r.text}")
        event = r.json()["event_id"]
        with _http.stream("GET", f"{self.url}gradio_api/queue/data", params={"session_hash": self.session_hash},
                          timeout=timeout) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data: "):
                    continue
                msg = json.loads(line[6:])
                if msg.get("event_id") != event or msg.get("msg") != "process_completed":
                    continue
                out = msg.get("output") or {}
                if msg.get("success"):
                    return Reply(True, out.get("data"), None, out.get("render_config"))
                return Reply(False, None, str(out.get("error")))
        return Reply(False, None, "the stream ended without a result")


class Page:
    """The served page as its /config describes it: components and every event, by name."""

    def __init__(self, url: str):
        self.url = url
        cfg = _http.get(f"{url}config", timeout=30).json()
        self.comps = {c["id"]: c for c in cfg["components"]}
        self.deps = cfg["dependencies"]
        self.by_name = {d["api_name"]: d for d in self.deps}

    def props(self, comp_id: int) -> dict:
        return self.comps[comp_id].get("props", {})

    def data(self, dep: dict, given: dict | None = None) -> list:
        """Inputs for `dep`: a value from `given` (keyed by elem_id or label), else the component's
        value as the page holds it (State: the server's)."""
        given = given or {}
        out = []
        for i in dep["inputs"]:
            c, p = self.comps[i], self.props(i)
            for k in (p.get("elem_id"), p.get("label")):
                if k is not None and k in given:
                    out.append(given[k])
                    break
            else:
                out.append(None if c["type"] == "state" else p.get("value"))
        return out

    def call(self, tab: Tab, name: str, given: dict | None = None, event_data: dict | None = None) -> Reply:
        dep = self.by_name[name]
        return tab.call(dep["id"], self.data(dep, given), event_data)
