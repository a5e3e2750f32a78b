"""Google Docs sources against the fake Google over real HTTP: OAuth with PKCE, picking, export, incremental
resync, removal on evidence, quota errors, an expired token refreshed once, invalid_grant -> reconnect."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from ingestion import lifecycle
from integrations import sync
from integrations.models import Connection
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.integrations.test_notion_sync import run_sync

pytestmark = pytest.mark.django_db

RETURNS = "Returns policy\n\nCustomers may return a kettle within 45 days.\n\tModel\tDays\n\tAcme One\t45\n"


def _create(workspace, agent, connection, items) -> Source:
    return lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="gdoc",
        title="",
        payload={"connection": connection.id, "items": items},
    )


@pytest.fixture
def drive(google):
    folder = google.add_folder("Support")
    ids = {
        "folder": folder,
        "returns": google.add_doc("Returns", RETURNS, folder=folder),
        "shipping": google.add_doc("Shipping", "We ship to Canada in three days.", folder=folder),
        "care": google.add_doc("Kettle care", "Descale monthly with vinegar.", folder=folder),
        "loose": google.add_doc("Plant rota", "Water the ficus on Fridays."),
    }
    return ids


def test_an_owner_connects_google_with_pkce_and_offline_access(client, owner, workspace, google):
    client.force_login(owner)
    authorize = client.post("/app/integrations/google/connect")["Location"]
    query = parse_qs(urlsplit(authorize).query)
    assert query["access_type"] == ["offline"] and query["code_challenge_method"] == ["S256"]
    assert query["scope"] == ["https://www.googleapis.com/auth/drive.readonly"]
    allow = re.search(r'id="allow" href="([^"]+)"', httpx.get(authorize).text).group(1).replace("&amp;", "&")
    callback = {k: v[0] for k, v in parse_qs(urlsplit(allow).query).items()}
    client.get("/app/integrations/google/callback", callback)
    with workspace_scope(workspace.id):
        [connection] = Connection.objects.all()
    assert (connection.account_email, connection.account_id) == ("ada@acme.test", "0471-ada")
    assert connection.refresh_token in google.refresh_tokens and connection.token_expires_at is not None


def test_a_folder_and_a_document_sync_and_resync_incrementally(
    workspace, agent, google_connection, google, drive
):
    source = _create(
        workspace,
        agent,
        google_connection,
        [{"id": drive["folder"], "type": "folder"}, {"id": drive["loose"]}],
    )
    run_sync(source)
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
        documents = {d.title: d for d in source.documents.all()}
    assert source.status == Status.DONE, source.error_detail
    assert set(documents) == {"Returns", "Shipping", "Kettle care", "Plant rota"}
    assert (
        documents["Returns"].url == f"https://docs.google.com/document/d/{drive['returns']}/edit?usp=drivesdk"
    )
    assert documents["Returns"].text.startswith("Returns\n\nReturns policy\n\nCustomers may return")
    assert "Acme One | 45" in documents["Returns"].text

    google.edit_doc(drive["shipping"], "We ship to Chile in a week.")
    google.files[drive["care"]]["trashed"] = True  # gone from the folder's complete listing
    _, indexed = run_sync_again(source)
    assert len(indexed) == 1
    with workspace_scope(workspace.id):
        texts = " ".join(Chunk.objects.filter(source_id=source.id).values_list("text", flat=True))
        titles = set(Document.objects.filter(source_id=source.id).values_list("title", flat=True))
    assert "Chile" in texts and "Canada" not in texts and "vinegar" not in texts
    assert titles == {"Returns", "Shipping", "Plant rota"}


def run_sync_again(source):
    assert lifecycle.source_recrawl(source=source)
    return run_sync(source)


def test_an_expired_access_token_is_refreshed_once(workspace, agent, google_connection, google, drive):
    source = _create(workspace, agent, google_connection, [{"id": drive["returns"]}])
    google.expire_tokens()
    run_sync(source)
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == Status.DONE
        assert Connection.objects.get(id=google_connection.id).access_token in google.access_tokens
    assert google.refreshed == 1


def test_invalid_grant_asks_for_a_reconnect(workspace, agent, google_connection, google, drive):
    source = _create(workspace, agent, google_connection, [{"id": drive["returns"]}])
    google.expire_tokens()
    google.refresh_tokens.clear()  # the person revoked Grounded in their Google account
    run_sync(source)
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
        connection = Connection.objects.get(id=google_connection.id)
    assert connection.status == "needs_reconnect" and "invalid_grant" in connection.last_error_detail
    assert source.status == Status.FAILED and source.error == "Reconnect Google to sync this source."


def test_a_quota_error_requeues_and_a_server_error_retries_without_removing(
    workspace, agent, google_connection, google, drive
):
    source = _create(workspace, agent, google_connection, [{"id": drive["folder"], "type": "folder"}])
    run_sync(source)
    google.quota_next = 1
    assert lifecycle.source_recrawl(source=source)
    with workspace_scope(workspace.id):
        outcome = sync.source_sync(source=Source.objects.get(id=source.id))
    assert outcome.requeue_in is not None and outcome.retry_in is None
    google.fail_next = 1
    time.sleep(outcome.requeue_in)  # the connection is paused meanwhile
    with workspace_scope(workspace.id):
        outcome = sync.source_sync(source=Source.objects.get(id=source.id), requeues=1)
        assert outcome.retry_in is not None
        assert Document.objects.filter(source_id=source.id).count() == 3


def test_the_google_picker_offers_docs_and_folders_and_adds_a_source(
    client, owner, agent, workspace, google_connection, google, drive
):
    client.force_login(owner)
    found = client.get(f"/app/agents/{agent.id}/sources/from/google", {"q": "ret"}).content.decode()
    assert "Returns" in found and "Plant rota" not in found
    folders = client.get(f"/app/agents/{agent.id}/sources/from/google", {"q": "support"}).content.decode()
    assert "Folder (every Doc in it)" in folders
    client.post(
        f"/app/agents/{agent.id}/sources/from/google", {"item": [f"folder:{drive['folder']}:Support"]}
    )
    with workspace_scope(workspace.id):
        source = Source.objects.get(kind="gdoc")
    assert source.config["items"] == [{"id": drive["folder"], "type": "folder", "title": "Support"}]
    assert "include_children" not in source.config
