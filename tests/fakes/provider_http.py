"""What the fake providers share: a threaded HTTP server on 127.0.0.1 whose handler hands each request, with
its parsed query and body, to a `route(request) -> Answer` function."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body or b"{}")

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


@dataclass
class Answer:
    status: int = 200
    body: bytes | str | dict | list = b""
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), self.headers.get("Content-Type", "text/html; charset=utf-8")
        return self.body, self.headers.get("Content-Type", "application/octet-stream")


@contextmanager
def provider_server(route: Callable[[Request], Answer], *, port: int = 0) -> Iterator[str]:
    """Serve `route` on 127.0.0.1:`port` (0: any free port); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(
                method=self.command,
                path=parts.path,
                query={k: v[0] for k, v in parse_qs(parts.query).items()},
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length) if length else b"",
            )
            answer = route(request)
            payload, content_type = answer.encoded()
            self.send_response(answer.status)
            self.send_header("Content-Type", content_type)
            for name, value in answer.headers.items():
                if name != "Content-Type":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = _handle

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
