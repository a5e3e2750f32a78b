"""A real HTTP server on 127.0.0.1 that speaks the OpenAI-compatible provider protocol.

It stands in for what is outside our walls (an embeddings provider), so the real client code,
HTTP included, runs in tests. Vectors are derived from the text's hash: deterministic, unit length.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def fake_vector(text: str, dimensions: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return (vector / np.linalg.norm(vector)).tolist()


@dataclass
class FakeProvider:
    """`chat(request_body) -> reply` scripts /chat/completions. A reply is a dict with `content` (text,
    streamed in small pieces when the request asks to stream) and/or `tool_calls` ([{name, arguments}]),
    or `{"status": 500}` to fail."""

    api_key: str = "sk-test-key"
    dimensions: int = 384
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""
    chat: Callable[[dict], dict] = lambda body: {"content": "Hello from the model."}
    #: Seconds each /embeddings answer waits first: a provider that hangs (the fault harness sets it).
    embedding_delay: float = 0.0
    #: Shorten vectors to a request's `dimensions`, as OpenAI's text-embedding-3 models do.
    honours_dimensions: bool = False

    def chat_requests(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"] == "/v1/chat/completions"]


@contextmanager
def openai_compatible_server(provider: FakeProvider) -> Iterator[FakeProvider]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            provider.requests.append({"path": self.path, "body": body})
            if self.headers.get("Authorization") != f"Bearer {provider.api_key}":
                self._send(
                    401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
                )
                return
            if self.path == "/v1/embeddings":
                if provider.embedding_delay:
                    time.sleep(provider.embedding_delay)
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                size = provider.dimensions
                if provider.honours_dimensions and body.get("dimensions"):
                    size = int(body["dimensions"])
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(text, size)}
                    for i, text in enumerate(inputs)
                ]
                # Real providers do not promise order; the client must sort by index.
                self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})
                return
            if self.path == "/v1/chat/completions":
                self._chat(body)
                return
            self._send(404, {"error": {"message": f"unknown path {self.path}"}})

        def _chat(self, body: dict) -> None:
            reply = provider.chat(body)
            if reply.get("status"):
                self._send(reply["status"], {"error": {"message": "the model is overloaded"}})
                return
            content = reply.get("content") or ""
            calls: list[dict[str, Any]] = [
                {
                    "index": i,
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(reply.get("tool_calls", []))
            ]
            if not body.get("stream"):
                message = {"role": "assistant", "content": content or None}
                if calls:
                    message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
                self._send(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for start in range(0, len(content), 7):
                self._event({"choices": [{"index": 0, "delta": {"content": content[start : start + 7]}}]})
            for call in calls:  # arguments arrive split across two chunks, as real providers do
                arguments = call["function"]["arguments"]
                half = len(arguments) // 2
                first = {
                    **call,
                    "function": {"name": call["function"]["name"], "arguments": arguments[:half]},
                }
                self._event({"choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
                rest = {"index": call["index"], "function": {"arguments": arguments[half:]}}
                self._event({"choices": [{"index": 0, "delta": {"tool_calls": [rest]}}]})
            finish = "tool_calls" if calls else "stop"
            self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, payload: dict) -> None:
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True  # a hanging answer must not hold the server's shutdown
    provider.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
