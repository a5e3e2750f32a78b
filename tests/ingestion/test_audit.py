"""`manage.py audit_store`: each inconsistency is provoked on the real database, store and file storage,
found, and repaired through the code that owns it, on both stores."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from ingestion.audit import audit
from ingestion.lifecycle import source_index_now, upload_create
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Each test's own file storage: folders left by another test's rolled-back rows are not this one's."""
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture(params=["pgvector", "qdrant"])
def store(request, settings):
    from config.backends import vector_stores

    if request.param == "qdrant":
        settings.VECTOR_STORES = {
            "default": {
                "BACKEND": "retrieval.stores.qdrant.QdrantStore",
                "OPTIONS": {"location": ":memory:", "collection": "audit_tests"},
            }
        }
    return vector_stores["default"]


def found(report) -> dict[str, int]:
    return {kind: totals["found"] for kind, totals in report.totals().items() if totals["found"]}


def knowledge(workspace, agent):
    text = index_text(workspace, agent, "Returns", "Return any kettle within 30 days of purchase.")
    other = index_text(workspace, agent, "Care", "Descale the kettle every four weeks with citric acid.")
    upload = SimpleUploadedFile("care.txt", b"Keep the lid closed while the water boils.")
    (uploaded,) = upload_create(workspace=workspace, agent_id=agent.id, files=[upload])
    source_index_now(source=uploaded)
    return text, other, Source.unscoped.get(id=uploaded.id)


def test_a_consistent_workspace_has_nothing_to_report(store, workspace, agent):
    knowledge(workspace, agent)
    report = audit()
    assert report.findings == [] and report.workspaces >= 1


def test_chunk_rows_deleted_behind_the_stores_back_are_found_and_repaired(store, workspace, agent):
    text, _other, _uploaded = knowledge(workspace, agent)
    with workspace_scope(workspace.id):
        gone = {str(i) for i in Chunk.objects.filter(source_id=text.id).values_list("id", flat=True)}
        Chunk.objects.filter(source_id=text.id).delete()  # rows only: the store is never told
    report = audit()
    if store.__class__.__name__ == "QdrantStore":
        # The points outlive their chunks.
        assert found(report) == {"orphan_points": len(gone), "source_counters": 1}
        assert store.point_ids(workspace_id=workspace.id) >= gone
    else:
        # The vectors went with the rows and the postings by cascade, but N and the total length did not.
        assert found(report) == {"keyword_stats": 1, "source_counters": 1}
    repaired = audit(repair=True)
    assert repaired.totals() == {
        kind: {"found": n, "repaired": n}
        for kind, n in {**dict.fromkeys(repaired.totals(), 0), **found(report)}.items()
    }
    assert not store.point_ids(workspace_id=workspace.id) & gone
    assert Source.unscoped.get(id=text.id).chunks_count == 0
    assert audit().findings == []


def test_chunks_that_lost_their_vectors_are_reindexed_through_the_lifecycle(
    store, workspace, agent, django_capture_on_commit_callbacks
):
    text, other, _uploaded = knowledge(workspace, agent)
    with workspace_scope(workspace.id):
        lost = [str(i) for i in Chunk.objects.filter(source_id=text.id).values_list("id", flat=True)]
    store.delete(workspace_id=workspace.id, chunk_ids=lost)
    report = audit()
    assert found(report) == {"chunks_without_vectors": len(lost)}
    with django_capture_on_commit_callbacks() as queued:
        repaired = audit(repair=True)
    assert repaired.totals()["chunks_without_vectors"] == {"found": len(lost), "repaired": len(lost)}
    assert len(queued) == 1  # one reindex job, for that source only
    assert Source.unscoped.get(id=text.id).status == "pending"
    assert Source.unscoped.get(id=other.id).status == "done"
    source_index_now(source=Source.unscoped.get(id=text.id))  # what the queued job runs
    assert store.point_ids(workspace_id=workspace.id) >= set(lost)
    assert audit().findings == []


