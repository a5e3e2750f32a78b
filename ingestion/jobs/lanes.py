"""Fair work across workspaces: which lane a source's jobs are published in, chosen by the work the source
will index, not by how many sources its workspace added.

Measured before (issue #14, docs/BENCHMARKS.md): a one-paragraph text source waited behind another
workspace's big crawl, because both queues were first come, first served and the index worker was busy with
the crawl's batches (~100 pages each). Lanes fix it without slowing the crawl:

- a *small* source is one whose expected work is at most INGESTION_SMALL_SOURCE_PAGES pages (its listing's
  pages once known: a sitemap's, a connector's; a connector not yet listed: what was picked), a pasted text
  of at most SMALL_TEXT_CHARS characters, a file of at most SMALL_FILE_BYTES. Its jobs go to the
  `interactive` queue, which every worker consumes besides its own, so a crawl process (jobs of a second)
  picks them up between pages instead of waiting for the index worker's current batch;
- every job of a big source is *bulk*: published at BULK_PRIORITY in its usual queue. The Redis transport
  pops priorities strictly in order across a worker's queues, so waiting interactive work goes first, and
  with none waiting the bulk work has every worker to itself.

The fair share (issue #56: a workspace that added three sources quickly had them all put in bulk, and one
paragraph waited over 2 minutes behind another workspace's crawl). A workspace's small sources stay
interactive however many it adds; only their order within the lane depends on how many it has in flight.
Its small sources in progress are taken in id order (the order they were added):
- the first INGESTION_INTERACTIVE_FIRST of them are published at INTERACTIVE_PRIORITY (first in line);
- the next ones, while the small work ahead of them (theirs included) is at most
  INGESTION_INTERACTIVE_SHARE_PAGES pages, at QUEUED_PRIORITY: behind every workspace's first few, still
  ahead of all bulk work;
- past that share the workspace is running a big job made of small pieces (a thousand tiny sources), and
  its further sources are bulk until its earlier ones finish.
So one workspace adding many small sources delays another workspace's small source by at most the few
jobs of its first INGESTION_INTERACTIVE_FIRST sources, and never floods the lane with more than its share.
A source's later jobs (pages, index batches) are placed again when published: as the sources ahead of it
finish it only moves up, never down, since sources added after it never count against it.
Work published without a lane (the sweeper's put-backs of a source's whole index job) keeps the default
priority. INGESTION_LANES=False publishes everything as before (the bench's baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, Sum
from django.db.models.functions import Greatest

from sources.models import ACTIVE_STATUSES, Document, Source
from sources.tenancy import workspace_scope

# A file bigger than this is parsed for minutes, not seconds: bulk, so it never holds a crawl process.
SMALL_FILE_BYTES = 2 * 1024 * 1024
# A pasted text longer than this (~50 pages of prose, ~250 passages) embeds for seconds: bulk.
SMALL_TEXT_CHARS = 100_000
INTERACTIVE_PRIORITY = 0  # the Redis transport serves 0 first (priority steps 0, 3, 6, 9)
QUEUED_PRIORITY = 3
BULK_PRIORITY = 6


@dataclass(frozen=True)
class Lane:
    name: str
    options: dict[str, Any]  # apply_async options: queue and priority


NO_LANE = Lane("none", {})
BULK = Lane("bulk", {"priority": BULK_PRIORITY})


def interactive(priority: int = INTERACTIVE_PRIORITY) -> Lane:
    return Lane("interactive", {"queue": settings.INGESTION_INTERACTIVE_QUEUE, "priority": priority})


def expected_pages(source: Source) -> int:
    """The pages a source will index: its listing's once known, else what its kind expects (a connector:
    the objects picked), at least one."""
    if source.pages_total:
        return source.pages_total
    picked = (source.config or {}).get("items")
    return max(len(picked), 1) if isinstance(picked, list) else 1


def is_small(source: Source) -> bool:
    state = source.state or {}
    return (
        expected_pages(source) <= settings.INGESTION_SMALL_SOURCE_PAGES
        and int(state.get("size", 0)) <= SMALL_FILE_BYTES
        and int(state.get("chars", 0)) <= SMALL_TEXT_CHARS
    )


def _small_ahead(source: Source) -> tuple[int, int]:
    """How many small sources of the workspace are in progress ahead of this one, and their pages."""
    with workspace_scope(source.workspace_id):
        ahead = (
            Source.objects.filter(status__in=ACTIVE_STATUSES, id__lt=source.id)
            .filter(pages_total__lte=settings.INGESTION_SMALL_SOURCE_PAGES)
            # (A key the state lacks compares as NULL, which exclude() would take for a match.)
            .filter(Q(state__size__isnull=True) | Q(state__size__lte=SMALL_FILE_BYTES))
            .filter(Q(state__chars__isnull=True) | Q(state__chars__lte=SMALL_TEXT_CHARS))
            .aggregate(sources=Count("id"), pages=Sum(Greatest("pages_total", 1)))
        )
    return ahead["sources"], ahead["pages"] or 0


def lane_for(source: Source) -> Lane:
    if not settings.INGESTION_LANES:
        return NO_LANE
    if not is_small(source):
        return BULK
    sources, pages = _small_ahead(source)
    if sources < settings.INGESTION_INTERACTIVE_FIRST:
        return interactive()
    if pages + expected_pages(source) <= settings.INGESTION_INTERACTIVE_SHARE_PAGES:
        return interactive(QUEUED_PRIORITY)
    return BULK


def lane_for_source_id(workspace_id: int, source_id: int) -> Lane:
    if not settings.INGESTION_LANES:
        return NO_LANE
    with workspace_scope(workspace_id):
        source = (
            Source.objects.filter(id=source_id)
            .only("id", "workspace_id", "pages_total", "state", "config")
            .first()
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
