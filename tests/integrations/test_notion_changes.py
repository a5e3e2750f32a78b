"""What a Notion sync does with changes the issue #52 found missed: removals counted in the sync's outcome,
pages under blocks (toggles, columns, synced blocks, lists, tables) at any depth, and an edit made in the
same minute as the last sync (Notion rounds last_edited_time down to the minute)."""

from __future__ import annotations

import pytest

from ingestion import lifecycle
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.fakes.notion_server import FakeNotion, block
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


# --- pages in blocks, at any depth ----------------------------------------------------------------------


def _page_in(notion: FakeNotion, title: str, holder: dict, text: str = "", blocks=None) -> str:
    """A page made inside a block (its parent is {"type": "block_id"}), shared through its page."""
    return notion.add_page(
        title,
        blocks or [block("paragraph", text or f"{title} text.")],
        parent=holder["id"],
        parent_type="block_id",
        shared=False,
    )


@pytest.fixture
def wiki(notion) -> dict[str, str]:
    """A wiki page whose child pages sit in a toggle, two columns, a synced block, a callout, a list item
    and a toggle nested three deep; below one of them, a page in a page in a toggle; a child database in a
    toggle; and a page in another page's toggle, not below the wiki."""
    toggle = block("toggle", "Regional policies", children=[block("paragraph", "Open for details.")])
    left = block("column", children=[block("paragraph", "Left.")])
    right = block("column", children=[block("paragraph", "Right.")])
    synced = block("synced_block", synced_from=None, children=[block("paragraph", "Shared note.")])
    callout = block("callout", "Heads up", icon={"type": "emoji", "emoji": "!"})
    item = block("bulleted_list_item", "Teams")
    deepest = block("toggle", "Level 3")
    deep = block("toggle", "Level 1", children=[block("toggle", "Level 2", children=[deepest])])
    databases = block("toggle", "Trackers")
    ids = {
        "wiki": notion.add_page(
            "Wiki",
            [
                toggle,
                block("column_list", children=[left, right]),
                synced,
                callout,
                item,
                block("column_list", children=[block("column", children=[deep])]),
                databases,
            ],
        )
    }
    ids["EU returns"] = _page_in(notion, "EU returns", toggle, "EU customers may return within 60 days.")
    ids["Left page"] = _page_in(notion, "Left page", left)
    ids["Right page"] = _page_in(notion, "Right page", right)
    ids["Synced page"] = _page_in(notion, "Synced page", synced)
    ids["Callout page"] = _page_in(notion, "Callout page", callout)
    ids["Team page"] = _page_in(notion, "Team page", item)
    inner = block("toggle", "More")
    ids["Deep page"] = _page_in(notion, "Deep page", deepest, blocks=[inner])
    ids["Deeper page"] = _page_in(notion, "Deeper page", inner)
    schema = {"Name": {"id": "title", "type": "title", "title": {}}}
    ids["Bugs"] = notion.add_database(
        "Bugs", schema, parent=databases["id"], parent_type="block_id", shared=False
    )
    ids["Kettle leaks"] = notion.add_page(
        "Kettle leaks",
        [block("paragraph", "The lid leaks when overfilled.")],
        parent=ids["Bugs"],
        parent_type="database_id",
        properties={},
        shared=False,
    )
    elsewhere = block("toggle", "Elsewhere")
    notion.add_page("Office", [elsewhere])
    ids["Not below"] = _page_in(notion, "Not below the wiki", elsewhere)
    return ids


IN_BLOCKS = {
    "EU returns",
    "Left page",
    "Right page",
    "Synced page",
    "Callout page",
    "Team page",
    "Deep page",
    "Deeper page",
    "Kettle leaks",
}


@pytest.fixture
def wiki_source(workspace, agent, notion_connection, wiki) -> Source:
    source = _create(workspace, agent, notion_connection, [{"id": wiki["wiki"]}], include_children=True)
    run_sync(source)
    return source


def test_child_pages_in_toggles_columns_and_other_blocks_are_synced(wiki_source, wiki, notion):
    source = _source(wiki_source)
    assert source.status == Status.DONE, (source.error, source.error_detail)
    assert _titles(source) == {"Wiki"} | IN_BLOCKS
    assert notion.objects[wiki["EU returns"]]["parent"]["type"] == "block_id"
    with workspace_scope(source.workspace_id):
        assert Chunk.objects.filter(source_id=source.id, text__contains="within 60 days").exists()


