"""Notion sources synced against the fake Notion API over real HTTP, in this process: pick, ingest, resync
incrementally, remove on evidence only, wait out rate limits, and ask for a reconnect when the token dies."""

from __future__ import annotations

import pytest
from django.db import connection as db

from ingestion import lifecycle
from ingestion.indexing import document_index
from ingestion.kinds.config import KindError
from integrations import sync
from integrations.errors import ProviderRateLimited
from integrations.http import wait_for_turn
from integrations.models import Connection
from retrieval.services import search_passages
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.fakes.notion_server import block
from tests.integrations.notion_pages import build_workspace

pytestmark = pytest.mark.django_db


def _create(workspace, agent, connection, items, **extra) -> Source:
    return lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="notion",
        title="",
        payload={"connection": connection.id, "items": items, **extra},
    )


def run_sync(source: Source) -> tuple[sync.Outcome, list[int]]:
    """What the worker does for a source: list, then fetch and index each changed document."""
    with workspace_scope(source.workspace_id):
        outcome = sync.source_sync(source=Source.objects.get(id=source.id))
        indexed = []
        for document_id in outcome.document_ids:
            document = Document.objects.get(id=document_id)
            if sync.document_sync(document=document).index:
                document_index(document=Document.objects.get(id=document_id))
                indexed.append(document_id)
        sync.refresh_status(source_id=source.id)
    return outcome, indexed


def resync(source: Source) -> tuple[sync.Outcome, list[int]]:
    assert lifecycle.source_recrawl(source=source)
    return run_sync(source)


def _texts(workspace, query: str) -> list[str]:
    with workspace_scope(workspace.id):
        return [p.text for p in search_passages(workspace_id=workspace.id, query=query)]


@pytest.fixture
def pages(notion):
    return build_workspace(notion)


@pytest.fixture
def handbook_source(workspace, agent, notion_connection, pages) -> Source:
    items = [{"id": pages["handbook"], "type": "page"}, {"id": pages["faq"], "type": "database"}]
    source = _create(workspace, agent, notion_connection, items, include_children=True)
    run_sync(source)
    return source


def test_picked_pages_children_and_database_rows_become_documents(workspace, handbook_source, pages, notion):
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=handbook_source.id)
        documents = {d.title: d for d in source.documents.all()}
    assert source.status == Status.DONE, (source.error, source.error_detail)
    assert set(documents) == {
        "Kettle handbook",
        "Shipping",
        "Can I descale with lemon?",
        "Do you ship to Chile?",
        "Is the lid dishwasher safe?",
    }
    assert documents["Shipping"].url == notion.objects[pages["child"]]["url"]
    assert documents["Shipping"].url.startswith("https://www.notion.so/Shipping-")
    assert "Status: Draft\nTags: shipping, latam" in documents["Do you ship to Chile?"].text
    assert source.chunks_count > 0
    # Pagination was followed everywhere: the fake answers two items per page.
    assert ("GET", f"/v1/blocks/{pages['handbook']}/children") in notion.requests
    assert len(documents["Kettle handbook"].text.splitlines()) > 20
    assert any("45 days" in t for t in _texts(workspace, "how long can customers return a kettle"))


def test_unchanged_pages_are_not_fetched_or_embedded_again(workspace, handbook_source, notion):
    with workspace_scope(workspace.id):
        chunk_ids = set(Chunk.objects.filter(source_id=handbook_source.id).values_list("id", flat=True))
    notion.requests.clear()
    outcome, indexed = resync(handbook_source)
    assert outcome.document_ids == () and indexed == []
    assert not [r for r in notion.requests if "/children" in r[1]]
    with workspace_scope(workspace.id):
        assert (
            set(Chunk.objects.filter(source_id=handbook_source.id).values_list("id", flat=True)) == chunk_ids
        )
        assert Source.objects.get(id=handbook_source.id).status == Status.DONE


def test_an_edited_page_replaces_its_text_and_only_it_is_fetched(workspace, handbook_source, notion, pages):
    notion.edit_page(pages["child"], [block("paragraph", "We now ship to Chile and Peru within a week.")])
    _, indexed = resync(handbook_source)
    assert len(indexed) == 1
    texts = " ".join(_texts(workspace, "which countries do you ship to"))
    assert "Chile and Peru" in texts
    with workspace_scope(workspace.id):
        assert not Chunk.objects.filter(
            source_id=handbook_source.id, text__contains="Canada, Mexico"
        ).exists()


