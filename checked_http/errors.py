"""Why a fetch failed, sorted by what a retry can do about it.

Every error carries `message`, written for the person who added the source, and `detail`, the raw cause for
operators. Catch `TransientFetchError` to retry (it includes `RateLimitedError`, which also says how long to
wait) and `PermanentFetchError` to give up and show the message.
"""

from __future__ import annotations

import email.utils
import time


class FetchError(Exception):
    def __init__(self, message: str, detail: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message
        self.status = status

    def __str__(self) -> str:
        return f"{self.message} ({self.detail})" if self.detail != self.message else self.message


class PermanentFetchError(FetchError):
    """Retrying won't help: the address, the page or the site's answer has to change first."""


class BlockedAddressError(PermanentFetchError):
    """The address is on a private network or a metadata service; nothing was sent to it."""


class TooLargeError(PermanentFetchError):
    """The body passed a size limit, on the wire or once decompressed."""


class TransientFetchError(FetchError):
    """Worth retrying later: timeouts, resets, server errors."""

    def __init__(
        self, message: str, detail: str = "", *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, detail, status=status)
        self.retry_after_s = retry_after_s


class RateLimitedError(TransientFetchError):
    """The site asked us to slow down. `retry_after_s`: its Retry-After in seconds, None if it gave none."""

    def __init__(self, retry_after_s: float | None, detail: str = "", *, status: int | None = 429) -> None:
        super().__init__(
            "The site is rate-limiting us; we'll retry automatically.",
            detail,
            status=status,
            retry_after_s=retry_after_s,
        )


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After as seconds from now, from delta-seconds or an HTTP-date. None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_STATUS_MESSAGES = {
    400: "The site rejected our request for this page (HTTP 400).",
    401: "This page needs a login, so we can't fetch it.",
    403: "The site refused us access to this page (HTTP 403).",
    404: "This page doesn't exist (the site answered 404). Check the address.",
    410: "This page has been removed from the site (HTTP 410).",
    451: "The site says this page is unavailable for legal reasons (HTTP 451).",
}


def error_for_status(status: int, url: str, retry_after: str | None, body_start: bytes) -> FetchError:
    """The error an HTTP error status means for us."""
    detail = f"HTTP {status} from {url}"
    if body_start:
        detail += f"; body starts {body_start[:200]!r}"
    if status == 429 or (status == 503 and b"too many requests" in body_start.lower()):
        return RateLimitedError(parse_retry_after(retry_after), detail, status=status)
    if status >= 500 or status == 408:
        return TransientFetchError(
            f"The site had a temporary problem (HTTP {status}); we'll retry automatically.",
            detail,
            status=status,
            retry_after_s=parse_retry_after(retry_after),
        )
    message = _STATUS_MESSAGES.get(status, f"The site couldn't give us this page (HTTP {status}).")
    return PermanentFetchError(message, detail, status=status)
