"""Where a long upload has got to (reading page 3 of 15, OCR, embedding n of m), written into the source's
state while it runs: merged in SQL, a few writes a second at most, and set by the real parse and index."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from ingestion import lifecycle
from ingestion.jobs.progress import Progress
from ingestion.kinds.upload import upload_index
from sources.models import Source
from sources.tenancy import workspace_scope
from tests.factories import SHARED_DATA


@pytest.mark.django_db
def test_progress_is_merged_into_the_state_throttled_and_cleared(workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="upload", title="a.pdf", state={"parsed": False})
    with workspace_scope(workspace.id):  # as in the job that reports
        progress = Progress(source.id)
        progress("parsing", 1, 15)
        # Another writer changes the state meanwhile: the next report keeps what it wrote.
        Source.unscoped.filter(id=source.id).update(state={"parsed": False, "size": 42, "progress": {}})
        progress("parsing", 2, 15)  # within the second: not written
        assert Source.unscoped.get(id=source.id).state == {"parsed": False, "size": 42, "progress": {}}
        progress("ocr", 1, 4)  # a new stage: written at once, merged
        state = Source.unscoped.get(id=source.id).state
        assert state == {"parsed": False, "size": 42, "progress": {"stage": "ocr", "done": 1, "total": 4}}
        progress("ocr", 4, 4)  # a stage's last step: written at once
        assert Source.unscoped.get(id=source.id).state["progress"]["done"] == 4
        progress.reported({"stage": "embedding", "done": "3", "total": 9})  # as the parser's child sends it
        assert Source.unscoped.get(id=source.id).state["progress"] == {
            "stage": "embedding",
            "done": 3,
            "total": 9,
        }
        progress.clear()
        assert Source.unscoped.get(id=source.id).state == {"parsed": False, "size": 42}


@pytest.mark.django_db(transaction=True)
def test_a_pdf_upload_reports_its_pages_then_its_embedding(workspace, agent, settings, monkeypatch):
    from ingestion.parsers import isolation

    monkeypatch.setattr(isolation, "PROGRESS_POLL_S", 0.2)  # look at the child more often than once a second
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)
    pdf = SHARED_DATA / "documents" / "pdf" / "federal-register-2020-17221.pdf"  # 15 pages, one scanned
    (source,) = lifecycle.upload_create(
        workspace=workspace,
        agent_id=agent.id,
        files=[SimpleUploadedFile(pdf.name, pdf.read_bytes(), content_type="application/pdf")],
    )
    seen: list[dict] = []
    stop = threading.Event()

    def watch() -> None:  # what the sources page would read, from its own connection
        try:
            while not stop.is_set():
                state = Source.unscoped.filter(id=source.id).values_list("state", flat=True).first() or {}
                if state.get("progress") and (not seen or seen[-1] != state["progress"]):
                    seen.append(state["progress"])
                time.sleep(0.05)
        finally:
            connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        upload_index(source=Source.unscoped.get(id=source.id))
    finally:
        stop.set()
        watcher.join()
    shutil.rmtree(Path(settings.MEDIA_ROOT), ignore_errors=True)
    done = Source.unscoped.get(id=source.id)
    assert done.status == "done", done.error
    stages = [report["stage"] for report in seen]
    assert {"parsing", "tables", "ocr"} & set(stages), seen  # the parser's own reports reached the row
    assert stages[-1] == "embedding" and seen[-1] == {"stage": "embedding", "done": 15, "total": 15}
    assert all(0 < r["done"] <= r["total"] for r in seen)
    parse_reports = [r for r in seen if r["stage"] == "parsing"]
    assert all(r["total"] == 15 for r in parse_reports)