def _shipping_search(workspace) -> tuple[bool, set[str]]:
    """Through the search API's cache: whether it answered, and the titles shown."""
    from retrieval.services import SearchParams, search_workspace

    result = search_workspace(
        workspace_id=workspace.id, query="which countries do you ship to", params=SearchParams(top_k=3)
    )
    return result.cached, {p.document_title for p in result.passages}


def test_a_renamed_page_is_shown_with_its_new_title_by_a_search_asked_before(
    workspace, handbook_source, notion, pages
):
    assert "Shipping" in _shipping_search(workspace)[1]
    assert _shipping_search(workspace)[0] is True
    notion.rename(pages["child"], "Shipping and delivery")
    resync(handbook_source)
    cached, titles = _shipping_search(workspace)
    assert not cached and "Shipping and delivery" in titles and "Shipping" not in titles


def test_a_title_corrected_by_a_sync_that_finds_the_same_text_clears_cached_searches(
    workspace, handbook_source, notion, pages
):
    """A page's text holds its title, so a rename re-embeds it; a document whose stored title or URL
    differs from the provider's while the text is the same gets both corrected without re-embedding,
    and cached searches that showed the old ones go."""
    from retrieval.cache import invalidate_searches

    with workspace_scope(workspace.id):
        Document.objects.filter(source=handbook_source, title="Shipping").update(title="Old title")
    invalidate_searches(workspace_id=workspace.id)
    assert "Old title" in _shipping_search(workspace)[1]
    assert _shipping_search(workspace)[0] is True
    notion.objects[pages["child"]]["last_edited_time"] = notion._tick()  # listed as changed, same text
    _, indexed = resync(handbook_source)
    assert indexed == []
    cached, titles = _shipping_search(workspace)
    assert not cached and "Shipping" in titles and "Old title" not in titles


def test_archived_and_unshared_pages_leave_with_their_chunks(workspace, handbook_source, notion, pages):
    notion.archive(pages["child"])
    notion.unshare(pages["handbook"])  # the picked page answers 404 now
    resync(handbook_source)
    with workspace_scope(workspace.id):
        titles = set(Document.objects.filter(source_id=handbook_source.id).values_list("title", flat=True))
        assert "Shipping" not in titles and "Kettle handbook" not in titles
        assert len(titles) == 3  # the database rows stay
        assert not Chunk.objects.filter(source_id=handbook_source.id, text__contains="45 days").exists()


def test_a_server_error_while_listing_removes_nothing_and_retries(workspace, handbook_source, notion, pages):
    notion.archive(pages["child"])
    notion.fail_next = 1
    assert lifecycle.source_recrawl(source=handbook_source)
    with workspace_scope(workspace.id):
        outcome = sync.source_sync(source=Source.objects.get(id=handbook_source.id))
        assert outcome.retry_in is not None and outcome.document_ids == ()
        source = Source.objects.get(id=handbook_source.id)
        assert source.status == Status.PENDING  # claimable by the retry
        assert source.documents.filter(title="Shipping").exists()


def test_a_rate_limit_requeues_without_spending_an_attempt_and_pauses_every_worker(
    workspace, handbook_source, notion, notion_connection
):
    notion.rate_limit_next = 1
    notion.retry_after = "7"
    assert lifecycle.source_recrawl(source=handbook_source)
    with workspace_scope(workspace.id):
        outcome = sync.source_sync(source=Source.objects.get(id=handbook_source.id), attempt=0)
    assert outcome.requeue_in == pytest.approx(7, abs=0.5) and outcome.retry_in is None
    calls = len(notion.requests)
    with pytest.raises(ProviderRateLimited) as paused:
        wait_for_turn(notion_connection.id, 50)  # another worker, same connection: held off, nothing sent
    assert 5 < paused.value.retry_after_s <= 7
    assert len(notion.requests) == calls


def test_a_revoked_token_asks_for_a_reconnect_and_keeps_the_documents(
    workspace, handbook_source, notion, notion_connection
):
    notion.tokens.clear()  # revoked in Notion's settings
    resync(handbook_source)
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=handbook_source.id)
        connection = Connection.objects.get(id=notion_connection.id)
    assert connection.status == Connection.State.NEEDS_RECONNECT
    assert source.status == Status.FAILED and source.error == "Reconnect Notion to sync this source."
    assert source.chunks_count > 0 and any("45 days" in t for t in _texts(workspace, "return a kettle"))


