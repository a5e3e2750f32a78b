"""Serving a synchronous event generator (a chat turn) as an ASGI stream.

Under ASGI, Django buffers a sync iterator whole before sending it, so the chat stream hands Django this async
iterator instead. Each step of the generator (up to its next event) runs in a shared, bounded thread pool
(STREAM_THREADS), and the stream waits on the event loop in between: an open stream holds no thread while it
waits for the client, between events, or while it is queued, only while its turn computes (retrieval, the
extractive answer) or reads the model's next tokens. One web process therefore holds as many open streams as
it has sockets, with at most STREAM_THREADS of them working at once.

All steps of one stream run in one `contextvars.Context`, so the workspace scope and the request id the turn
sets in one step are still there in the next, whichever pool thread runs it. The pool's threads live as long
as the process, so with persistent connections (DATABASE_CONN_MAX_AGE > 0, what config/asgi.py sets) each
keeps its own, checked before each step as Django checks a request's: a connection per step forked a
PostgreSQL backend each time, which under a burst of 300 chats took the cores that answer them. With
DATABASE_CONN_MAX_AGE=0 (a pooled connection per request) a step gives its connection back when it ends.

event_stream_response sends a turn's events as Server-Sent Events, for the widget's API and the admin's
preview alike.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from django.conf import settings
from django.db import connections
from django.http import StreamingHttpResponse

from config.pool_threads import LazyPool, connection_checked

log = logging.getLogger(__name__)
_END = object()
View = TypeVar("View", bound=Callable | type)


def served_async(view: View) -> View:
    """Marks a view (function or class) that streams or waits on a model: config/asgi.py serves it on
    Django's ASGI handler, where a stream waits on the event loop, instead of the fixed thread pool that
    serves every other view."""
    view.served_async = True  # type: ignore[union-attr]
    return view


pool = LazyPool(lambda: settings.STREAM_THREADS, "stream")


def _step(iterator: Iterator[bytes]) -> object:
    with connection_checked():  # past its age or broken: replaced, as at the start of a request
        return next(iterator, _END)


def _close(iterator: Iterator[bytes]) -> None:
    close = getattr(iterator, "close", None)
    try:
        if close is not None:
            close()  # runs the turn's `finally` blocks (e.g. leaving the workspace scope)
    except ValueError:
        pass  # still running its last step in another thread; it is collected when that ends
    finally:
        connections.close_all()


def stream_async(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Called by the view, in its request thread: the request's own database connection goes back to the pool
    now rather than when the stream ends, so open streams do not each hold one."""
    connections.close_all()
    return _stream(chunks)


async def _stream(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    iterator = iter(chunks)
    finished = False
    try:
        while True:
            chunk = await loop.run_in_executor(pool(), context.run, _step, iterator)
            if chunk is _END:
                finished = True
                return
            yield chunk  # type: ignore[misc]
    finally:
        if not finished:  # the client went away mid-stream: end the turn without waiting for it
            pool().submit(context.run, _close, iterator)


def sse(events: Iterator[dict]) -> Iterator[bytes]:
    """Server-Sent Events; an unexpected failure still ends the stream with an error event."""
    try:
        for event in events:
            yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
    except Exception:
        log.exception("chat stream failed")
        failure = {"type": "error", "message": "Something went wrong; please try again."}
        yield f"event: error\ndata: {json.dumps(failure)}\n\n".encode()


def event_stream_response(events: Iterator[dict], *, asgi: bool = False) -> StreamingHttpResponse:
    # Under ASGI an async iterator: the stream waits on the event loop, not in a thread (stream_async above).
    content = stream_async(sse(events)) if asgi else sse(events)
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # let nginx-style proxies pass events through at once
    return response
