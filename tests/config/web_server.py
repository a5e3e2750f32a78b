"""Helpers for tests and benchmarks that need the real web server: gunicorn started from config/gunicorn.py
(ASGI with uvicorn workers, or the old gthread WSGI server), a slow OpenAI-compatible model on 127.0.0.1,
concurrent SSE clients, and the server's memory."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class SlowModel:
    base_url: str = ""
    tokens: int = 50
    rate: float = 20.0  # tokens per second
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _BigBacklogServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of streams connect at once


@contextmanager
def slow_model(tokens: int = 50, rate: float = 20.0) -> Iterator[SlowModel]:
    """An OpenAI-compatible /chat/completions that streams `tokens` words at `rate` per second."""
    model = SlowModel(tokens=tokens, rate=rate)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with model.lock:
                model.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(model.tokens):
                time.sleep(1.0 / model.rate)
                chunk = {"choices": [{"index": 0, "delta": {"content": f"word{i} "}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    server = _BigBacklogServer(("127.0.0.1", 0), Handler)
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class WebServer:
    url: str
    process: subprocess.Popen

    def rss_bytes(self) -> int:
        """Resident memory of the gunicorn master and its workers."""
        pids = {self.process.pid}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if parent == self.process.pid:
                    pids.add(int(entry.name))
        total = 0
        for pid in pids:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total


@contextmanager
def web_server(
    *, test_run_id: str, database_url: str, server: str = "asgi", **env: str
) -> Iterator[WebServer]:
    """gunicorn as the image runs it (`server="asgi"`), or today's threaded WSGI server (`"gthread"`)."""
    port = free_port()
    # The deployment's own settings (connection pool included), on the test session's database and Redis
    # databases, with its key prefix, so nothing it writes is seen by another session.
    from django.conf import settings

    redis_server = settings.REDIS_URL.rsplit("/", 1)[0]
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DJANGO_DEBUG": "false",
        "DATABASE_URL": database_url,
        "REDIS_URL": f"{redis_server}/15",
        "CELERY_BROKER_URL": f"{redis_server}/14",
        "REDIS_KEY_PREFIX": settings.REDIS_KEY_PREFIX,
        "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",  # the fake model runs on loopback
        "WEB_BIND_HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "WARNING",
        **env,
    }
    app = "config.asgi:application"
    if server == "gthread":
        environment["WEB_WORKER_CLASS"] = "gthread"
        app = "config.wsgi:application"
    log_path = ROOT / ".local" / f"test-web-{test_run_id}-{server}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", app, "-c", "config/gunicorn.py"],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited; see {log_path}")
            try:
                if httpx.get(f"{url}/healthz", headers={"Host": "localhost"}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer within 90 s; see {log_path}")
            time.sleep(0.3)
        yield WebServer(url=url, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@dataclass
class StreamResult:
    status: int
    first_event_s: float | None = None
    done_s: float | None = None
    events: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def completed(self) -> bool:
        return self.status == 200 and bool(self.events) and self.events[-1] == "done"


async def chat_stream(
    client: httpx.AsyncClient, url: str, message: str, *, origin: str, address: str
) -> StreamResult:
    started = time.perf_counter()
    headers = {"Origin": origin, "X-Real-IP": address, "Host": "localhost"}
    try:
        async with client.stream("POST", url, json={"message": message}, headers=headers) as response:
            result = StreamResult(status=response.status_code)
            if response.status_code != 200:
                await response.aread()
                return result
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    if result.first_event_s is None:
                        result.first_event_s = time.perf_counter() - started
                    result.events.append(line[7:])
            result.done_s = time.perf_counter() - started
            return result
    except httpx.HTTPError as exc:
        return StreamResult(status=0, error=f"{type(exc).__name__}: {exc}")


async def many_streams(url: str, count: int, *, origin: str, addresses: list[str]) -> list[StreamResult]:
    limits = httpx.Limits(max_connections=count + 50, max_keepalive_connections=0)
    timeout = httpx.Timeout(300.0, connect=60.0)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        return await asyncio.gather(
            *(
                chat_stream(client, url, f"How long do I have to return item {i}?", origin=origin, address=a)
                for i, a in zip(range(count), addresses, strict=True)
            )
        )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def send_whole(
    base_url: str, method: str, path: str, body: bytes, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """Send the request to its last byte, then read the answer: status, headers (lower-cased names) and body.
    A server that answers and closes before it has read the body makes sendall fail (EPIPE / ECONNRESET)
    once the socket buffers are full. Header names may be given with underscores for dashes."""
    address = urlsplit(base_url)
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: localhost",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection((address.hostname, address.port), timeout=60) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, content = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
    if parsed.get("transfer-encoding") == "chunked":
        content = _dechunk(content)
    return int(status_line.split(" ", 2)[1]), parsed, content


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out
