"""What a Google Docs sync does with changes in Drive (issue #52): removals counted in the sync's outcome,
a Doc moved between two picked folders, a shortcut to a Doc, and a Doc trashed then restored."""

from __future__ import annotations

import pytest

from ingestion import lifecycle
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.integrations.test_notion_sync import resync, run_sync

pytestmark = pytest.mark.django_db


def _create(workspace, agent, connection, items) -> Source:
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="gdoc",
        title="",
        payload={"connection": connection.id, "items": items},
    )
    run_sync(source)
    return source


def _source(source: Source) -> Source:
    with workspace_scope(source.workspace_id):
        return Source.objects.get(id=source.id)


def _documents(source: Source) -> dict[str, Document]:
    with workspace_scope(source.workspace_id):
        return {d.title: d for d in Document.objects.filter(source_id=source.id)}


def _text(source: Source) -> str:
    with workspace_scope(source.workspace_id):
        return " ".join(Chunk.objects.filter(source_id=source.id).values_list("text", flat=True))


@pytest.fixture
def drive(google):
    support, archive = google.add_folder("Support"), google.add_folder("Archive")
    return {
        "support": support,
        "archive": archive,
        "returns": google.add_doc("Returns", "Customers may return a kettle within 45 days.", folder=support),
        "shipping": google.add_doc("Shipping", "We ship to Canada in three days.", folder=support),
        "care": google.add_doc("Kettle care", "Descale monthly with vinegar.", folder=archive),
        "loose": google.add_doc("Plant rota", "Water the ficus on Fridays."),
    }


@pytest.fixture
def folders_source(workspace, agent, google_connection, drive) -> Source:
    items = [{"id": drive["support"], "type": "folder"}, {"id": drive["archive"], "type": "folder"}]
    source = _create(workspace, agent, google_connection, items)
    assert set(_documents(source)) == {"Returns", "Shipping", "Kettle care"}
    return source


def test_docs_removed_by_a_google_sync_are_counted_in_its_outcome(folders_source, google, drive):
    google.trash(drive["care"])
    google.move(drive["shipping"], "root")  # out of every picked folder
    resync(folders_source)
    source = _source(folders_source)
    assert source.status == Status.DONE
    assert source.last_sync["removed"] == 2, source.last_sync
    assert set(_documents(source)) == {"Returns"}
    assert "vinegar" not in _text(source) and "Canada" not in _text(source)


def _chunk_ids(source: Source) -> set[int]:
    with workspace_scope(source.workspace_id):
        return set(Chunk.objects.filter(source_id=source.id).values_list("id", flat=True))


def test_a_doc_moved_between_two_picked_folders_is_neither_removed_nor_duplicated(
    folders_source, google, drive
):
    before = _documents(folders_source)["Returns"]
    chunks = _chunk_ids(folders_source)
    google.move(drive["returns"], drive["archive"])
    _, indexed = resync(folders_source)
    source = _source(folders_source)
    documents = _documents(source)
    assert set(documents) == {"Returns", "Shipping", "Kettle care"}
    assert documents["Returns"].id == before.id  # the same document, not a new one
    assert indexed == [] and _chunk_ids(source) == chunks  # same text: nothing embedded again
    assert source.last_sync["removed"] == 0 and source.last_sync["added"] == 0, source.last_sync


def test_a_shortcut_in_a_picked_folder_syncs_the_doc_it_points_to(
    workspace, agent, google_connection, google, drive
):
    warranty = google.add_doc("Warranty", "Every kettle has a two-year warranty.")  # outside the folder
    shortcut = google.add_shortcut("Warranty (shortcut)", warranty, folder=drive["support"])
    google.add_shortcut("Returns again", drive["returns"], folder=drive["support"])  # a Doc already there
    google.add_shortcut("Archive link", drive["archive"], folder=drive["support"])  # not a Doc: ignored
    source = _create(workspace, agent, google_connection, [{"id": drive["support"], "type": "folder"}])
    documents = _documents(source)
    assert set(documents) == {"Returns", "Shipping", "Warranty"}
    assert documents["Warranty"].url == google.files[warranty]["webViewLink"]
    assert "two-year warranty" in _text(source)

    google.edit_doc(warranty, "Every kettle has a three-year warranty.")  # the target changes
    _, indexed = resync(source)
    assert len(indexed) == 1 and "three-year" in _text(source)

    google.trash(shortcut)  # the shortcut goes; the Doc stays in Drive, outside the folder
    resync(source)
    assert set(_documents(source)) == {"Returns", "Shipping"}
    assert _source(source).last_sync["removed"] == 1


def test_a_picked_shortcut_stands_for_its_doc(workspace, agent, google_connection, google, drive):
    shortcut = google.add_shortcut("Plants", drive["loose"])
    source = _create(workspace, agent, google_connection, [{"id": shortcut}])
    assert set(_documents(source)) == {"Plant rota"} and "ficus" in _text(source)


def test_a_trashed_doc_is_removed_and_comes_back_when_restored(folders_source, google, drive):
    google.trash(drive["care"])
    google.requests.clear()
    resync(folders_source)
    source = _source(folders_source)
    assert "Kettle care" not in _documents(source) and "vinegar" not in _text(source)
    assert source.last_sync["removed"] == 1
    # Removed on evidence: Drive was asked about the Doc the listing left out, and said trashed.
    assert ("GET", f"/drive/v3/files/{drive['care']}") in google.requests

    google.restore(drive["care"])
    _, indexed = resync(folders_source)
    source = _source(folders_source)
    assert len(indexed) == 1 and "Kettle care" in _documents(source) and "vinegar" in _text(source)
    assert source.last_sync["added"] == 1 and source.last_sync["removed"] == 0


def test_a_trashed_picked_doc_is_removed_and_comes_back_when_restored(
    workspace, agent, google_connection, google, drive
):
    source = _create(workspace, agent, google_connection, [{"id": drive["loose"]}, {"id": drive["returns"]}])
    google.trash(drive["loose"])
    resync(source)
    assert set(_documents(source)) == {"Returns"} and _source(source).last_sync["removed"] == 1
    google.restore(drive["loose"])
    resync(source)
    assert set(_documents(source)) == {"Returns", "Plant rota"} and "ficus" in _text(source)


def test_the_picker_offers_a_shortcut_as_what_it_points_to(google_connection, google, drive):
    from integrations.google.kind import GoogleDocsKind

    google.add_shortcut("Support link", drive["support"])
    google.add_shortcut("Returns link", drive["returns"])
    offered, _ = GoogleDocsKind().pickable(connection=google_connection, query="link", cursor=None)
    assert {(o["title"], o["type"]) for o in offered} == {
        ("Support link", "folder"),
        ("Returns link", "document"),
    }


def test_drive_answers_hold_only_the_fields_asked_for(google, drive, google_connection):
    """The fake answers like Drive: without shortcutDetails in `fields`, a shortcut's target is unknown."""
    from integrations.google.client import DriveClient

    shortcut = google.add_shortcut("Returns link", drive["returns"])
    client = DriveClient(google_connection)
    assert client.call(f"/drive/v3/files/{shortcut}") == {
        "kind": "drive#file",
        "id": shortcut,
        "name": "Returns link",
        "mimeType": "application/vnd.google-apps.shortcut",
    }
    found = client.file(shortcut)
    assert found["shortcutDetails"]["targetId"] == drive["returns"]
    assert len(found["modifiedTime"].rsplit(".", 1)[1]) == 4  # milliseconds and the Z
