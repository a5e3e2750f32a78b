"""Uploads on a real worker: files parsed in isolation, kept as segments, reindexed without the file,
deleted without leaving anything behind, and refused clearly when too large."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from retrieval.models import KeywordPosting
from sources.models import Chunk, Document, Source
from tests.factories import SHARED_DATA, wait_for
from tests.ingestion.parsers.builders import zip_bomb_docx

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
DOCUMENTS = SHARED_DATA / "documents"


@pytest.fixture(autouse=True)
def media_root(settings):
    """The test run's media folder, which its worker processes share; emptied around each test."""
    root = Path(settings.MEDIA_ROOT)
    shutil.rmtree(root, ignore_errors=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def upload(api, agent, *files):
    return api.post(
        "/api/v1/sources",
        {"agent": agent.id, "file": [SimpleUploadedFile(name, data) for name, data in files]},
        format="multipart",
    )


def real(path):
    return (path.rsplit("/", 1)[-1], (DOCUMENTS / path).read_bytes())


def finished(api, source_id):
    body = api.get(f"/api/v1/sources/{source_id}").json()
    return body if body["status"] in ("done", "failed") else None


def stored_files(source_id):
    source = Source.unscoped.get(id=source_id)
    _dirs, files = default_storage.listdir(f"uploads/{source.workspace_id}/{source.id}")
    return sorted(files)


def test_two_files_upload_parse_and_become_searchable(celery_worker, api, agent, media_root, settings):
    response = upload(
        api, agent, real("docx/zen-of-python.docx"), real("xlsx/readxl-deaths-messy-layout.xlsx")
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert [s["kind"] for s in created] == ["upload", "upload"] and all(
        s["status"] == "pending" for s in created
    )
    results = [wait_for(lambda sid=s["id"]: finished(api, sid), timeout=120) for s in created]
    assert [r["status"] for r in results] == ["done", "done"], [r["error"] for r in results]
    assert results[0]["title"] == "zen-of-python.docx"
    files = stored_files(created[0]["id"])
    assert files[0] == "original.docx" and files[-1] == "segments.json"
    assert files[1:-1] == [f"segment-{n}.txt" for n in range(len(files) - 2)] and len(files) > 2

    hits = api.get("/api/v1/search", {"q": "David Bowie profession", "top_k": 3}).json()["results"]
    assert "Name: David Bowie | Profession: musician" in hits[0]["text"]
    hits = api.get("/api/v1/search", {"q": "namespaces honking great idea", "top_k": 3}).json()["results"]
    assert hits[0]["source"]["title"] == "zen-of-python.docx"
    assert hits[0]["source"]["url"] is None

    preview = api.get(f"/api/v1/sources/{created[1]['id']}/preview").json()
    assert preview["documents"] and preview["chunks"]
    assert any("David Bowie" in c["text"] for c in preview["chunks"])


def test_reindex_needs_no_reupload_and_says_so_when_segments_are_gone(celery_worker, api, agent):
    source_id = upload(api, agent, real("docx/zen-of-python.docx")).json()[0]["id"]
    wait_for(lambda: finished(api, source_id), timeout=120)
    source = Source.unscoped.get(id=source_id)
    default_storage.delete(source.state["storage_path"])  # the original is not needed to reindex
    chunks_before = Chunk.unscoped.filter(source_id=source_id).count()
    assert api.post(f"/api/v1/sources/{source_id}/reindex").status_code == 202
    body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "done" and body["chunks_count"] == chunks_before

    for name in stored_files(source_id):
        default_storage.delete(f"uploads/{source.workspace_id}/{source.id}/{name}")
    assert api.post(f"/api/v1/sources/{source_id}/reindex").status_code == 202
    body = wait_for(lambda: finished(api, source_id), timeout=60)
    assert body["status"] == "failed" and "re-upload needed" in body["error"]
    assert body["state"]["reupload_needed"] is True


def test_delete_leaves_no_row_point_posting_or_file_behind(celery_worker, api, agent, media_root):
    source_id = upload(api, agent, real("xlsx/readxl-deaths-messy-layout.xlsx")).json()[0]["id"]
    wait_for(lambda: finished(api, source_id), timeout=120)
    assert Chunk.unscoped.filter(source_id=source_id, embedding__isnull=False).exists()
    assert KeywordPosting.unscoped.exists()
    assert api.delete(f"/api/v1/sources/{source_id}").status_code == 204
    assert not Document.unscoped.filter(source_id=source_id).exists()
    assert not Chunk.unscoped.exists() and not KeywordPosting.unscoped.exists()
    assert not any(media_root.rglob("*.*"))  # the original and its segments are gone


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("bomb.docx", zip_bomb_docx(64), "zip bomb"),
        ("broken.pdf", (DOCUMENTS / "pdf/multicolumn-latex.pdf").read_bytes()[:5000], "truncated or corrupt"),
        (
            "secret.pdf",
            (DOCUMENTS / "pdf/encrypted-libreoffice-openpassword.pdf").read_bytes(),
            "password protected",
        ),
    ],
)
def test_bad_files_fail_with_a_clear_reason_and_the_worker_lives(
    celery_worker, api, agent, name, data, reason
):
    source_id = upload(api, agent, (name, data)).json()[0]["id"]
    body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "failed" and reason in body["error"].lower(), body["error"]
    assert Source.unscoped.get(id=source_id).error_detail
    assert celery_worker.poll() is None  # the worker process is alive


def test_a_file_whose_extension_lies_is_parsed_by_its_content(celery_worker, api, agent):
    _name, data = real("docx/zen-of-python.docx")
    source_id = upload(api, agent, ("notes.pdf", data)).json()[0]["id"]
    assert wait_for(lambda: finished(api, source_id), timeout=120)["status"] == "done"


def test_size_limits_are_enforced_before_anything_is_stored(api, agent, settings, media_root):
    settings.UPLOAD_MAX_FILE_BYTES = 1000
    response = upload(api, agent, ("big.txt", b"x" * 1001))
    assert response.status_code == 413 and "limit per file" in response.json()["error"]["fields"]["file"][0]
    settings.UPLOAD_MAX_FILE_BYTES = 10_000
    settings.UPLOAD_MAX_WORKSPACE_BYTES = 1500
    response = upload(api, agent, ("a.txt", b"y" * 1000), ("b.txt", b"z" * 1000))
    assert response.status_code == 413 and "workspace" in response.json()["error"]["fields"]["file"][0]
    assert Source.unscoped.count() == 0 and not media_root.exists()


def test_filenames_are_never_used_as_paths(api, agent, media_root, django_capture_on_commit_callbacks):
    response = upload(api, agent, ("../../etc/passwd.txt", b"hello there"))
    assert response.status_code == 201
    source = Source.unscoped.get()
    assert source.config["filename"] == "passwd.txt"
    assert source.state["storage_path"] == f"uploads/{source.workspace_id}/{source.id}/original.txt"
    assert (media_root / source.state["storage_path"]).read_bytes() == b"hello there"


def test_outsider_cannot_preview_reindex_or_delete_our_upload(api, outsider_api, agent):
    source_id = upload(api, agent, ("a.txt", b"hello there")).json()[0]["id"]
    for method, path in [("get", "preview"), ("post", "reindex")]:
        assert getattr(outsider_api, method)(f"/api/v1/sources/{source_id}/{path}").status_code == 404
    assert outsider_api.delete(f"/api/v1/sources/{source_id}").status_code == 404
