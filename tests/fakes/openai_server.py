"""A real HTTP server on 127.0.0.1 that speaks the OpenAI-compatible provider protocol.

It stands in for what is outside our walls (an embeddings provider), so the real client code,
HTTP included, runs in tests. Vectors are derived from the text's hash: deterministic, unit length.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def fake_vector(text: str, dimensions: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return (vector / np.linalg.norm(vector)).tolist()


@dataclass
class FakeProvider:
    api_key: str = "sk-test-key"
    dimensions: int = 384
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""


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
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(text, provider.dimensions)}
                    for i, text in enumerate(inputs)
                ]
                # Real providers do not promise order; the client must sort by index.
                self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})
                return
            self._send(404, {"error": {"message": f"unknown path {self.path}"}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    provider.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
