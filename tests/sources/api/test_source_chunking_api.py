"""PATCH /api/v1/sources/{id} sets a source's chunk size, overlap and record separator: validated by field,
unsent fields kept, null back to the deployment's default, a change indexes it again (once, even with its
labels changed in the same call)."""

from __future__ import annotations

import pytest

from ingestion.indexing import source_index
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db

RECORDS = "\n---\n".join(
    f"Q{i}: what about item {i}?\nA: item {i} " + "is described at length. " * 6 for i in range(10)
)


def patch(api, source, body):
    return api.patch(f"/api/v1/sources/{source.id}", body, format="json")


def test_patch_sets_the_chunking_and_reindexes(api, workspace, agent):
    source = index_text(workspace, agent, "FAQ", RECORDS)
    response = patch(api, source, {"chunk_size": 600, "record_separator": "---"})
    assert response.status_code == 200, response.content
    assert response.json()["config"]["chunk_size"] == 600
    assert response.json()["config"]["record_separator"] == "---"
    assert response.json()["status"] == "pending"
    with workspace_scope(workspace.id):
        source_index(source=Source.objects.get(id=source.id))
        texts = list(Chunk.objects.filter(source_id=source.id).values_list("text", flat=True))
    assert texts and all(t.startswith("Q") and len(t) <= 600 for t in texts)


def test_unsent_fields_are_kept_and_null_resets_one(api, workspace, agent):
    source = index_text(workspace, agent, "FAQ", RECORDS)
    patch(api, source, {"chunk_size": 600, "chunk_overlap": 100, "record_separator": "---"})
    with workspace_scope(workspace.id):
        Source.objects.filter(id=source.id).update(status="done")
    body = patch(api, source, {"chunk_overlap": None}).json()
    assert body["config"]["chunk_size"] == 600 and body["config"]["record_separator"] == "---"
    assert "chunk_overlap" not in body["config"]


def test_labels_and_chunking_together_reindex_once(api, workspace, agent):
    source = index_text(workspace, agent, "FAQ", RECORDS)
    response = patch(api, source, {"audiences": ["staff"], "record_separator": "---"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["audiences"] == ["staff"] and body["config"]["record_separator"] == "---"
    assert body["status"] == "pending"


def test_bad_chunking_is_refused_by_field_and_nothing_changes(api, workspace, agent):
    source = index_text(workspace, agent, "FAQ", RECORDS)
    response = patch(api, source, {"title": "Renamed", "chunk_size": 1000, "chunk_overlap": 900})
    assert response.status_code == 400
    assert "chunk_overlap" in str(response.json())
    assert patch(api, source, {"chunk_size": 10}).status_code == 400
    with workspace_scope(workspace.id):
        source.refresh_from_db()
    assert source.title == "FAQ" and source.status == "done" and "chunk_size" not in source.config


def test_an_outsider_cannot_change_it(outsider_api, workspace, agent):
    source = index_text(workspace, agent, "FAQ", RECORDS)
    assert patch(outsider_api, source, {"chunk_size": 600}).status_code == 404