def test_another_workspaces_connection_cannot_be_used(other_workspace, other_agent, notion_connection, pages):
    with pytest.raises(KindError) as refused:
        _create(other_workspace, other_agent, notion_connection, [{"id": pages["handbook"]}])
    assert "connection" in refused.value.errors


def test_tokens_are_sealed_in_the_database(notion_connection):
    with db.cursor() as cursor:
        cursor.execute(
            "SELECT access_token FROM integrations_connection WHERE id = %s", [notion_connection.id]
        )
        raw = cursor.fetchone()[0]
    assert raw and notion_connection.access_token not in raw and "secret_" not in raw


def test_a_refused_token_is_refreshed_once_when_notion_gave_a_refresh_token(
    workspace, agent, notion_connection, notion, pages
):
    with workspace_scope(workspace.id):
        notion.refresh_tokens.add("nrt-1")
        Connection.objects.filter(id=notion_connection.id).update(refresh_token="nrt-1")
    notion.tokens.clear()  # the access token expired
    source = _create(workspace, agent, notion_connection, [{"id": pages["other"]}])
    run_sync(source)
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == Status.DONE
        assert Connection.objects.get(id=notion_connection.id).access_token in notion.tokens

    notion.tokens.clear()
    notion.refresh_tokens.clear()  # and now the refresh token is refused too (invalid_grant)
    resync(source)
    with workspace_scope(workspace.id):
        connection = Connection.objects.get(id=notion_connection.id)
        assert connection.status == "needs_reconnect" and "invalid_grant" in connection.last_error_detail
        assert Source.objects.get(id=source.id).error == "Reconnect Notion to sync this source."


def test_indexing_that_finishes_after_a_revocation_leaves_the_reconnect_message(
    workspace, handbook_source, notion_connection
):
    from ingestion.status import source_refresh_status
    from integrations.connections import mark_needs_reconnect

    mark_needs_reconnect(connection=notion_connection, message="Revoked.", detail="401")
    with workspace_scope(workspace.id):
        source_refresh_status(source_id=handbook_source.id)  # what ingestion's index task does last
        source = Source.objects.get(id=handbook_source.id)
    assert source.status == Status.FAILED and source.error == "Reconnect Notion to sync this source."
    assert source.pages_done == source.pages_total > 0


def test_the_api_adds_a_notion_source_and_the_outsider_sees_nothing(
    api, outsider_api, agent, other_agent, notion_connection, pages
):
    body = {
        "kind": "notion",
        "agent": agent.id,
        "connection": notion_connection.id,
        "items": [{"id": pages["other"]}],
    }
    created = api.post("/api/v1/sources", body, format="json")
    assert created.status_code == 201, created.json()
    assert outsider_api.get(f"/api/v1/sources/{created.json()['id']}").status_code == 404
    stolen = outsider_api.post("/api/v1/sources", {**body, "agent": other_agent.id}, format="json")
    assert stolen.status_code == 400 and "connection" in stolen.json()["error"]["fields"]


def test_a_scheduled_sync_of_a_notion_source_records_its_outcome_and_next_date(
    workspace, handbook_source, notion, pages
):
    """The beat claims a due Notion source like a website; the connector's sync opens the sync record, so the
    source shows when it last synced, what changed, and when it syncs next."""
    from django.utils import timezone

    from sources.models import Schedule

    before = timezone.now()
    Source.unscoped.filter(id=handbook_source.id).update(
        schedule=Schedule.DAILY, next_sync_at=before - timezone.timedelta(seconds=1), last_synced_at=None
    )
    notion.edit_page(pages["handbook"], [block("paragraph", "Holidays: 30 days a year, from January.")])
    assert [s.id for s in lifecycle.sync_due_sources()] == [handbook_source.id]
    _outcome, indexed = run_sync(handbook_source)  # what the worker runs for the queued job
    source = Source.unscoped.get(id=handbook_source.id)
    assert indexed and source.status == Status.DONE
    assert source.last_synced_at is not None and source.last_synced_at >= before
    assert source.last_sync["changed"] >= 1 and source.last_sync["removed"] == 0, source.last_sync
    assert source.next_sync_at > timezone.now() + timezone.timedelta(hours=23)
