"""A small threaded HTTP server on 127.0.0.1 for crawl tests: fixed responses, faults, and static files."""

from __future__ import annotations

import gzip
import ipaddress
import mimetypes
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SITEMAP_SAMPLES = SHARED_DATA / "sitemaps"
FEED_SAMPLES = SHARED_DATA / "feeds"
FLASK_DOCS = SHARED_DATA / "sites" / "flask-docs"


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]


Handler = Callable[[BaseHTTPRequestHandler], None]


class LocalServer:
    """Serves `routes` (path -> Reply or a handler function) and, for other paths, files from `root`."""

    def __init__(
        self,
        routes: Mapping[str, Reply | Handler] | None = None,
        *,
        root: Path | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.routes: dict[str, Reply | Handler] = dict(routes or {})
        self.root = root
        self.requests: list[SeenRequest] = []
        self.connections = 0
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self)

            do_HEAD = do_POST = do_GET

        class _Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # clients that hang up early are what several tests are about

            def get_request(self) -> tuple[socket.socket, object]:
                conn, address = super().get_request()
                server.connections += 1
                if ssl_context is not None:
                    conn = ssl_context.wrap_socket(conn, server_side=True)
                return conn, address

        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self.port = self._httpd.server_address[1]
        self.scheme = "https" if ssl_context else "http"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def paths_requested(self) -> list[str]:
        return [r.path for r in self.requests]

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        if length:
            handler.rfile.read(length)
        self.requests.append(SeenRequest(handler.command, handler.path, dict(handler.headers.items())))
        path = urlsplit(handler.path).path
        route = self.routes.get(handler.path, self.routes.get(path))
        if route is None and self.root is not None:
            route = self._static(path)
        if route is None:
            route = Reply(404, "<html><head><title>Not found</title></head><body>Nope</body></html>")
        if callable(route):
            route(handler)
        else:
            send(handler, route)

    def _static(self, path: str) -> Reply | None:
        assert self.root is not None
        target = (self.root / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file() or self.root.resolve() not in target.parents:
            return None
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if content_type.startswith("text/"):
            content_type += "; charset=utf-8"
        return Reply(200, target.read_bytes(), content_type=content_type)


def send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    body = reply.body.encode() if isinstance(reply.body, str) else reply.body
    handler.send_response(reply.status)
    headers = {"Content-Type": reply.content_type, "Content-Length": str(len(body)), **reply.headers}
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


@contextmanager
def serving(
    routes: Mapping[str, Reply | Handler] | None = None,
    *,
    root: Path | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Iterator[LocalServer]:
    server = LocalServer(routes, root=root, ssl_context=ssl_context).start()
    try:
        yield server
    finally:
        server.stop()


def guard_connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every socket connect; fail on any address but loopback, so no test reaches another machine."""
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        if isinstance(address, tuple):
            host = str(address[0]).split("%")[0]
            if not ipaddress.ip_address(host).is_loopback:
                raise AssertionError(f"a test tried to connect to {address}")
        return real_connect(sock, address)  # type: ignore[arg-type]

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        # Only names /etc/hosts answers: a test must not send DNS queries off the machine.
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name != "localhost" and not _is_ip(name):
            raise AssertionError(f"a test tried to resolve {name!r} through DNS")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return True


def tcp_attempts(attempts: list[object]) -> list[tuple[str, int]]:
    return [a for a in attempts if isinstance(a, tuple)]


# Faults ---------------------------------------------------------------------------------------------------


def reset_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close with a TCP RST instead of an answer."""
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    handler.connection.close()


def reset_mid_body(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    handler.wfile.write(b"<html><body>" + b"x" * 1000)
    handler.wfile.flush()
    reset_connection(handler)


def slow_headers(seconds: float) -> Handler:
    def handle(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        send(handler, Reply(200, "late"))

    return handle


def slow_drip(seconds: float, *, step: float = 0.1) -> Handler:
    """Answers at once, then sends a byte every `step` seconds: each read is quick, the whole is not."""

    def handle(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                handler.wfile.write(b"x")
                handler.wfile.flush()
                time.sleep(step)
        except OSError:
            pass
        handler.close_connection = True

    return handle


def endless_body(handler: BaseHTTPRequestHandler) -> None:
    """No Content-Length, and more bytes than any limit; stops when the client hangs up."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.end_headers()
    block = b"y" * 65536
    try:
        for _ in range(2000):  # bounded: 128 MB at most
            handler.wfile.write(block)
    except OSError:
        pass
    handler.close_connection = True


def gzip_bomb(decoded_mb: int) -> Reply:
    return Reply(
        200,
        gzip.compress(b"\0" * (decoded_mb * 1024 * 1024), compresslevel=9),
        headers={"Content-Encoding": "gzip"},
    )


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, "", headers={"Location": location})
