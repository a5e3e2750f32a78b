"""Pages widget visitors land on: added by the widget (agents.services.queue_auto_source), crawled like a
web page, never offered in the "Add source" dialog."""

from __future__ import annotations

from ingestion.kinds.url import UrlKind
from sources.models import Source


class AutoKind(UrlKind):
    name = "auto"
    label = "Visited page"
    add_label = None


def visited_page_known(*, agent_id: int, url: str) -> bool:
    """Whether the agent already has this visited page (call within the workspace's scope)."""
    return Source.objects.filter(agent_id=agent_id, kind=AutoKind.name, config__url=url).exists()
