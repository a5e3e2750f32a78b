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
