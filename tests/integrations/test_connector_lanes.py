"""Connector jobs go through the lanes and waves as a crawl's pages do (issue #56: a sync published every
document at once, outside the lanes, and a Retry-After of up to 600 s became a countdown past the broker's
visibility timeout, so a redelivered job could run twice).

Checked as Celery hands each message to the broker (before_task_publish: queue, priority, countdown,
kwargs), with the tasks run in this process against the fake Notion over real HTTP. The test's transaction
is rolled back, so a worker running for other tests finds none of these rows."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from django.conf import settings

from ingestion import lifecycle
from ingestion.jobs import backlog, lanes
from ingestion.pages import max_countdown
from integrations import tasks
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope
from tests.fakes.notion_server import block

pytestmark = pytest.mark.django_db


@pytest.fixture
def picked(notion, workspace, agent, notion_connection, django_capture_on_commit_callbacks):
    """A Notion source of a page with six child pages (seven documents), created but not yet synced."""
    parent = notion.add_page("Handbook", [block("paragraph", "Everything about our kettles.")])
    for i in range(6):
        notion.add_page(f"Chapter {i}", [block("paragraph", f"Chapter {i} says {i} things.")], parent=parent)
    with django_capture_on_commit_callbacks(execute=False):  # its sync job is run by hand below
        source = lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="notion",
            title="",
            payload={"connection": notion_connection.id, "items": [{"id": parent, "type": "page"}]},
        )
    yield source
    backlog.clear(source.id)


def _sync(source: Source) -> None:
    tasks.sync_source(workspace_id=source.workspace_id, source_id=source.id)


def test_a_sync_publishes_its_documents_a_wave_at_a_time_in_its_lane(broker, picked, workspace):
    with broker.sending():
        _sync(picked)
    wave = settings.CRAWL_WAVE_SIZE
    assert broker.routes() == {"interactive": ["integrations.tasks.sync_document"] * wave}  # 7 pages: small
    assert len(backlog.members(picked.id)) == 7 - wave

    # One document done: its index job goes in the same lane, and the next document is published.
    first = broker.messages[0][3]
    broker.messages.clear()
    with broker.sending():
        tasks.sync_document(**first)
    assert broker.routes() == {
        "interactive": ["ingestion.tasks.index_document", "integrations.tasks.sync_document"]
    }
    assert len(backlog.members(picked.id)) == 7 - wave - 1


def test_a_big_sync_is_bulk(broker, picked, settings):
    settings.INGESTION_SMALL_SOURCE_PAGES = 5  # seven pages listed: big
    with broker.sending():
        _sync(picked)
    assert broker.routes() == {
        f"crawl:{lanes.BULK_PRIORITY}": ["integrations.tasks.sync_document"] * settings.CRAWL_WAVE_SIZE
    }


def test_a_long_retry_after_becomes_links_shorter_than_the_visibility_timeout(
    broker, picked, notion, workspace
):
    with broker.sending():
        _sync(picked)
    kwargs = broker.messages[0][3]
    broker.messages.clear()
    notion.rate_limit_next, notion.retry_after = 1, "600"
    with broker.sending():
        tasks.sync_document(**kwargs)
    [(task, _queue, countdown, again)] = broker.messages
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert task == "integrations.tasks.sync_document"
    assert countdown is not None and countdown <= max_countdown() + 1 < visibility
    assert again["not_before"] == pytest.approx(time.time() + 600, abs=5)
    assert again["requeues"] == 1 and again["attempt"] == 0  # a rate limit spends no attempt
    with workspace_scope(workspace.id):
        document = Document.objects.get(id=kwargs["document_id"])
    # It waits on purpose and keeps its place in the wave: the sweeper judges it after the wait.
    assert document.status == Status.PENDING
    assert (document.due_by.timestamp() - time.time()) > 600 + settings.CRAWL_STALLED_AFTER - 5

    # A link delivered before its time (or twice) only publishes the next one: nothing is fetched.
    calls = len(notion.requests)
    broker.messages.clear()
    with broker.sending():
        tasks.sync_document(**again)
    [(task, _queue, countdown, following)] = broker.messages
    assert countdown is not None and countdown <= max_countdown() + 1
    assert following["not_before"] == again["not_before"] and following["requeues"] == 1
    assert len(notion.requests) == calls
    with workspace_scope(workspace.id):
        assert Document.objects.get(id=kwargs["document_id"]).status == Status.PENDING


def test_a_short_wait_is_one_countdown_without_a_link(broker, picked, notion):
    with broker.sending():
        _sync(picked)
    kwargs = broker.messages[0][3]
    broker.messages.clear()
    notion.rate_limit_next, notion.retry_after = 1, "3"
    with broker.sending():
        tasks.sync_document(**kwargs)
    [(_task, _queue, countdown, again)] = broker.messages
    assert countdown == pytest.approx(3, abs=1)
    assert "not_before" not in again


def test_the_sweeper_puts_a_lost_connector_document_back_in_its_wave(broker, picked, workspace):
    # Its message was lost (Redis restarted without its data): past its deadline it goes back to the
    # backlog and is published again by the connector's own task, not failed and not a crawl.
    from ingestion.jobs.sweeper import sweep_stalled

    with broker.sending():
        _sync(picked)
    lost = broker.messages[0][3]["document_id"]
    with workspace_scope(workspace.id):
        Document.objects.filter(id=lost).update(due_by=datetime.fromtimestamp(time.time() - 1).astimezone())
    broker.messages.clear()
    with broker.sending():
        sweep_stalled()
    with workspace_scope(workspace.id):
        document = Document.objects.get(id=lost)
    assert document.status == Status.PENDING and document.attempts == 1
    assert {task for task, *_ in broker.messages} == {"integrations.tasks.sync_document"}
