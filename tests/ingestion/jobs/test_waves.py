"""A crawl is published a few pages at a time from its backlog, and the sweeper puts lost pages back in line
instead of failing them while they have attempts left (docs/RELIABILITY.md)."""

from __future__ import annotations

import json

import pytest
import redis
from django.utils import timezone

from ingestion import lifecycle
from ingestion.jobs import backlog
from ingestion.jobs.sweeper import sweep_stalled
from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(settings):
    """Page jobs routed to a queue of this test's own: the session's real worker (started by earlier worker
    tests) consumes `crawl`, and would take the messages this test reads. Lanes (which name a queue for
    each job, tests/ingestion/jobs/test_lanes.py) are off, so the routing table decides."""
    settings.INGESTION_LANES = False
    import uuid

    from celery.app import routes

    from config.celery import app

    name = f"waves-{uuid.uuid4().hex[:8]}"
    # The routing table the app built from CELERY_TASK_ROUTES, with page jobs sent to this test's queue.
    table = {**settings.CELERY_TASK_ROUTES, "ingestion.tasks.crawl_*": {"queue": name}}
    app.amqp._rtable = routes.prepare(table)
    app.amqp.__dict__.pop("router", None)  # a cached property, built from the routing table
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = f"{settings.REDIS_KEY_PREFIX}{name}"
    try:
        yield client, queue
    finally:
        client.delete(queue)
        app.amqp.flush_routes()
        app.amqp.__dict__.pop("router", None)


def published(broker) -> list[dict]:
    client, queue = broker
    # Kombu pushes on the left and pops on the right: the oldest message is last.
    messages = [json.loads(m) for m in reversed(client.lrange(queue, 0, -1))]
    return [{"headers": m["headers"], "kwargs": json.loads(_body(m))[1]} for m in messages]


def _body(message: dict) -> str:
    import base64

    return base64.b64decode(message["body"]).decode()


def crawl_source(workspace, agent, pages: int) -> tuple[Source, list[int]]:
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="s", config={"url": "http://x.test/"}, status="crawling"
        )
        ids = [
            Document.objects.create(source=source, url=f"http://x.test/{n}", status="pending").id
            for n in range(pages)
        ]
    backlog.clear(source.id)
    return source, ids


