"""Pages widget visitors land on: added by the widget (agents.services.queue_auto_source), crawled like a
web page, never offered in the "Add source" dialog."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ingestion.crawl.urls import is_tracking_param
from ingestion.kinds.url import UrlKind
from sources.models import Source


class AutoKind(UrlKind):
    name = "auto"
    label = "Visited page"
    add_label = None


def visited_page_url(url: str) -> str:
    """The page a visitor landed on, as one source: no fragment, no tracking parameters (the rest keep
    their order, since some sites route by query)."""
    parts = urlsplit(url)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if not is_tracking_param(key)
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, doseq=True), ""))


def visited_page_known(*, agent_id: int, url: str) -> bool:
    """Whether the agent already has this visited page (call within the workspace's scope)."""
    return Source.objects.filter(agent_id=agent_id, kind=AutoKind.name, config__url=url).exists()
