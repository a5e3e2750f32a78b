"""Work a view leaves for after its response: run when the server closes the response, once it is sent.

Every server Django runs under closes a response after sending it (a WSGI server calls `close()` on it,
Django's ASGI handler awaits it, the WSGI bridge of config/wsgi_bridge.py closes it while the loop sends
it), and the test client closes it before returning, so tests see the work done. Meant for writes that
make a later request faster and that no one waits for, such as storing a search in the search cache.

Django runs a response's closers from `HttpResponseBase.close()` and swallows their exceptions, so each
piece of work logs its own failure here. `_resource_closers` is Django's (private, since 3.0; the file
responses' handles are closed through it); tests/config/test_after_response.py checks it is still
honoured.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpResponseBase

log = logging.getLogger(__name__)


def after_response(response: HttpResponseBase, work: Callable[[], None]) -> None:
    """Run `work` when the response is closed, after it was sent."""

    def run() -> None:
        try:
            work()
        except Exception:
            log.exception("work after the response failed")

    # Django's own hook for work at close(): private, so django-stubs leave it out.
    response._resource_closers.append(run)  # type: ignore[attr-defined]
