"""One index job for the pages crawled while it waits in the queue, instead of one job per page.

An index job claims its page together with every other crawled page of the workspace waiting to be
indexed (indexing.index_ready), so the jobs queued for those companions found nothing to claim: on the
Flask docs (77 pages) the index worker ran 74 jobs, about 5 of which indexed anything, and each empty
job still cost the worker, Redis and PostgreSQL CPU that the embedder beside them needs
(docs/BENCHMARKS.md, "Crawl + index end to end").

So a crawled page queues an index job only when no job that would take it is already waiting: a Redis
key per workspace (per source in the interactive lane, whose jobs take companions of their own source
only) is set with SET NX when a job is queued and deleted by that job when it starts, before it claims.
A page that finds the key set was committed before that job's claim, so the claim takes it; a page
committed after the job started finds no key and queues a job of its own.

The key expires after INDEX_WAKE_TTL seconds, so a job that is lost (or waits longer than that) only
costs an extra job later, never a page left waiting: the next crawled page queues a job again, and the
sweeper puts back pages whose index job never came (ingestion/sweeper.py). When Redis cannot be asked,
the page gets its own job, as before.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

from ingestion.lanes import Lane

log = logging.getLogger(__name__)


def _prefix(workspace_id: int) -> str:
    return f"index-wake:{int(workspace_id)}:"


def wake_key(*, workspace_id: int, source_id: int, lane: Lane) -> str:
    # An interactive job takes companions of its own source only (indexing._interactive_source).
    scope = f"source:{int(source_id)}" if lane.name == "interactive" else "workspace"
    return _prefix(workspace_id) + scope


def should_queue(key: str) -> bool:
    """True when no job holding `key` waits in the queue: the caller queues one, which will clear it."""
    if not settings.INDEX_COALESCE_PAGE_JOBS:
        return True
    try:
        return bool(cache.add(key, 1, timeout=settings.INDEX_WAKE_TTL))
    except (RedisError, OSError):  # Redis down: an extra job is harmless, a page left waiting is not
        log.warning("could not coalesce an index job (%s); queueing one", key, exc_info=True)
        return True


def started(key: str, *, workspace_id: int) -> None:
    """The job holding `key` starts: pages crawled from now on are not in its claim, so they queue anew.
    A job clears only a mark of its own workspace, whatever its message says."""
    if not key.startswith(_prefix(workspace_id)):
        log.warning("index job of workspace %s was handed another workspace's mark %r", workspace_id, key)
        return
    try:
        cache.delete(key)
    except (RedisError, OSError):
        # The key expires within INDEX_WAKE_TTL; pages crawled until then wait for the first job queued
        # after it (or the sweeper), as the pages of a lost job do.
        log.warning("could not clear the index wake-up key %s", key, exc_info=True)