def test_a_page_in_a_block_is_not_synced_without_child_pages(workspace, agent, notion_connection, wiki):
    source = _create(workspace, agent, notion_connection, [{"id": wiki["wiki"]}], include_children=False)
    run_sync(source)
    assert _titles(source) == {"Wiki"}


def test_a_page_added_in_a_toggle_is_found_by_the_next_sync_and_unchanged_ones_are_not_fetched(
    wiki_source, wiki, notion
):
    toggle_id = notion.objects[wiki["EU returns"]]["parent"]["block_id"]
    notion.requests.clear()
    added = _page_in(notion, "US returns", notion.blocks[toggle_id], "US customers have 30 days.")
    outcome, indexed = resync(wiki_source)
    assert len(outcome.document_ids) == len(indexed) == 1
    assert "US returns" in _titles(wiki_source)
    fetched = {path for method, path in notion.requests if path.endswith("/children")}
    assert fetched == {f"/v1/blocks/{added}/children"}
    # One lookup of the toggle serves both pages in it.
    assert notion.requests.count(("GET", f"/v1/blocks/{toggle_id}")) == 1


def test_a_known_page_in_a_block_missing_from_search_is_kept(wiki_source, wiki, notion):
    """Search lags behind Notion: a page (and the page below it) it doesn't list yet are asked for directly
    and kept, since they still sit below the wiki."""
    notion.not_indexed_yet |= {wiki["Deep page"], wiki["Deeper page"]}
    resync(wiki_source)
    assert _titles(wiki_source) == {"Wiki"} | IN_BLOCKS
    assert _source(wiki_source).last_sync["removed"] == 0


def test_a_page_moved_out_of_the_wiki_leaves_and_is_counted(wiki_source, wiki, notion):
    office_toggle = notion.objects[wiki["Not below"]]["parent"]
    notion.objects[wiki["Left page"]]["parent"] = dict(office_toggle)
    notion.shared.add(wiki["Left page"])  # still visible to the integration, just elsewhere
    resync(wiki_source)
    assert "Left page" not in _titles(wiki_source)
    assert _source(wiki_source).last_sync["removed"] == 1


def test_a_cycle_of_blocks_ends_and_removes_nothing(wiki_source, wiki, notion):
    """Blocks whose parents loop (no real workspace does this) end the walk at MAX_DEPTH: the page's place
    is unknown, and a page the source holds is kept."""
    a = notion.objects[wiki["Synced page"]]["parent"]["block_id"]
    b = block("toggle", "Loop")
    b.pop("_children")
    notion.blocks[b["id"]] = {**b, "parent": {"type": "block_id", "block_id": a}}
    notion.blocks[a]["parent"] = {"type": "block_id", "block_id": b["id"]}
    notion.shared.add(a)  # what the integration sees of it now
    notion.requests.clear()
    resync(wiki_source)
    assert "Synced page" in _titles(wiki_source)
    assert notion.requests.count(("GET", f"/v1/blocks/{a}")) == 1


def test_block_lookups_are_bounded_and_what_they_leave_unknown_is_kept(
    wiki_source, wiki, notion, monkeypatch
):
    from integrations.notion import tree

    monkeypatch.setattr(tree, "MAX_BLOCK_LOOKUPS", 1)
    notion.requests.clear()
    resync(wiki_source)
    assert _titles(wiki_source) == {"Wiki"} | IN_BLOCKS  # known: kept while they exist
    lookups = [r for r in notion.requests if r[0] == "GET" and r[1].count("/") == 3 and "/blocks/" in r[1]]
    assert len(lookups) == 1


def test_the_documented_parent_types_name_the_page_or_database_a_page_sits_in():
    from integrations.notion.tree import Places

    places = Places(client=None, objects=[])  # no block parent: nothing is retrieved
    place = {
        "page_id": {"type": "page_id", "page_id": "p1"},
        "database_id": {"type": "database_id", "database_id": "d1"},
        # API version 2025-09-03: a row sits in a data source, which names its database.
        "data_source_id": {"type": "data_source_id", "data_source_id": "s1", "database_id": "d2"},
        "workspace": {"type": "workspace", "workspace": True},
    }
    assert {k: places.owner({"parent": v}) for k, v in place.items()} == {
        "page_id": "p1",
        "database_id": "d1",
        "data_source_id": "d2",
        "workspace": "",
    }
    assert {"d1", "d2"} <= places.databases
