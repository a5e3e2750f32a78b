"""One request-body policy for the REST API: each endpoint's largest body, from README's limits, and a 413 in
the API's error shape (`too_large`, the limit named in the message and in bytes as `limit`) beyond it.

- `PUT .../documents/{id}`, `POST .../documents:batch`: `PUSH_MAX_REQUEST_BYTES` (32 MB);
- `POST /sources` with JSON: `TEXT_SOURCE_MAX_CHARS` x `BYTES_PER_CHAR`, and `ENVELOPE_BYTES`;
- `POST /sources` with files: `UPLOAD_MAX_FILES_PER_REQUEST` x `UPLOAD_MAX_FILE_BYTES`, and `ENVELOPE_BYTES`;
- any other: `API_MAX_REQUEST_BYTES` (2.5 MB); the widget's views hold theirs lower
  (`WIDGET_MAX_REQUEST_BYTES`) and answer every over-limit body themselves (`answers_body_limit`), so the
  413 carries the CORS headers without which the widget's page could not read it.

A limit in characters becomes one in bytes at 12 bytes a character: UTF-8 takes at most 4, but JSON may
spell a character as `\\u20ac` (6 bytes) and one outside the Basic Multilingual Plane as a surrogate pair,
`\\ud83d\\ude00` (12); Python's `json` and `requests` escape everything outside ASCII by default. So every
text within its limit in characters is accepted however it is sent. A documents API request is held to its
own limit in bytes (README): 32 MB carries a 4,000,000-character HTML document in UTF-8 or `\\uXXXX`-escaped.

The check runs before anything reads the body (authentication, Django's DATA_UPLOAD_MAX_MEMORY_SIZE, a
parser), on the declared Content-Length. A body that is left unread (one over its limit, or a request refused
before its view read it: 401, 404, 402) is read to its end and dropped before the answer goes out: a server
that answers and closes while the client is still sending leaves it a broken pipe instead of the answer.
Bodies over DRAIN_MAX_BYTES are not read (that would hand a worker thread to whoever sends the most): the
server closes the connection after the answer, and such a client may see it reset. Requests served by
Django's ASGI handler (the chat, config/routing.py) have been read whole before any middleware runs, so
they are only checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.urls import Resolver404, resolve

from sources.api.errors import error_body

API_PREFIX = "/api/"
#: The most bytes a character of limited text may take in a request (see above); also the most a form
#: spends on one (a percent-encoded 4-byte character), which the web UI's paste form relies on.
BYTES_PER_CHAR = 12
#: What a request may carry beside its limited text or files: title, audiences, metadata, form fields.
ENVELOPE_BYTES = 1024 * 1024
#: Over-limit bodies up to this size are read to their end before the 413; larger ones are not.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
DRAIN_CHUNK_BYTES = 64 * 1024
PUSH_ROUTES = frozenset({"agent-document", "agent-document-batch"})


@dataclass(frozen=True)
class BodyLimit:
    bytes: int
    setting: str  # what an operator changes to move it
    advice: str  # what the client can do instead


def body_limit(url_name: str | None, content_type: str) -> BodyLimit:
    """The largest body an API endpoint accepts, by its route's name."""
    if url_name in PUSH_ROUTES:
        return BodyLimit(
            settings.PUSH_MAX_REQUEST_BYTES,
            "PUSH_MAX_REQUEST_BYTES",
            "Send fewer documents at once, or split a large document.",
        )
    if url_name == "source-list" and content_type.startswith("multipart/"):
        return BodyLimit(
            settings.UPLOAD_MAX_FILE_BYTES * settings.UPLOAD_MAX_FILES_PER_REQUEST + ENVELOPE_BYTES,
            "UPLOAD_MAX_FILE_BYTES x UPLOAD_MAX_FILES_PER_REQUEST",
            "Upload fewer files at once.",
        )
    if url_name == "source-list":
        return BodyLimit(
            settings.TEXT_SOURCE_MAX_CHARS * BYTES_PER_CHAR + ENVELOPE_BYTES,
            "TEXT_SOURCE_MAX_CHARS",
            f"Pasted text is at most {settings.TEXT_SOURCE_MAX_CHARS:,} characters; "
            "upload a larger text as a file.",
        )
    return BodyLimit(settings.API_MAX_REQUEST_BYTES, "API_MAX_REQUEST_BYTES", "Send a smaller request.")


def content_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # as Django reads it: no body


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MB"


def refusal_message(limit: BodyLimit, size: int) -> str:
    return (
        f"This request is {megabytes(size)} ({size:,} bytes); this endpoint accepts at most "
        f"{megabytes(limit.bytes)} ({limit.bytes:,} bytes, {limit.setting}). {limit.advice}"
    )


def refusal(limit: BodyLimit, size: int) -> JsonResponse:
    return JsonResponse(error_body("too_large", refusal_message(limit, size), limit=limit.bytes), status=413)


def drain(request: HttpRequest, size: int) -> None:
    """Read what is left of the body, so the client finishes sending and reads the answer. A body read
    whole (`request.body`, a JSON parser) is kept in `_body`; a form parser reads the stream to its end."""
    if size > DRAIN_MAX_BYTES or hasattr(request, "_body"):
        return
    try:
        while request.read(DRAIN_CHUNK_BYTES):
            pass
    except UnreadablePostError:  # the client went away
        pass


class RequestBodyLimitMiddleware:
    """413 for an API request whose body is over its endpoint's limit (see above), and every body left
    unread read to its end before the answer."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        refused = self._over_limit(request)
        response = self.get_response(request) if refused is None else refused
        drain(request, content_length(request))
        return response

    async def _acall(self, request: HttpRequest) -> Any:
        refused = self._over_limit(request)  # the ASGI handler has read the body already
        return refused if refused is not None else await self.get_response(request)

    @staticmethod
    def _over_limit(request: HttpRequest) -> HttpResponse | None:
        size = content_length(request)
        if not size or not request.path.startswith(API_PREFIX):
            return None
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return None  # answered 404 by the handler
        if getattr(getattr(match.func, "view_class", None), "answers_body_limit", False):
            return None  # the view refuses it itself (the widget's, with its CORS headers)
        limit = body_limit(match.url_name, request.META.get("CONTENT_TYPE", ""))
        if size <= limit.bytes:
            return None
        request.resolver_match = match  # the request metrics label the refusal with its route
        return refusal(limit, size)
