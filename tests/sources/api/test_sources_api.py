"""POST/GET/DELETE /api/v1/sources: validation, tenancy and the pending status."""

import pytest
from django.test import override_settings

from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def create_text(api, agent_row, **overrides):
    body = {
        "kind": "text",
        "title": "Returns policy",
        "content": "You can return items within 30 days.",
        "agent": agent_row.id,
    }
    body.update(overrides)
    return api.post("/api/v1/sources", body, format="json")


def test_text_source_is_created_pending(api, agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = create_text(api, agent)
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "pending"
    assert response.json()["kind"] == "text"
    assert len(callbacks) == 1  # the indexing job is queued only once the row is committed
    with workspace_scope(agent.workspace_id):
        source = Source.objects.get(id=response.json()["id"])
        assert source.documents.get().text == "You can return items within 30 days."


def test_source_can_be_read_back(api, agent):
    source_id = create_text(api, agent).json()["id"]
    response = api.get(f"/api/v1/sources/{source_id}")
    assert response.status_code == 200
    assert response.json()["title"] == "Returns policy"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"content": None}, "content"),
        ({"content": "   "}, "content"),
        ({"kind": "carrier-pigeon"}, "kind"),
        ({"title": "x" * 301}, "title"),  # text without a title is titled from its first line
        ({"agent": 999999}, "agent"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(api, agent, overrides, field):
    body_overrides = {k: v for k, v in overrides.items() if v is not None}
    if overrides.get("content", "x") is None:
        response = api.post(
            "/api/v1/sources", {"kind": "text", "title": "t", "agent": agent.id}, format="json"
        )
    else:
        response = create_text(api, agent, **body_overrides)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"], response.json()
    assert Source.unscoped.count() == 0 and Document.unscoped.count() == 0


@override_settings(TEXT_SOURCE_MAX_CHARS=1000)
def test_content_over_the_size_limit_is_refused(api, agent):
    response = create_text(api, agent, content="a" * 1001)
    assert response.status_code == 400
    assert "limit" in response.json()["error"]["fields"]["content"][0]
    assert Source.unscoped.count() == 0


def test_an_agent_of_another_workspace_cannot_be_used(api, other_agent):
    response = create_text(api, other_agent)
    assert response.status_code == 400
    assert "agent" in response.json()["error"]["fields"]
    assert Source.unscoped.count() == 0


def test_outsider_gets_404_for_another_workspaces_source(api, outsider_api, agent):
    source_id = create_text(api, agent).json()["id"]
    assert outsider_api.get(f"/api/v1/sources/{source_id}").status_code == 404
    assert outsider_api.delete(f"/api/v1/sources/{source_id}").status_code == 404
    assert outsider_api.get("/api/v1/sources").json()["results"] == []
    assert Source.unscoped.filter(id=source_id).exists()


def test_requests_without_a_valid_key_are_refused(client, api, agent):
    assert client.get("/api/v1/sources").status_code in (401, 403)
    assert client.get("/api/v1/sources", HTTP_AUTHORIZATION="Bearer gk_deadbeef_wrong").status_code == 401
    assert client.get("/api/v1/sources", HTTP_AUTHORIZATION="Bearer nonsense").status_code == 401


def test_a_revoked_key_is_refused(workspace, agent):
    from django.utils import timezone
    from rest_framework.test import APIClient

    from sources.services import api_key_create

    key, raw = api_key_create(workspace=workspace, name="old")
    with workspace_scope(workspace.id):
        type(key).objects.filter(id=key.id).update(revoked_at=timezone.now())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/sources").status_code == 401


def test_delete_removes_documents_and_chunks(api, agent):
    source_id = create_text(api, agent).json()["id"]
    assert api.delete(f"/api/v1/sources/{source_id}").status_code == 204
    assert not Source.unscoped.filter(id=source_id).exists()
    assert Document.unscoped.count() == 0 and Chunk.unscoped.count() == 0


def test_session_user_sees_only_their_workspace(client, owner, outsider, api, agent):
    create_text(api, agent)
    client.force_login(owner)
    assert len(client.get("/api/v1/sources").json()["results"]) == 1
    client.force_login(outsider)
    assert client.get("/api/v1/sources").json()["results"] == []


def test_openapi_schema_is_published(client):
    response = client.get("/api/v1/schema")
    assert response.status_code == 200
    assert b"/api/v1/sources" in response.content


def test_a_member_can_read_but_not_change_through_the_session_api(client, member, owner, api, agent):
    source_id = create_text(api, agent).json()["id"]
    client.force_login(member)
    assert client.get(f"/api/v1/sources/{source_id}").status_code == 200
    body = {"kind": "text", "title": "x", "content": "y", "agent": agent.id}
    assert client.post("/api/v1/sources", body, content_type="application/json").status_code == 403
    assert client.delete(f"/api/v1/sources/{source_id}").status_code == 403
    assert client.post(f"/api/v1/sources/{source_id}/reindex").status_code == 403
    client.force_login(owner)
    assert client.delete(f"/api/v1/sources/{source_id}").status_code == 204


def test_retry_failed_queues_only_the_failed_pages_of_a_web_source(
    api, outsider_api, agent, django_capture_on_commit_callbacks
):
    with workspace_scope(agent.workspace_id):
        source = Source.objects.create(
            agent=agent, kind="url", title="Site", config={"url": "https://example.com/"}, status="failed"
        )
        failed = Document.objects.create(
            source=source, url="https://example.com/a", status="failed", error="x"
        )
        done = Document.objects.create(source=source, url="https://example.com/b", status="done")
    assert outsider_api.post(f"/api/v1/sources/{source.id}/retry-failed").status_code == 404
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(f"/api/v1/sources/{source.id}/retry-failed")
    assert response.status_code == 202, response.content
    assert response.json()["retried"] == 1 and response.json()["status"] == "crawling"
    assert len(callbacks) == 1  # the page jobs are published once the change is committed
    with workspace_scope(agent.workspace_id):
        assert Document.objects.get(id=failed.id).status == "pending"
        assert Document.objects.get(id=done.id).status == "done"
    again = api.post(f"/api/v1/sources/{source.id}/retry-failed")  # now busy: nothing is queued twice
    assert again.status_code == 400


def test_retry_failed_on_a_source_without_failures_is_refused(api, agent):
    source_id = create_text(api, agent).json()["id"]
    with workspace_scope(agent.workspace_id):
        Source.objects.filter(id=source_id).update(status="done")
    response = api.post(f"/api/v1/sources/{source_id}/retry-failed")
    assert response.status_code == 400
    assert "no failed pages" in response.json()["error"]["fields"]["source"][0]
