"""How much of a listing the workspace's plan admits: new pages up to the documents quota, and (for a
crawl) fetches up to today's crawl pages. What is left out is said in the source's notice (and in its
state, for code), never dropped silently; pages already indexed but not fetched again today keep their
content. A connector's sync (integrations.sync) is admitted here too, for its documents only: it calls the
provider's API, not the web, and its kinds don't fetch pages (no crawl pages are checked at creation)."""

from __future__ import annotations

from dataclasses import dataclass

from sources import quotas
from sources.models import Source
from sources.plans import plan_for


@dataclass(frozen=True)
class Admission:
    new_urls: list[str]  # the new pages (a connector: object ids) to store and fetch
    refetch: int  # how many known pages may be fetched again (the first ones in listing order)
    notice: str
    stopped: dict  # quota -> how many pages it left out


def admit_pages(*, source: Source, new_urls: list[str], refetch: int, crawl: bool = True) -> Admission:
    """Called inside the fan-out's transaction: the crawl pages taken here are given back if it rolls back.
    `refetch` counts every known page the sync would fetch again (a feed's re-checked items included);
    `crawl=False` (a connector) meters no crawl pages and admits every refetch."""
    workspace = source.workspace
    stopped: dict[str, int] = {}
    notices = []
    room = quotas.room(workspace, "documents")
    if room is not None and len(new_urls) > room:
        stopped["documents"] = len(new_urls) - room
        limit = quotas.limit_of(plan_for(workspace), "documents")
        notices.append(
            f"Stopped at the plan's limit of {limit:,} pages and documents: {stopped['documents']:,} "
            f"listed page{'s' if stopped['documents'] != 1 else ''} not added."
        )
        new_urls = new_urls[:room]
    if not crawl:
        return Admission(new_urls, refetch, " ".join(notices), stopped)
    wanted = len(new_urls) + refetch
    granted = quotas.take_up_to(workspace, "crawl_pages", wanted)
    if granted < wanted:
        # New pages first: they have nothing indexed yet, while a known page keeps what it had.
        kept_new = new_urls[:granted]
        kept_refetch = max(granted - len(kept_new), 0)
        left_out = wanted - granted
        stopped["crawl_pages"] = left_out
        limit = quotas.limit_of(plan_for(workspace), "crawl_pages")
        notices.append(
            f"The plan's {limit:,} crawl pages per day are used up: {left_out:,} page"
            f"{'s' if left_out != 1 else ''} not fetched today; recrawl after midnight (UTC), or let "
            "the source's schedule do it."
        )
        new_urls, refetch = kept_new, kept_refetch
    return Admission(new_urls, refetch, " ".join(notices), stopped)