def test_a_crawl_is_published_in_waves_without_countdowns(
    workspace, agent, broker, settings, django_capture_on_commit_callbacks
):
    settings.CRAWL_WAVE_SIZE = 3
    source, ids = crawl_source(workspace, agent, 10)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.queue_page_jobs(workspace_id=workspace.id, document_ids=ids)
    first = published(broker)
    assert [m["kwargs"]["document_id"] for m in first] == ids[:3]
    assert all(m["headers"].get("eta") is None for m in first)  # nothing for a worker to hoard
    assert backlog.members(source.id) == set(ids[3:])
    # Nothing frees up, nothing more is published.
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.pump_pages(workspace_id=workspace.id, source_id=source.id) == 0
    # Two pages end (one indexed, one failed); their places go to the next two of the backlog.
    Document.unscoped.filter(id=ids[0]).update(status="indexing", due_by=None)
    Document.unscoped.filter(id=ids[1]).update(status="failed", due_by=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.pump_pages(workspace_id=workspace.id, source_id=source.id) == 2
    assert [m["kwargs"]["document_id"] for m in published(broker)] == ids[:5]


def test_a_cancelled_page_in_the_backlog_is_skipped(
    workspace, agent, broker, settings, django_capture_on_commit_callbacks
):
    settings.CRAWL_WAVE_SIZE = 2
    _source, ids = crawl_source(workspace, agent, 4)
    Document.unscoped.filter(id=ids[0]).update(status="failed")
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.queue_page_jobs(workspace_id=workspace.id, document_ids=ids)
    assert [m["kwargs"]["document_id"] for m in published(broker)] == ids[1:3]


def test_the_sweeper_puts_lost_pages_back_in_line_and_publishes_them(
    workspace, agent, broker, settings, django_capture_on_commit_callbacks
):
    settings.CRAWL_STALLED_AFTER = 60
    settings.CRAWL_MAX_ATTEMPTS = 3
    settings.CRAWL_WAVE_SIZE = 10
    source, (lost, dead, waiting, spent) = crawl_source(workspace, agent, 4)
    long_ago = timezone.now() - timezone.timedelta(hours=1)
    # Published, but its message is gone (its deadline passed unclaimed).
    Document.unscoped.filter(id=lost).update(due_by=timezone.now() - timezone.timedelta(seconds=1))
    # Claimed by a worker that died mid-crawl.
    Document.unscoped.filter(id=dead).update(status="crawling", attempts=1)
    # Waiting in the backlog for its wave: not stalled, however long it waits.
    backlog.push(source.id, [waiting])
    # Crawled and lost too often: fails with its class.
    Document.unscoped.filter(id=spent).update(status="crawling", attempts=3)
    Document.unscoped.filter(source_id=source.id).update(updated_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        swept = sweep_stalled()
    assert swept["documents_requeued"] == 2 and swept["documents_failed"] == 1
    rows = {d.id: d for d in Document.unscoped.filter(source_id=source.id)}
    assert rows[spent].status == "failed" and rows[spent].failure_class == "interrupted"
    assert (rows[lost].status, rows[lost].attempts) == ("pending", 1)
    assert (rows[dead].status, rows[dead].attempts) == ("pending", 2)
    # The sweeper's pump published all three again (the waiting one in its turn), each with a deadline.
    assert sorted(m["kwargs"]["document_id"] for m in published(broker)) == sorted([lost, dead, waiting])
    assert all(rows[i].due_by is not None for i in (lost, dead, waiting))
    assert backlog.members(source.id) == set()


def test_countdowns_stay_inside_the_visibility_timeout(settings):
    from ingestion.pages import max_countdown

    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 300}
    settings.CRAWL_MAX_RETRY_AFTER = 3600
    assert max_countdown() == 270


def test_a_text_source_whose_index_job_died_is_queued_again_then_fails_when_out_of_attempts(
    workspace, agent, settings, django_capture_on_commit_callbacks
):
    settings.CRAWL_STALLED_AFTER = 60
    settings.CRAWL_MAX_ATTEMPTS = 1
    long_ago = timezone.now() - timezone.timedelta(hours=1)
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="t", status="indexing")
        page = Document.objects.create(source=source, text="Kettles boil water.", status="indexing")
    Document.unscoped.filter(id=page.id).update(updated_at=long_ago)
    Source.unscoped.filter(id=source.id).update(updated_at=long_ago)
    with django_capture_on_commit_callbacks() as queued:
        swept = sweep_stalled()
    assert swept["sources_requeued"] == 1 and swept["documents_failed"] == 0
    assert len(queued) == 1  # its index job
    source.refresh_from_db()
    assert source.status == "pending" and source.state["sweeps"] == 1
    assert Document.unscoped.get(id=page.id).status == "pending"
    # The job is lost again: no attempt left, the page fails with its class.
    Document.unscoped.filter(id=page.id).update(status="indexing", updated_at=long_ago)
    Source.unscoped.filter(id=source.id).update(status="indexing", updated_at=long_ago)
    with django_capture_on_commit_callbacks() as queued:
        swept = sweep_stalled()
    assert swept["sources_requeued"] == 0 and swept["documents_failed"] == 1 and queued == []
    assert Document.unscoped.get(id=page.id).failure_class == "interrupted"
    assert Source.unscoped.get(id=source.id).status == "failed"


def test_a_crawled_page_whose_index_job_was_lost_gets_another(
    workspace, agent, settings, django_capture_on_commit_callbacks
):
    settings.CRAWL_STALLED_AFTER = 60
    _source, (page,) = crawl_source(workspace, agent, 1)
    Document.unscoped.filter(id=page).update(
        status="indexing", text="Kettles.", updated_at=timezone.now() - timezone.timedelta(hours=1)
    )
    with django_capture_on_commit_callbacks() as queued:
        swept = sweep_stalled()
    assert swept["documents_requeued"] == 1 and len(queued) == 1
    row = Document.unscoped.get(id=page)
    assert (row.status, row.attempts) == ("indexing", 1)
