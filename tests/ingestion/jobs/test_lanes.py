"""Fair work across workspaces (ingestion/jobs/lanes.py): small sources' jobs are published to the interactive
queue, a big crawl's at a lower priority in its own queue. Checked as Celery hands each message to the broker
(its before_task_publish signal: the routing key and priority the Redis transport files it under), so a
worker running for other tests in the session cannot take the messages away first. The tests run in a
transaction that is rolled back (the on-commit publishing is run by hand), so such a worker finds none of
these rows and nothing is left to clean up."""

from __future__ import annotations

import pytest
from django.conf import settings

from ingestion import lifecycle
from ingestion.jobs import lanes
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def text(workspace, agent, title="Note"):
    return lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="text", title=title, payload={"content": "Hello there."}
    )


def test_a_small_source_goes_to_the_interactive_queue_first_in_line(broker, workspace, agent):
    with broker.sending():
        text(workspace, agent)
    assert broker.routes() == {"interactive": ["ingestion.tasks.index_source"]}


def test_a_big_crawls_pages_go_to_their_queues_at_the_bulk_priority(broker, workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Big", config={"url": "https://example.com/"}, pages_total=500
        )
        ids = [
            Document.objects.create(source=source, url=f"https://example.com/{i}", status=Status.PENDING).id
            for i in range(6)
        ]
    with broker.sending():
        lifecycle.queue_page_jobs(workspace_id=workspace.id, document_ids=ids)
    assert broker.routes() == {
        f"crawl:{lanes.BULK_PRIORITY}": ["ingestion.tasks.crawl_page"] * settings.CRAWL_WAVE_SIZE
    }


def test_a_workspace_adding_many_small_sources_keeps_them_all_interactive(broker, workspace, agent):
    # Issue #56: the third and later sources a workspace added quickly went to bulk, behind other crawls.
    first = settings.INGESTION_INTERACTIVE_FIRST
    with broker.sending():
        for i in range(first + 5):
            text(workspace, agent, f"Note {i}")
    assert broker.routes() == {
        "interactive": ["ingestion.tasks.index_source"] * first,  # first in line
        f"interactive:{lanes.QUEUED_PRIORITY}": ["ingestion.tasks.index_source"] * 5,  # still ahead of bulk
    }


def test_past_its_share_a_workspaces_small_sources_are_bulk(broker, workspace, agent, settings):
    # A thousand tiny sources are a big job: past INGESTION_INTERACTIVE_SHARE_PAGES pages in progress.
    settings.INGESTION_INTERACTIVE_FIRST, settings.INGESTION_INTERACTIVE_SHARE_PAGES = 2, 4
    with broker.sending():
        for i in range(6):
            text(workspace, agent, f"Note {i}")
    assert broker.routes() == {
        "interactive": ["ingestion.tasks.index_source"] * 2,
        f"interactive:{lanes.QUEUED_PRIORITY}": ["ingestion.tasks.index_source"] * 2,  # 3 and 4 pages ahead
        f"index:{lanes.BULK_PRIORITY}": ["ingestion.tasks.index_source"] * 2,
    }


def test_another_workspaces_small_source_goes_first_in_line_while_one_floods(
    broker, workspace, agent, other_workspace, other_agent
):
    with broker.sending():
        for i in range(settings.INGESTION_INTERACTIVE_FIRST + 10):
            text(workspace, agent, f"Flood {i}")
    broker.messages.clear()
    with broker.sending():
        text(other_workspace, other_agent, "Mine")
    assert broker.routes() == {"interactive": ["ingestion.tasks.index_source"]}


def test_a_workspaces_own_big_crawl_does_not_push_its_small_sources_out(broker, workspace, agent):
    with workspace_scope(workspace.id):
        for i in range(settings.INGESTION_INTERACTIVE_FIRST + 1):
            Source.objects.create(
                agent=agent,
                kind="sitemap",
                title=f"Big {i}",
                config={},
                pages_total=500,
                status=Status.CRAWLING,
            )
    with broker.sending():
        text(workspace, agent)
    assert broker.routes() == {"interactive": ["ingestion.tasks.index_source"]}