def test_pgvector_postings_left_beside_a_cleared_vector_and_drifted_statistics(settings, workspace, agent):
    text, _other, _uploaded = knowledge(workspace, agent)
    with workspace_scope(workspace.id):
        half = str(Chunk.objects.filter(source_id=text.id).values_list("id", flat=True).first())
    with connection.cursor() as cursor:
        cursor.execute("UPDATE sources_chunk SET embedding = NULL WHERE id = %s", [half])
        cursor.execute(
            "UPDATE retrieval_keywordstats SET chunk_count = chunk_count + 7 WHERE workspace_id = %s",
            [workspace.id],
        )
    report = audit()
    assert found(report) == {"chunks_without_vectors": 1, "postings_without_vectors": 1, "keyword_stats": 1}
    audit(repair=True)
    source_index_now(source=Source.unscoped.get(id=text.id))
    assert audit().findings == []


def test_upload_folders_without_a_source_are_removed(store, workspace, agent):
    _text, _other, uploaded = knowledge(workspace, agent)
    stray = default_storage.save(f"uploads/{workspace.id}/987654/original.txt", ContentFile(b"left behind"))
    # A source deleted past the lifecycle (a queryset delete) leaves its folder, and its points, behind.
    with workspace_scope(workspace.id):
        Source.objects.filter(id=uploaded.id).delete()
    report = audit()
    assert found(report)["orphan_files"] == 2
    audit(repair=True)
    assert not default_storage.exists(stray)
    assert not default_storage.exists(f"uploads/{workspace.id}/{uploaded.id}/original.txt")
    assert audit().findings == []


def test_source_counters_that_dont_add_up_are_derived_again(store, workspace, agent):
    text, _other, _uploaded = knowledge(workspace, agent)
    Source.unscoped.filter(id=text.id).update(pages_done=42, chunks_count=0)
    assert found(audit()) == {"source_counters": 1}
    audit(repair=True)
    source = Source.unscoped.get(id=text.id)
    assert (source.pages_done, source.chunks_count) == (1, Chunk.unscoped.filter(source_id=text.id).count())


def test_a_skipped_count_that_doesnt_add_up_is_derived_again(store, workspace, agent):
    text, _other, _uploaded = knowledge(workspace, agent)
    Source.unscoped.filter(id=text.id).update(pages_skipped=3)
    assert found(audit()) == {"source_counters": 1}
    audit(repair=True)
    assert Source.unscoped.get(id=text.id).pages_skipped == 0


def test_a_busy_workspace_is_reported_but_its_store_is_not_repaired(store, workspace, agent):
    text, other, _uploaded = knowledge(workspace, agent)
    with workspace_scope(workspace.id):
        lost = [str(i) for i in Chunk.objects.filter(source_id=text.id).values_list("id", flat=True)]
    store.delete(workspace_id=workspace.id, chunk_ids=lost)
    Source.unscoped.filter(id=other.id).update(status="crawling")  # something is in flight
    report = audit(repair=True)
    assert report.busy == [workspace.id]
    assert report.totals()["chunks_without_vectors"] == {"found": len(lost), "repaired": 0}
    assert Source.unscoped.get(id=text.id).status == "done"


def test_the_command_prints_a_table_and_a_json_summary(store, workspace, agent, other_workspace):
    text, _other, _uploaded = knowledge(workspace, agent)
    Source.unscoped.filter(id=text.id).update(pages_total=9)
    out = io.StringIO()
    call_command("audit_store", "--workspace", str(workspace.id), stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert lines[0].split()[:4] == ["class", "workspace", "found", "repaired"]
    assert lines[1].split()[:4] == ["source_counters", str(workspace.id), "1", "0"]
    summary = json.loads(lines[-1])
    assert summary["inconsistencies"] == 1 and summary["workspaces"] == 1
    out = io.StringIO()
    call_command("audit_store", "--repair", "--json", stdout=out)
    assert json.loads(out.getvalue())["totals"]["source_counters"] == {"found": 1, "repaired": 1}
    out = io.StringIO()
    call_command("audit_store", "--json", stdout=out)
    assert json.loads(out.getvalue())["inconsistencies"] == 0
