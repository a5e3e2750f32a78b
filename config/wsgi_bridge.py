"""Django's WSGI handler under the ASGI server, answering from the event loop (config/routing.py uses it).

a2wsgi runs the WSGI app on its thread pool and hands every piece of the response to the event loop as it
comes: the status and headers, each body chunk, the end. Each hand-off is a blocking round trip from the
thread to the loop and back (two thread wake-ups), three for an ordinary response. py-spy put a search
thread waiting on them for about half of the time it held a request. Here the thread collects an ordinary
response (Django's HttpResponse: its content is in memory already) and the loop sends it once the app has
returned: one hand-off, when the thread's work is done. A streaming response (a file, an event stream:
Django marks them `streaming`) is sent as it comes, as a2wsgi does.

The hand-off does not wait for the loop: the response is being sent while the thread closes it, so what
runs on close (Django's request_finished, and work a view left for after its response:
config/after_response.py) is not on the client's time.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from a2wsgi.asgi_typing import HTTPResponseStartEvent
from a2wsgi.wsgi import Body, WSGIMiddleware, WSGIResponder, build_environ
from a2wsgi.wsgi_typing import Environ

log = logging.getLogger(__name__)


class BufferedWSGIMiddleware(WSGIMiddleware):
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        responder = BufferedResponder(self.app, self.executor, self.send_queue_size)
        return await responder(scope, receive, send)


class BufferedResponder(WSGIResponder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start: HTTPResponseStartEvent | None = None
        self.chunks: list[bytes] = []
        self.streaming = False
        self.handed_over = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        environ = build_environ(scope, Body(self.loop, receive))
        sender = self.loop.create_task(self.sender(send))
        try:
            context = contextvars.copy_context()
            await self.loop.run_in_executor(
                self.executor, context.run, self.wsgi, environ, self.start_response
            )
            if not self.handed_over:  # streamed, or the app failed before its response was whole
                await self.send_queue.put(None)
            await sender
            if self.exc_info is not None:
                raise self.exc_info[0].with_traceback(self.exc_info[1], self.exc_info[2])
        finally:
            if not sender.done():
                sender.cancel()

    def _hand_over(self) -> None:
        """On the loop: the whole response, in order, then the end. The queue is empty (nothing else is
        sent for an ordinary response) and holds a2wsgi's send_queue_size (10) messages."""
        if self.start is not None:
            self.send_queue.put_nowait(self.start)
        self.send_queue.put_nowait({"type": "http.response.body", "body": b"".join(self.chunks)})
        self.send_queue.put_nowait(None)

    # In the app's thread from here on.

    def start_response(self, status: str, response_headers: list, exc_info: Any = None) -> Any:
        self.exc_info = exc_info
        if self.start is None:
            code, _ = status.split(" ", 1)
            headers = [
                (name.strip().encode("latin1").lower(), value.strip().encode("latin1"))
                for name, value in response_headers
            ]
            self.start = {"type": "http.response.start", "status": int(code), "headers": headers}
        return self._body

    def _body(self, chunk: bytes) -> None:
        if self.streaming:
            self.send({"type": "http.response.body", "body": chunk, "more_body": True})
        else:
            self.chunks.append(chunk)

    def wsgi(self, environ: Environ, start_response: Any) -> None:
        iterable = self.app(environ, start_response)
        try:
            if getattr(iterable, "streaming", False):  # Django's StreamingHttpResponse, FileResponse
                self.streaming = True
                if self.start is not None:
                    self.send(self.start)
            for chunk in iterable:
                self._body(chunk)
            if self.streaming:
                self.send({"type": "http.response.body", "body": b""})
            else:
                self.handed_over = True
                self.loop.call_soon_threadsafe(self._hand_over)  # sent while this thread closes it
        finally:
            close = getattr(iterable, "close", lambda: None)
            if not self.handed_over:
                close()
            else:  # the response is out: a failure to close it is the server's to log, not the client's
                try:
                    close()
                except Exception:
                    log.exception("closing a response after it was handed to the loop failed")
