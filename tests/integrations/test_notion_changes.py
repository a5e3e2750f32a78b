"""What a Notion sync does with changes the issue #52 found missed: removals counted in the sync's outcome,
pages under blocks (toggles, columns, synced blocks, lists, tables) at any depth, and an edit made in the
same minute as the last sync (Notion rounds last_edited_time down to the minute)."""

from __future__ import annotations

import pytest

from ingestion import lifecycle
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.fakes.notion_server import block
from tests.integrations.notion_pages import build_workspace
from tests.integrations.test_notion_sync import resync, run_sync

pytestmark = pytest.mark.django_db


def _create(workspace, agent, connection, items, **extra) -> Source:
    return lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="notion",
        title="",
        payload={"connection": connection.id, "items": items, **extra},
    )


def _source(source: Source) -> Source:
    with workspace_scope(source.workspace_id):
        return Source.objects.get(id=source.id)


def _titles(source: Source) -> set[str]:
    with workspace_scope(source.workspace_id):
        return set(Document.objects.filter(source_id=source.id).values_list("title", flat=True))


@pytest.fixture
def pages(notion):
    return build_workspace(notion)


@pytest.fixture
def handbook_source(workspace, agent, notion_connection, pages) -> Source:
    items = [{"id": pages["handbook"], "type": "page"}, {"id": pages["faq"], "type": "database"}]
    source = _create(workspace, agent, notion_connection, items, include_children=True)
    run_sync(source)
    return source


# --- removals are counted -------------------------------------------------------------------------------


def test_pages_removed_by_a_notion_sync_are_counted_in_its_outcome(handbook_source, notion, pages):
    notion.archive(pages["child"])  # in Notion's trash: gone from search and from the listing
    notion.archive(pages["Do you ship to Chile?"])  # a database row
    resync(handbook_source)
    source = _source(handbook_source)
    assert source.status == Status.DONE
    assert source.last_sync["removed"] == 2, source.last_sync
    removed = {p["url"] for p in source.last_sync["removed_pages"]}
    assert removed == {
        notion.objects[pages["child"]]["url"],
        notion.objects[pages["Do you ship to Chile?"]]["url"],
    }
    assert "Shipping" not in _titles(source) and "Do you ship to Chile?" not in _titles(source)
    with workspace_scope(source.workspace_id):
        assert not Chunk.objects.filter(source_id=source.id, text__contains="Canada, Mexico").exists()
    assert source.pages_total == len(_titles(source)) == 3


def test_a_page_found_deleted_when_fetched_is_counted_as_removed(handbook_source, notion, pages):
    """Listed (search lags behind Notion), then 404 when fetched: removed on that evidence, and counted."""
    notion.edit_page(pages["child"], [block("paragraph", "Moved to the wiki.")])
    assert lifecycle.source_recrawl(source=handbook_source)
    from integrations import sync

    with workspace_scope(handbook_source.workspace_id):
        outcome = sync.source_sync(source=Source.objects.get(id=handbook_source.id))
        [document_id] = outcome.document_ids
        notion.archive(pages["child"])  # between the listing and the fetch
        assert sync.document_sync(document=Document.objects.get(id=document_id)).index is False
        sync.refresh_status(source_id=handbook_source.id)
    source = _source(handbook_source)
    assert source.last_sync["removed"] == 1, source.last_sync
    assert "deleted" in source.last_sync["removed_pages"][0]["reason"]
    assert "Shipping" not in _titles(source)


def test_a_source_whose_picks_are_all_gone_counts_every_removal(handbook_source, notion, pages):
    notion.unshare(pages["handbook"])
    notion.unshare(pages["faq"])
    resync(handbook_source)
    source = _source(handbook_source)
    assert source.status == Status.FAILED and "shared with Grounded" in source.error
    assert source.last_sync["removed"] == 5, source.last_sync
    assert _titles(source) == set() and source.chunks_count == 0


# --- an edit made in the same minute as the last sync ----------------------------------------------------


@pytest.fixture
def holidays(workspace, agent, notion_connection, notion) -> tuple[Source, str, str]:
    """A page edited and synced within the current minute: its copy shares the minute's timestamp."""
    minute = notion.this_minute()
    page = notion.add_page("Holidays", [block("paragraph", "Holidays: 25 days a year.")])
    source = _create(workspace, agent, notion_connection, [{"id": page}])
    run_sync(source)
    assert _source(source).status == Status.DONE
    return source, page, minute


def _chunks(source: Source) -> dict[int, str]:
    with workspace_scope(source.workspace_id):
        return dict(Chunk.objects.filter(source_id=source.id).values_list("id", "text"))


def test_an_edit_made_in_the_same_minute_as_the_last_sync_is_fetched(holidays, notion):
    source, page, minute = holidays
    notion.edit_page(page, [block("paragraph", "Holidays: 30 days a year, from January.")])
    assert notion.objects[page]["last_edited_time"] == minute  # the synced copy's timestamp
    _, indexed = resync(source)
    assert len(indexed) == 1
    text = " ".join(_chunks(source).values())
    assert "30 days" in text and "25 days" not in text
    assert _source(source).last_sync["changed"] == 1


def test_a_page_maybe_changed_in_its_minute_is_fetched_again_but_not_embedded_again(holidays, notion):
    source, page, _minute = holidays
    chunks = _chunks(source)
    notion.requests.clear()
    outcome, indexed = resync(source)
    assert len(outcome.document_ids) == 1 and indexed == []  # fetched, same hash: nothing embedded
    assert ("GET", f"/v1/blocks/{page}/children") in notion.requests
    assert _chunks(source) == chunks
    assert _source(source).last_sync["unchanged"] == 1


def test_a_copy_fetched_after_its_minute_ended_is_trusted(holidays, notion):
    """Once a copy was read after its timestamp's minute (and the clock skew) ended, any later edit has a
    later timestamp: the same timestamp means unchanged, and nothing is fetched."""
    from datetime import UTC, datetime, timedelta

    source, _page, minute = holidays
    edited = datetime.fromisoformat(minute).astimezone(UTC)
    with workspace_scope(source.workspace_id):
        Document.objects.filter(source_id=source.id).update(fetched_at=edited + timedelta(seconds=91))
    notion.requests.clear()
    outcome, _ = resync(source)
    assert outcome.document_ids == ()
    assert not [r for r in notion.requests if "/children" in r[1]]
