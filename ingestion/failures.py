"""Why pages fail, as stable codes people can read in lists and counts ("12 timeouts, 3 not found"), why pages
are skipped (left out on purpose: "30 too little text"), and what a source that indexed nothing should
say instead of "Nothing could be indexed"."""

from __future__ import annotations

from collections import Counter

from checked_http.errors import (
    BlockedAddressError,
    FetchError,
    RateLimitedError,
    TooLargeError,
    TransientFetchError,
)

# code -> (one, many), as counted in a sentence.
FAILURE_LABELS: dict[str, tuple[str, str]] = {
    "not_found": ("not found", "not found"),
    "gone": ("gone (410)", "gone (410)"),
    "refused": ("refused access", "refused access"),
    "http_error": ("other HTTP error", "other HTTP errors"),
    "server_error": ("server error", "server errors"),
    "timeout": ("timeout", "timeouts"),
    "dns": ("address lookup failure", "address lookup failures"),
    "unreachable": ("unreachable", "unreachable"),
    "rate_limited": ("rate-limited", "rate-limited"),
    "robots": ("disallowed by robots.txt", "disallowed by robots.txt"),
    "blocked": ("blocked address", "blocked addresses"),
    "redirect": ("redirect off the site", "redirects off the site"),
    "too_large": ("too large", "too large"),
    "dropped": ("without useful text", "without useful text"),
    "unreadable": ("unreadable file", "unreadable files"),
    "interrupted": ("interrupted", "interrupted"),
    "indexing": ("indexing failure", "indexing failures"),
    "cancelled": ("cancelled", "cancelled"),
    "other": ("other failure", "other failures"),
}


# A skipped page's reason (DroppedPage.SKIP_REASONS) -> (one, many), as counted in a sentence.
SKIP_LABELS: dict[str, tuple[str, str]] = {
    "too_short": ("too little text", "too little text"),
    "link_list": ("only a list of links", "only lists of links"),
    "search_page": ("a search page", "search pages"),
}


def skip_label(reason: str) -> str:
    """A skipped page's reason as people read it beside the page: "too little text"."""
    return SKIP_LABELS.get(reason, (reason.replace("_", " "), ""))[0]


def failure_class_of(exc: FetchError) -> str:
    """The code of a fetch failure, from its type, HTTP status and cause."""
    if isinstance(exc, RateLimitedError):
        return "rate_limited"
    if isinstance(exc, BlockedAddressError):
        return "blocked"
    if isinstance(exc, TooLargeError):
        return "too_large"
    status = exc.status
    if status == 404:
        return "not_found"
    if status == 410:
        return "gone"
    if status in (401, 403):
        return "refused"
    if status is not None and status >= 500:
        return "server_error"
    if status is not None and status >= 400:
        return "http_error"
    detail = f"{exc.message} {exc.detail}"
    if "DNS" in detail or "couldn't find this website" in detail:
        return "dns"
    if "Timeout" in detail or "took too long" in detail or "time limit" in detail:
        return "timeout"
    if "redirects to another website" in detail:
        return "redirect"
    if "robots.txt" in detail:
        return "robots"
    if isinstance(exc, TransientFetchError) or "couldn't reach" in detail:
        return "unreachable"
    return "other"


def counted(classes: Counter[str]) -> str:
    """ "12 timeouts, 3 not found", most frequent first."""
    parts = []
    for code, n in classes.most_common():
        one, many = FAILURE_LABELS.get(code or "other", FAILURE_LABELS["other"])
        parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts)


def counted_skips(reasons: Counter[str] | dict[str, int]) -> str:
    """ "30 too little text, 2 only lists of links", most frequent first."""
    parts = []
    for reason, n in Counter(reasons).most_common():
        if n:
            one, many = SKIP_LABELS.get(reason, (reason.replace("_", " "),) * 2)
            parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts)


def nothing_indexed(
    failed: list[tuple[str, str, str]], listing_error: str, unit: str = "page", skipped: int = 0
) -> tuple[str, str]:
    """(error, detail) for a source with nothing indexed. `failed` holds (failure class, error, detail) of
    its failed documents; `listing_error` is what its listing said, if it said anything; `skipped` is how
    many of its pages were skipped on purpose (the rest failed, so not "every page failed")."""
    if not failed:
        return (listing_error or f"Nothing could be indexed: the source listed no {unit}s."), ""
    classes = Counter(code or "other" for code, _, _ in failed)
    detail = failed[0][2]
    if skipped:
        plural = "s were" if skipped != 1 else " was"
        return f"Nothing could be indexed: {counted(classes)}; {skipped} {unit}{plural} skipped.", detail
    if len(failed) == 1:
        _, error, detail = failed[0]
        return error or "Nothing could be indexed.", detail
    if set(classes) == {"robots"}:
        return f"robots.txt disallows every {unit}.", detail
    return f"Every {unit} failed: {counted(classes)}.", detail
