"""The sources list's search, filters, sort and pages: read from the query string, and shaped for the
toolbar and the pager."""

from __future__ import annotations

from typing import Any

from ingestion.kinds.registry import get_kind

SORT_LABELS = {
    "newest": "Newest first",
    "oldest": "Oldest first",
    "title": "Title A to Z",
    "updated": "Recently updated",
    "chunks": "Most chunks",
}
STATUS_FILTER_LABELS = {"active": "In progress", "done": "Ready", "failed": "Failed"}


def source_listing(query: Any) -> dict[str, Any]:
    """The list's parameters from a query string (request.GET), with anything unknown dropped."""
    try:
        page = max(1, int(query.get("page", 1)))
    except (TypeError, ValueError):
        page = 1
    status = query.get("status", "")
    sort = query.get("sort", "newest")
    return {
        "q": str(query.get("q", ""))[:200].strip(),
        "kind": str(query.get("kind", ""))[:50],
        "status": status if status in STATUS_FILTER_LABELS else "",
        "sort": sort if sort in SORT_LABELS else "newest",
        "page": page,
    }


def listing_context(listing: dict[str, Any], found: Any, *, kinds: list[str]) -> dict[str, Any]:
    """What the toolbar and pager show, and the query strings their links carry."""
    from urllib.parse import urlencode

    kept = {k: v for k, v in listing.items() if v and k != "page" and not (k == "sort" and v == "newest")}

    def query(page: int) -> str:
        return "?" + urlencode({**kept, **({"page": page} if page > 1 else {})})

    first = (found.page - 1) * found.per_page + 1 if found.matched else 0
    last = first + len(found.sources) - 1 if found.matched else 0
    return {
        **listing,
        "filtered": bool(listing["q"] or listing["kind"] or listing["status"]),
        "matched": found.matched,
        "page": found.page,
        "pages": found.pages,
        "first": first,
        "last": last,
        "matched_label": f"{first}\u2013{last} of {found.matched}" if found.matched else "None match",
        "previous": query(found.page - 1) if found.page > 1 else "",
        "next": query(found.page + 1) if found.page < found.pages else "",
        "query": query(found.page),
        "kinds": [{"name": name, "label": get_kind(name).label} for name in kinds],
        "statuses": list(STATUS_FILTER_LABELS.items()),
        "sorts": list(SORT_LABELS.items()),
    }
