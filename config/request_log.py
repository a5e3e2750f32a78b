"""The request log's middleware, and the one answer to "which address is this client"."""

from __future__ import annotations

from typing import Any

import structlog
from django.conf import settings
from django_structlog.middlewares import RequestMiddleware


def client_address(request: Any) -> str:
    """The client's address. Behind a proxy, the deployment sets TRUSTED_PROXY_HEADER (e.g. HTTP_X_REAL_IP)
    to the header its proxy sets; a client cannot choose its own address otherwise."""
    header = getattr(settings, "TRUSTED_PROXY_HEADER", "")
    return (request.META.get(header) if header else None) or request.META.get("REMOTE_ADDR", "unknown")


class RequestLogMiddleware(RequestMiddleware):
    """django-structlog's request lines, with the address the rate limits use. Its own (ipware) believes
    whatever X-Forwarded-For a client sends, so a log could name an address of the client's choosing,
    and it was a visible share of a cached search (docs/BENCHMARKS.md)."""

    @classmethod
    def bind_ip(cls, request: Any) -> None:
        structlog.contextvars.bind_contextvars(ip=client_address(request))
