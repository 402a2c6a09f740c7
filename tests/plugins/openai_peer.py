"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests through litellm's real HTTP client.

`POST /v1/chat/completions` answers in the OpenAI wire format, streamed (server-sent events, tool
calls split into name and argument pieces as real servers send them) or whole. What it says is
chosen by the request's `model`:

    echo        the echo backend's reply, word by word
    scripted    tests.plugins.toolmodels.Scripted: IX declarations, actions, text (seeded by the prompt)
    obedient    tests.plugins.toolmodels.Obedient: obeys any instruction in its prompt
    error       HTTP 500 with an OpenAI error body
    slow        waits `slow_seconds` before its first byte
    garbage     HTTP 200 with a body that is not JSON
    notools     HTTP 400 when the request offers tools (a server without tool support), else echo

Every request body is kept in `requests`, so a test sees exactly what went over the wire.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from companion.backends.base import ToolCall
from companion.backends.echo import echo_reply


def _events(model: str, messages: list[dict]) -> list:
    if model == "scripted":
        from tests.plugins.toolmodels import Scripted

        return list(Scripted().generate(model, messages, {}))
    if model == "obedient":
        from tests.plugins.toolmodels import Obedient

        return list(Obedient().generate(model, messages, {}))
    words = echo_reply(messages).split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


class Peer:
    def __init__(self, slow_seconds: float = 3.0):
        self.requests: list[dict] = []
        self.slow_seconds = slow_seconds
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet test output
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                peer.requests.append(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                model = body.get("model", "")
                if model == "error":
                    return self._json(500, {"error": {"message": "the scripted peer failed on purpose",
                                                      "type": "server_error", "code": 500}})
                if model == "notools" and body.get("tools"):
                    return self._json(400, {"error": {"message": "this server does not support tools",
                                                      "type": "invalid_request_error", "code": 400}})
                if model == "slow":
                    time.sleep(peer.slow_seconds)
                if model == "garbage":
                    raw = b"<html>not json</html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                events = _events(model, body.get("messages") or [])
                if body.get("stream"):
                    self._stream(model, events, bool((body.get("stream_options") or {}).get("include_usage")))
                else:
                    self._whole(model, events)

            def _json(self, status: int, obj: dict) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _whole(self, model, events) -> None:
                text = "".join(e for e in events if not isinstance(e, ToolCall))
                calls = [{"id": f"call_{i}", "type": "function",
                          "function": {"name": c["name"], "arguments": c["arguments"]}}
                         for i, c in enumerate(e for e in events if isinstance(e, ToolCall))]
                msg = {"role": "assistant", "content": text or None}
                if calls:
                    msg["tool_calls"] = calls
                self._json(200, {"id": "chatcmpl-peer", "object": "chat.completion", "created": int(time.time()),
                                 "model": model, "choices": [{"index": 0, "message": msg,
                                                              "finish_reason": "tool_calls" if calls else "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": len(text.split()),
                                           "total_tokens": 10 + len(text.split())}})

            def _stream(self, model, events, usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-peer", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": model}

                def send(choices, **extra) -> None:
                    self.wfile.write(b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n")
                    self.wfile.flush()

                send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
                n_calls, n_words = 0, 0
                for e in events:
                    if isinstance(e, ToolCall):
                        # As OpenAI sends them: id and name first, then the arguments in pieces.
                        send([{"index": 0, "delta": {"tool_calls": [{
                            "index": n_calls, "id": f"call_{n_calls}", "type": "function",
                            "function": {"name": e["name"], "arguments": ""}}]}, "finish_reason": None}])
                        args = e["arguments"]
                        for j in range(0, len(args), 7):
                            send([{"index": 0, "delta": {"tool_calls": [{
                                "index": n_calls, "function": {"arguments": args[j:j + 7]}}]}, "finish_reason": None}])
                        n_calls += 1
                    else:
                        n_words += 1
                        send([{"index": 0, "delta": {"content": e}, "finish_reason": None}])
                send([{"index": 0, "delta": {}, "finish_reason": "tool_calls" if n_calls else "stop"}])
                if usage:
                    send([], usage={"prompt_tokens": 10, "completion_tokens": n_words, "total_tokens": 10 + n_words})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, name="openai-peer", daemon=True)

    def __enter__(self) -> "Peer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