def test_a_long_pasted_text_is_bulk_by_its_length(broker, workspace, agent):
    with broker.sending():
        lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="text",
            title="Long",
            payload={"content": "word " * (lanes.SMALL_TEXT_CHARS // 5 + 1)},
        )
    assert broker.routes() == {f"index:{lanes.BULK_PRIORITY}": ["ingestion.tasks.index_source"]}


def test_a_later_sources_jobs_move_up_as_the_ones_ahead_finish(
    workspace, agent, django_capture_on_commit_callbacks
):
    first = settings.INGESTION_INTERACTIVE_FIRST
    with django_capture_on_commit_callbacks(execute=False):
        sources = [text(workspace, agent, f"Note {i}") for i in range(first + 1)]
    last = sources[-1]
    assert lanes.lane_for_source_id(workspace.id, last.id) == lanes.interactive(lanes.QUEUED_PRIORITY)
    with workspace_scope(workspace.id):
        Source.objects.filter(id=sources[0].id).update(status=Status.DONE)
    assert lanes.lane_for_source_id(workspace.id, last.id) == lanes.interactive()
    # A source added after it never counts against it.
    with django_capture_on_commit_callbacks(execute=False):
        text(workspace, agent, "Later")
    assert lanes.lane_for_source_id(workspace.id, last.id) == lanes.interactive()


def test_a_connectors_lane_is_what_was_picked_then_what_was_listed(workspace, agent):
    many = [{"id": f"p{i}"} for i in range(settings.INGESTION_SMALL_SOURCE_PAGES + 1)]
    with workspace_scope(workspace.id):
        picked_many = Source.objects.create(agent=agent, kind="notion", title="Many", config={"items": many})
        picked_one = Source.objects.create(
            agent=agent, kind="notion", title="One", config={"items": many[:1]}
        )
    assert lanes.lane_for_source_id(workspace.id, picked_many.id) == lanes.BULK
    assert lanes.lane_for_source_id(workspace.id, picked_one.id) == lanes.interactive()
    with workspace_scope(workspace.id):  # its one picked page had a hundred children
        Source.objects.filter(id=picked_one.id).update(pages_total=100)
    assert lanes.lane_for_source_id(workspace.id, picked_one.id) == lanes.BULK


def test_without_lanes_everything_is_published_as_before(broker, workspace, agent, settings):
    settings.INGESTION_LANES = False
    with broker.sending():
        text(workspace, agent)
    assert broker.routes() == {"index": ["ingestion.tasks.index_source"]}


def test_a_big_file_is_bulk_so_it_never_holds_a_crawl_process(broker, workspace, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    small = SimpleUploadedFile("small.txt", b"hello " * 100, content_type="text/plain")
    big = SimpleUploadedFile("big.txt", b"hello " * (lanes.SMALL_FILE_BYTES // 5), content_type="text/plain")
    with broker.sending():
        lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=[small])
        lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=[big])
    assert broker.routes() == {
        "interactive": ["ingestion.tasks.index_upload"],
        f"index:{lanes.BULK_PRIORITY}": ["ingestion.tasks.index_upload"],
    }


def test_a_worker_process_says_when_its_embedder_is_loaded_and_not_when_it_failed(caplog, settings):
    # Every process takes interactive jobs, so each loads the embedder at start; the pipeline benchmark
    # starts its clock on this line (tests/bench/test_pipeline_bench.py).
    from ingestion.tasks import warm_embedder

    settings.INGESTION_LANES = True
    with caplog.at_level("INFO", logger="ingestion.tasks"):
        warm_embedder()
    assert any(r.getMessage().startswith("embedder warm after") for r in caplog.records)

    caplog.clear()
    broken = "tests.ingestion.jobs.test_lanes.BrokenEmbedder"
    settings.EMBEDDERS = {"default": {**settings.EMBEDDERS["default"], "BACKEND": broken}}
    with caplog.at_level("INFO", logger="ingestion.tasks"):
        warm_embedder()
    messages = [r.getMessage() for r in caplog.records]
    assert "could not load the embedder at worker start" in messages
    assert not any(m.startswith("embedder warm") for m in messages)


class BrokenEmbedder:
    model_name, dimensions, batch_size = "broken", 384, 0

    def __init__(self, **_options: object) -> None:
        pass

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        from retrieval.embedders.base import EmbeddingError

        raise EmbeddingError("The embedder is not reachable.")
