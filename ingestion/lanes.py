"""Fair work across workspaces: which lane a source's jobs are published in.

Measured before (issue #14): a one-paragraph text source waited 36 s behind another workspace's 769-page
crawl, because both queues were first come, first served and the index worker was busy with the crawl's
batches (~100 pages, tens of seconds of embedding each). Two lanes fix it without slowing the crawl:

- small, interactive work (a source of at most INGESTION_SMALL_SOURCE_PAGES pages, from a workspace with at
  most INGESTION_INTERACTIVE_MAX_ACTIVE sources in progress) goes to the `interactive` queue, which every
  worker consumes besides its own; the crawl worker, whose jobs last a second, picks it up between pages
  instead of it waiting for the index worker's current batch;
- bulk work (every job of a big source) is published at a lower priority (BULK_PRIORITY) in its usual queue.
  The Redis transport pops priorities strictly in order across a worker's queues, so a worker always takes
  waiting interactive work first, and with none waiting, the bulk work has every worker to itself.

A workspace that starts many sources at once (a discover list of 200 pages) is bulk: the interactive lane
stays short. Work published without a lane (the sweeper, connectors) keeps the default priority.
INGESTION_LANES=False publishes everything as before (the bench's baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from sources.models import ACTIVE_STATUSES, Document, Source
from sources.tenancy import workspace_scope

# A file bigger than this is parsed for minutes, not seconds: bulk, so it never holds a crawl process.
SMALL_FILE_BYTES = 2 * 1024 * 1024
INTERACTIVE_PRIORITY = 0  # the Redis transport serves 0 first (priority steps 0, 3, 6, 9)
BULK_PRIORITY = 6


@dataclass(frozen=True)
class Lane:
    name: str
    options: dict[str, Any]  # apply_async options: queue and priority


NO_LANE = Lane("none", {})
BULK = Lane("bulk", {"priority": BULK_PRIORITY})


def interactive() -> Lane:
    return Lane(
        "interactive", {"queue": settings.INGESTION_INTERACTIVE_QUEUE, "priority": INTERACTIVE_PRIORITY}
    )


def lane_for(source: Source) -> Lane:
    if not settings.INGESTION_LANES:
        return NO_LANE
    if source.pages_total > settings.INGESTION_SMALL_SOURCE_PAGES:
        return BULK
    if int((source.state or {}).get("size", 0)) > SMALL_FILE_BYTES:
        return BULK
    with workspace_scope(source.workspace_id):
        busy = Source.objects.filter(status__in=ACTIVE_STATUSES).exclude(id=source.id)
        if busy.count() >= settings.INGESTION_INTERACTIVE_MAX_ACTIVE:
            return BULK
    return interactive()


def lane_for_source_id(workspace_id: int, source_id: int) -> Lane:
    if not settings.INGESTION_LANES:
        return NO_LANE
    with workspace_scope(workspace_id):
        source = (
            Source.objects.filter(id=source_id).only("id", "workspace_id", "pages_total", "state").first()
        )
    return lane_for(source) if source is not None else NO_LANE


def lane_for_documents(workspace_id: int, document_ids: list[int]) -> Lane:
    """Index jobs of many documents are bulk; a few take their source's lane."""
    if not settings.INGESTION_LANES or not document_ids:
        return NO_LANE
    if len(document_ids) > settings.INGESTION_SMALL_SOURCE_PAGES:
        return BULK
    with workspace_scope(workspace_id):
        source_id = Document.objects.filter(id=document_ids[0]).values_list("source_id", flat=True).first()
    return lane_for_source_id(workspace_id, source_id) if source_id else NO_LANE
