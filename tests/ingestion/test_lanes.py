"""Fair work across workspaces (ingestion/lanes.py): small sources' jobs are published to the interactive
queue, a big crawl's at a lower priority in its own queue. Checked on the broker itself (the test Redis)."""

from __future__ import annotations

import json

import pytest
import redis
from django.conf import settings

from ingestion import lanes, lifecycle
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker():
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    prefix = settings.REDIS_KEY_PREFIX

    def keys():
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            if client.type(key) == b"list" and b"crawl:backlog" not in key:
                yield key

    for key in list(keys()):
        client.delete(key)

    def messages() -> dict[str, list[str]]:
        """queue key (without the prefix; priority after a ':') -> task names waiting there."""
        found: dict[str, list[str]] = {}
        for key in keys():
            name = key.decode()[len(prefix) :].replace("\x06\x16", ":")
            found[name] = [json.loads(m)["headers"]["task"] for m in client.lrange(key, 0, -1)]
        return found

    yield messages
    for key in list(keys()):
        client.delete(key)


def text(workspace, agent, title="Note"):
    return lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="text", title=title, payload={"content": "Hello there."}
    )


def test_a_small_source_goes_to_the_interactive_queue_first_in_line(broker, workspace, agent):
    text(workspace, agent)
    assert broker() == {"interactive": ["ingestion.tasks.index_source"]}


def test_a_big_crawls_pages_go_to_their_queues_at_the_bulk_priority(broker, workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Big", config={"url": "https://example.com/"}, pages_total=500
        )
        ids = [
            Document.objects.create(source=source, url=f"https://example.com/{i}", status=Status.PENDING).id
            for i in range(6)
        ]
    lifecycle.queue_page_jobs(workspace_id=workspace.id, document_ids=ids)  # commits at once (no atomic)
    waiting = broker()
    assert waiting == {
        f"crawl:{lanes.BULK_PRIORITY}": ["ingestion.tasks.crawl_page"] * settings.CRAWL_WAVE_SIZE
    }


def test_a_workspace_starting_many_sources_at_once_leaves_the_interactive_lane(broker, workspace, agent):
    for i in range(settings.INGESTION_INTERACTIVE_MAX_ACTIVE + 2):
        text(workspace, agent, f"Note {i}")
    waiting = broker()
    assert len(waiting["interactive"]) == settings.INGESTION_INTERACTIVE_MAX_ACTIVE
    assert len(waiting[f"index:{lanes.BULK_PRIORITY}"]) == 2


def test_without_lanes_everything_is_published_as_before(broker, workspace, agent, settings):
    settings.INGESTION_LANES = False
    text(workspace, agent)
    assert broker() == {"index": ["ingestion.tasks.index_source"]}


def test_a_big_file_is_bulk_so_it_never_holds_a_crawl_process(broker, workspace, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    small = SimpleUploadedFile("small.txt", b"hello " * 100, content_type="text/plain")
    big = SimpleUploadedFile("big.txt", b"hello " * (lanes.SMALL_FILE_BYTES // 5), content_type="text/plain")
    lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=[small])
    lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=[big])
    assert broker() == {
        "interactive": ["ingestion.tasks.index_upload"],
        f"index:{lanes.BULK_PRIORITY}": ["ingestion.tasks.index_upload"],
    }
