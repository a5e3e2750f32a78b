"""One shape for every error the REST API answers: `{"error": {"code", "message", "fields"?, ...}}`.

`code` is stable and machine-readable (what a client branches on), `message` is written for people, and
`fields` names what to correct in a request (field -> messages, as DRF validation gives them). Rate and
quota refusals (429, 402) add `limit`, `usage` and `reset` (a Unix time), so a quota check can raise
`ApiError(402, "quota_exceeded", ..., limit=..., usage=..., reset=...)` and be answered the same way.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from sources.quotas import QuotaExceeded

log = logging.getLogger(__name__)

#: DRF's exception classes and the codes clients see for them.
CODES: dict[type[exceptions.APIException], str] = {
    exceptions.ValidationError: "invalid",
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
}
STATUS_CODES = {
    400: "invalid",
    401: "not_authenticated",
    402: "quota_exceeded",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "rate_limited",
    500: "server_error",
    502: "upstream_failed",
    503: "unavailable",
}
MESSAGES = {
    "invalid": "Some fields need correcting; see `fields`.",
    "not_found": "Not found.",
}


class ApiError(exceptions.APIException):
    """An error answered in the common shape. `extra` goes into the error object (limit, usage, reset,
    existing_id, ...); `headers` onto the response (Retry-After, RateLimit-*)."""

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        *,
        fields: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.fields = fields
        self.headers = headers or {}
        self.extra = extra


def quota_error(exc: QuotaExceeded) -> ApiError:
    """The plan refused (sources/quotas.py): 402 with the quota, its limit, the usage and the reset."""
    figures = exc.as_error()
    headers = {}
    if figures["reset"] is not None:
        headers["Retry-After"] = str(max(figures["reset"] - math.floor(time.time()), 0))
    code = "rate_limited" if exc.status == 429 else exc.code
    return ApiError(exc.status, code, exc.message, headers=headers, **figures)


def error_body(code: str, message: str, fields: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    error.update(extra)
    return {"error": error}


def error_response(
    status_code: int,
    code: str,
    message: str,
    *,
    fields: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    return Response(error_body(code, message, fields, **extra), status=status_code, headers=headers)


def invalid(fields: dict[str, list[str]], status_code: int = 400) -> Response:
    """A refusal by field (a kind's KindError, an upload over a limit), the message naming the first."""
    first = next(iter(fields.values()), [""])
    message = first[0] if isinstance(first, list) and first else MESSAGES["invalid"]
    code = "too_large" if status_code == 413 else "invalid"
    return error_response(status_code, code, str(message), fields=fields)


def _fields(detail: Any) -> dict[str, Any]:
    """DRF's validation detail as field -> messages; errors of the whole body go under `non_field_errors`."""
    if isinstance(detail, dict):
        return {str(k): _messages(v) for k, v in detail.items()}
    return {"non_field_errors": _messages(detail)}


def _messages(value: Any) -> Any:
    if isinstance(value, list):
        return [_messages(v) if isinstance(v, (dict, list)) else str(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _messages(v) for k, v in value.items()}
    return [str(value)]


def _first_message(fields: dict[str, Any]) -> str:
    for name, messages in fields.items():
        while isinstance(messages, (list, dict)) and messages:
            messages = messages[0] if isinstance(messages, list) else next(iter(messages.values()))
        if isinstance(messages, str) and messages:
            return messages if name == "non_field_errors" else f"{name}: {messages}"
    return MESSAGES["invalid"]


def request_error(exc: RequestDataTooBig | TooManyFieldsSent | TooManyFilesSent) -> ApiError:
    """Django's own refusals of a request body, raised while a view reads it. The body policy
    (config/body_limits.py) refuses oversized bodies before that, so these are a backstop."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        message = f"This request is larger than the {limit:,} bytes we read (DATA_UPLOAD_MAX_MEMORY_SIZE)."
        return ApiError(413, "too_large", message, limit=limit)
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        message = f"At most {limit} files in one request; send fewer at once."
        return ApiError(413, "too_large", message, fields={"file": [message]}, limit=limit)
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    message = f"At most {limit} form fields in one request."
    return ApiError(400, "invalid", message, fields={"non_field_errors": [message]})


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (it sets WWW-Authenticate and Retry-After), with every body in the common shape."""
    if isinstance(exc, QuotaExceeded):
        exc = quota_error(exc)
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)):
        exc = request_error(exc)
    if isinstance(exc, ApiError):
        body = error_body(exc.code, exc.message, exc.fields, **exc.extra)
        return Response(body, status=exc.status_code, headers=exc.headers)
    response = drf_exception_handler(exc, context)
    if response is None:
        # Not an API error: a bug. Answer in the shape clients parse, keep the trace for operators.
        log.exception("unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        return error_response(500, "server_error", "Something went wrong on our side; please try again.")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    code = next((c for cls, c in CODES.items() if isinstance(exc, cls)), None)
    if code is None:  # our own APIException subclasses name their code (e.g. invalid_visitor_token)
        own = getattr(exc, "default_code", "error")
        code = own if own != "error" else STATUS_CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ValidationError):
        fields = _fields(exc.detail)
        response.data = error_body(code, _first_message(fields), fields)
    elif isinstance(exc, exceptions.Throttled):
        # The throttle that refused put its figures on the request (sources/api/throttling.py).
        figures = getattr(context.get("request"), "rate_limit", None)
        extra = figures.as_error() if figures is not None else {}
        response.data = error_body(code, "Too many requests; slow down and retry after `reset`.", **extra)
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        message = str(detail) if not isinstance(detail, (list, dict)) else _first_message(_fields(detail))
        response.data = error_body(code, message)
    return response


def json_error_view(status_code: int, code: str, message: str):  # type: ignore[no-untyped-def]
    """Django's 404/500 handlers for URLs under /api/: JSON in the common shape, HTML elsewhere."""
    from django.views import defaults

    def view(request: HttpRequest, exception: Exception | None = None) -> Any:
        if request.path.startswith("/api/"):
            return JsonResponse(error_body(code, message), status=status_code)
        if status_code == status.HTTP_404_NOT_FOUND:
            return defaults.page_not_found(request, exception)
        return defaults.server_error(request)

    return view
