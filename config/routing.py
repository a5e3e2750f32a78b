"""Which of Django's two handlers serves a request under the ASGI server (config/asgi.py builds the app).

Views marked `served_async` (config/streaming.py) go to Django's ASGI handler; everything else to Django's
WSGI handler on a fixed thread pool (a2wsgi's, config/wsgi_bridge.py), whose threads keep their database
connections.

Django's ASGI handler runs each request's view in a thread of its own, and each such thread opens its own
database connection: a burst of 300 chats would ask PostgreSQL for 300 at once (it refused past its
max_connections, and the chats got 500s). So at most `starts` requests per process run their view at once;
the rest wait on the event loop, holding nothing. A slot is given back when the response starts: a stream
then goes on in config/streaming.py's bounded pool (STREAM_THREADS), with no connection between steps.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished
from django.db import connections
from django.urls import Resolver404, get_resolver

from config.wsgi_bridge import BufferedWSGIMiddleware


def served_async(path: str) -> bool:
    """Whether the view at this path is marked to run on Django's ASGI handler."""
    try:
        view = get_resolver().resolve(path).func
    except Resolver404:
        return False
    view_class = getattr(view, "view_class", None)
    return bool(getattr(view, "served_async", False) or getattr(view_class, "served_async", False))


def close_request_connections(sender: Any, **_kwargs: Any) -> None:
    """On request_finished: a request that Django's ASGI handler served ran in a thread of its own, which
    ends with it (the handler closes the response in that thread), so its connections are closed now
    rather than left to outlive the thread until garbage collection. WSGI requests keep theirs."""
    if isinstance(sender, type) and issubclass(sender, ASGIHandler):
        connections.close_all()


class Router:
    def __init__(self, *, asgi: Any, wsgi: Any, threads: int, starts: int) -> None:
        self.asgi = asgi
        self.wsgi = BufferedWSGIMiddleware(wsgi, workers=threads)
        self.starts = starts
        self._slots: asyncio.Semaphore | None = None  # made on the server's event loop, at first use
        request_finished.connect(close_request_connections, dispatch_uid="config.routing.close_connections")
        get_resolver().url_patterns  # noqa: B018 - imports every view now, not on the event loop's first request

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.asgi(scope, receive, send)
        elif not served_async(_path_info(scope)):
            await self.wsgi(scope, receive, send)
        else:
            await self._bounded(scope, receive, send)

    async def _bounded(self, scope: dict, receive: Any, send: Any) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.starts)
        slots = self._slots
        await slots.acquire()
        held = True

        async def send_and_free(message: dict) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                slots.release()
            await send(message)

        try:
            await self.asgi(scope, receive, send_and_free)
        finally:
            if held:
                slots.release()


def _path_info(scope: dict) -> str:
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path
