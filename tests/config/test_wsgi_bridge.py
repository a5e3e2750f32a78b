"""Django's WSGI handler under the ASGI server (config/wsgi_bridge.py): an ordinary response is sent from
the event loop once the app has returned; a streaming one as it comes."""

from __future__ import annotations

import asyncio
import threading

from config.wsgi_bridge import BufferedWSGIMiddleware

SCOPE = {
    "type": "http",
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/echo",
    "raw_path": b"/echo",
    "query_string": b"a=1",
    "root_path": "",
    "headers": [(b"host", b"testserver"), (b"content-type", b"text/plain")],
    "client": ("127.0.0.1", 5000),
    "server": ("127.0.0.1", 8000),
}


def serve(app, body: bytes = b"", on_send=None) -> list[dict]:
    sent: list[dict] = []

    async def run() -> None:
        requests = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            return requests.pop(0) if requests else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)
            if on_send:
                on_send(message)

        await BufferedWSGIMiddleware(app, workers=2)(SCOPE, receive, send)

    asyncio.run(run())
    return sent


def test_an_ordinary_response_is_sent_whole_after_the_app_returns():
    finished = []

    def app(environ, start_response):
        payload = environ["wsgi.input"].read()
        start_response("201 Created", [("Content-Type", "text/plain"), ("X-Query", environ["QUERY_STRING"])])
        yield b"echo: "
        yield payload
        finished.append(True)

    sent = serve(app, b"hello", on_send=lambda message: assert_finished(finished))
    assert sent == [
        {
            "type": "http.response.start",
            "status": 201,
            "headers": [(b"content-type", b"text/plain"), (b"x-query", b"a=1")],
        },
        {"type": "http.response.body", "body": b"echo: hello"},
    ]


def assert_finished(finished: list) -> None:
    assert finished, "a message was sent while the app was still running"


class Streaming(list):
    """What Django's WSGI handler returns for a StreamingHttpResponse: an iterable marked `streaming`."""

    streaming = True

    def __init__(self, chunks) -> None:
        super().__init__()
        self.chunks = chunks

    def __iter__(self):
        return iter(self.chunks)


def test_a_streaming_response_reaches_the_client_while_the_app_still_runs():
    streamed = threading.Event()

    def events():
        yield b"data: first\n\n"
        # The first event must reach the client before the next is made (an event stream, a download).
        assert streamed.wait(timeout=10)
        yield b"data: second\n\n"

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        return Streaming(events())

    def on_send(message):
        if message["type"] == "http.response.body" and message["body"]:
            streamed.set()

    sent = serve(app, on_send=on_send)
    assert sent[0] == {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"text/event-stream")],
    }
    assert [m["body"] for m in sent[1:]] == [b"data: first\n\n", b"data: second\n\n", b""]


def test_a_response_without_a_body_still_ends():
    def app(environ, start_response):
        start_response("204 No Content", [])
        return []

    assert serve(app) == [
        {"type": "http.response.start", "status": 204, "headers": []},
        {"type": "http.response.body", "body": b""},
    ]


def test_an_ordinary_response_is_sent_while_the_thread_closes_it():
    """What runs on close (config/after_response.py) is not on the client's time: the response reaches the
    client while its close still waits (a close that had to finish first would wait forever here)."""
    body_sent = threading.Event()
    closed = []

    class Closing(list):
        def close(self) -> None:
            closed.append(body_sent.wait(timeout=10))

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Closing([b"done"])

    def on_send(message):
        if message["type"] == "http.response.body":
            body_sent.set()

    sent = serve(app, on_send=on_send)
    assert closed == [True]
    assert sent[-1] == {"type": "http.response.body", "body": b"done"}


def test_a_close_that_fails_after_the_response_is_out_leaves_the_response_whole(caplog):
    class Failing(list):
        def close(self) -> None:
            raise RuntimeError("closing failed")

    def app(environ, start_response):
        start_response("200 OK", [])
        return Failing([b"kept"])

    assert serve(app)[-1] == {"type": "http.response.body", "body": b"kept"}
    assert "closing a response after it was handed to the loop failed" in caplog.text
