"""CSV and TSV uploads end to end, on a real worker, through the API and the web UI's add dialog (#52: "a
valid CSV whose quoted header cell holds a newline is refused as 'This file type is not supported'").

Neither path looks at the name or the content type the client sends before the parser registry sniffs
the bytes (ingestion.parsers.registry.sniff); these tests hold that, for the variants a browser or a
script sends: application/octet-stream and text/plain for a .csv, a .tsv, a CSV with no extension, and
a line break inside a quoted header cell written as LF, CRLF or a vertical tab (FileMaker, Word).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media_root(settings):
    root = Path(settings.MEDIA_ROOT)
    shutil.rmtree(root, ignore_errors=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def ledger(line_break: str, delimiter: str = ",") -> bytes:
    header = delimiter.join([f'"Payee{line_break}name"', f'"Amount{line_break}(EUR)"', "Paid on"])
    cells = (["Acme Fuel", "12.50", "2024-03-01"], ["Beta Rail", "7.00", "2024-03-02"])
    rows = [delimiter.join(row) for row in cells]
    return ("\r\n".join([header, *rows]) + "\r\n").encode()


ROWS = [
    "Payee name: Acme Fuel | Amount (EUR): 12.50 | Paid on: 2024-03-01",
    "Payee name: Beta Rail | Amount (EUR): 7.00 | Paid on: 2024-03-02",
]
VARIANTS = [
    ("ledger.csv", "application/octet-stream", ledger("\n")),
    ("ledger.csv", "text/plain", ledger("\r\n")),
    ("ledger.csv", "text/csv", ledger("\v")),
    ("ledger.tsv", "text/tab-separated-values", ledger("\n", "\t")),
    ("ledger", "application/octet-stream", ledger("\v", ";")),
]


def finished(api, source_id):
    body = api.get(f"/api/v1/sources/{source_id}").json()
    return body if body["status"] in ("done", "failed") else None


def chunk_texts(source_id: int) -> str:
    source = Source.unscoped.get(id=source_id)
    with workspace_scope(source.workspace_id):
        return "\n".join(Chunk.objects.filter(document__source_id=source_id).values_list("text", flat=True))


@pytest.mark.parametrize(("name", "content_type", "data"), VARIANTS)
def test_a_csv_with_a_line_break_in_a_quoted_header_cell_is_indexed_as_a_table_through_the_api(
    celery_worker, api, agent, name, content_type, data
):
    response = api.post(
        "/api/v1/sources",
        {"agent": agent.id, "file": [SimpleUploadedFile(name, data, content_type=content_type)]},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    source_id = response.json()[0]["id"]
    body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "done", body["error"]
    text = chunk_texts(source_id)
    assert all(row in text for row in ROWS), text


def test_the_same_file_through_the_web_ui_add_dialog(celery_worker, client, owner, api, agent):
    client.force_login(owner)
    upload = SimpleUploadedFile("ledger.csv", ledger("\v"), content_type="application/octet-stream")
    response = client.post(f"/app/agents/{agent.id}/sources/add", {"kind": "upload", "file": upload})
    assert response.status_code == 302, response.content
    with workspace_scope(agent.workspace_id):
        source_id = Source.objects.get(agent=agent, title="ledger.csv").id
    body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "done", body["error"]
    assert all(row in chunk_texts(source_id) for row in ROWS)


def test_an_outsider_cannot_see_the_uploaded_table(celery_worker, api, outsider_api, agent):
    response = api.post(
        "/api/v1/sources",
        {"agent": agent.id, "file": [SimpleUploadedFile("ledger.csv", ledger("\n"))]},
        format="multipart",
    )
    source_id = response.json()[0]["id"]
    assert wait_for(lambda: finished(api, source_id), timeout=120)["status"] == "done"
    assert outsider_api.get(f"/api/v1/sources/{source_id}").status_code == 404
    assert outsider_api.get(f"/api/v1/sources/{source_id}/preview").status_code == 404
