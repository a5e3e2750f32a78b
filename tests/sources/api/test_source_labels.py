"""A source's audiences and metadata: set through the API, carried by every chunk, used by search filters and
by the widget's visitor tokens; and the sources list's filters and pages."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.visitor import rotate_visitor_secret, sign
from ingestion.lifecycle import source_index_now
from sources.models import Chunk, Source, Workspace
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

ORIGIN = "https://acme.example"
STAFF_FACT = "Staff get a forty percent discount on every kettle."
QUESTION = "What discount do staff get on kettles?"


def _create(api, agent, content: str, **extra):
    body = {"kind": "text", "title": extra.pop("title", "Handbook"), "content": content, "agent": agent.id}
    response = api.post("/api/v1/sources", {**body, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _index(workspace, source_id: int) -> Source:
    """What the queued task does, in this process (the test's transaction never commits its queue)."""
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source_id)
        source_index_now(source=source)
        return Source.objects.get(id=source_id)


def _chunk_metadata(workspace, source_id: int) -> list[dict]:
    with workspace_scope(workspace.id):
        return [c.metadata for c in Chunk.objects.filter(source_id=source_id)]


def _ask(client, agent, token: str | None = None):
    headers = {"HTTP_ORIGIN": ORIGIN}
    if token is not None:
        headers["HTTP_X_VISITOR_TOKEN"] = token
    return client.post(
        f"/api/v1/agents/{agent.public_key}/chat",
        {"message": QUESTION},
        content_type="application/json",
        **headers,
    )


def test_audiences_and_metadata_are_set_shown_and_carried_by_every_chunk(api, workspace, agent):
    created = _create(
        api,
        agent,
        STAFF_FACT,
        audiences=["staff", "customers:gold"],
        metadata={"product": "billing", "lang": "de"},
    )
    assert created["audiences"] == ["staff", "customers:gold"]
    assert created["metadata"] == {"product": "billing", "lang": "de"}
    _index(workspace, created["id"])
    [metadata] = _chunk_metadata(workspace, created["id"])
    assert metadata["audience"] == ["staff", "customers:gold"]
    assert metadata["product"] == "billing" and metadata["lang"] == "de"
    assert metadata["source_id"] == created["id"] and metadata["agent_id"] == agent.id


def test_search_filters_use_a_sources_metadata(api, workspace, agent):
    billing = _create(
        api, agent, "Invoices are sent on the first of each month.", metadata={"product": "billing"}
    )
    _create(
        api,
        agent,
        "Invoices for shipping are printed on the box.",
        title="Shipping",
        metadata={"product": "ship"},
    )
    with workspace_scope(workspace.id):
        ids = list(Source.objects.values_list("id", flat=True))
    for source_id in ids:
        _index(workspace, source_id)
    found = api.get(
        "/api/v1/search", {"q": "when are invoices sent", "filters": '{"product": "billing"}'}
    ).json()
    assert {p["source"]["id"] for p in found["results"]} == {billing["id"]}
    none = api.get("/api/v1/search", {"q": "invoices", "filters": '{"product": "garden"}'}).json()
    assert none["results"] == []


def test_changing_audiences_or_metadata_rewrites_the_chunks(api, workspace, agent):
    created = _create(api, agent, STAFF_FACT)
    _index(workspace, created["id"])
    assert _chunk_metadata(workspace, created["id"])[0]["audience"] == ["public"]
    response = api.patch(
        f"/api/v1/sources/{created['id']}",
        {"audiences": ["staff"], "metadata": {"team": "hr"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "pending" and response.json()["audiences"] == ["staff"]
    _index(workspace, created["id"])
    [metadata] = _chunk_metadata(workspace, created["id"])
    assert metadata["audience"] == ["staff"] and metadata["team"] == "hr"
    # While it is being processed a change would mix old and new labels on its chunks: refused.
    with workspace_scope(workspace.id):
        Source.objects.filter(id=created["id"]).update(status="indexing")
    busy = api.patch(f"/api/v1/sources/{created['id']}", {"audiences": ["public"]}, format="json")
    assert busy.status_code == 400 and "being processed" in busy.json()["error"]["fields"]["audiences"][0]


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        ({"metadata": {"agent_id": 3}}, "metadata"),
        ({"metadata": {"1bad": "x"}}, "metadata"),
        ({"metadata": {"nested": {"a": 1}}}, "metadata"),
        ({"audiences": ["x" * 101]}, "audiences"),
        ({"audiences": "staff"}, "audiences"),
    ],
)
def test_bad_labels_name_the_field_and_write_nothing(api, workspace, agent, labels, field):
    response = api.post(
        "/api/v1/sources",
        {"kind": "text", "title": "t", "content": "c", "agent": agent.id, **labels},
        format="json",
    )
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    with workspace_scope(workspace.id):
        assert not Source.objects.exists()


def test_a_staff_only_source_reaches_only_visitors_with_a_valid_signed_token(api, client, workspace, agent):
    created = _create(api, agent, STAFF_FACT, audiences=["staff"])
    _index(workspace, created["id"])
    anonymous = _ask(client, agent)
    assert anonymous.status_code == 200 and "forty percent" not in anonymous.json()["answer"]
    valid = sign(workspace.visitor_secret, user_id="u-1", audiences=["staff"])
    staff = _ask(client, agent, valid)
    assert staff.status_code == 200 and "forty percent" in staff.json()["answer"]
    other_audience = sign(workspace.visitor_secret, user_id="u-2", audiences=["customers:gold"])
    assert "forty percent" not in _ask(client, agent, other_audience).json()["answer"]
    forged = sign("not-the-workspace-secret", user_id="u-1", audiences=["staff"])
    assert _ask(client, agent, forged).json()["error"]["code"] == "invalid_visitor_token"
    expired = sign(workspace.visitor_secret, user_id="u-1", audiences=["staff"], ttl_s=-5)
    refused = _ask(client, agent, expired)
    assert refused.status_code == 401 and "expired" in refused.json()["error"]["message"]


def test_a_rotated_secret_keeps_the_old_one_valid_for_the_grace_period(client, workspace, agent, settings):
    old_token = sign(workspace.visitor_secret, user_id="u-1", audiences=["staff"])
    rotate_visitor_secret(workspace=workspace, grace_seconds=3600)
    new_token = sign(workspace.visitor_secret, user_id="u-1", audiences=["staff"])
    assert _ask(client, agent, old_token).status_code == 200
    assert _ask(client, agent, new_token).status_code == 200
    Workspace.objects.filter(id=workspace.id).update(
        previous_visitor_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert _ask(client, agent, old_token).status_code == 401
    assert _ask(client, agent, new_token).status_code == 200


def test_sources_are_listed_a_page_at_a_time_with_filters(api, workspace, agent, other_agent):
    ids = [_create(api, agent, f"Text number {i}.", title=f"Guide {i}")["id"] for i in range(3)]
    page = api.get("/api/v1/sources", {"page_size": 2}).json()
    assert page["count"] == 3 and [s["id"] for s in page["results"]] == ids[::-1][:2] and page["next"]
    rest = api.get(page["next"]).json()
    assert [s["id"] for s in rest["results"]] == [ids[0]] and rest["next"] is None
    with workspace_scope(workspace.id):
        Source.objects.filter(id=ids[1]).update(status="failed")
    assert [s["id"] for s in api.get("/api/v1/sources", {"status": "failed"}).json()["results"]] == [ids[1]]
    assert [s["id"] for s in api.get("/api/v1/sources", {"q": "guide 2"}).json()["results"]] == [ids[2]]
    assert api.get("/api/v1/sources", {"kind": "url"}).json()["count"] == 0
    assert api.get("/api/v1/sources", {"kind": "text", "agent": agent.id}).json()["count"] == 3
    with workspace_scope(workspace.id):
        doc_title = Source.objects.get(id=ids[0]).documents.get().title
    documents = api.get(f"/api/v1/sources/{ids[0]}/documents", {"q": doc_title}).json()
    assert documents["count"] == 1
    assert api.get(f"/api/v1/sources/{ids[0]}/documents", {"q": "no such words"}).json()["count"] == 0
    for bad in ({"kind": "nope"}, {"status": "broken"}, {"agent": "x"}):
        assert api.get("/api/v1/sources", bad).json()["error"]["code"] == "invalid"


def test_more_than_500_sources_are_all_reachable(api, workspace, agent):
    with workspace_scope(workspace.id):
        Source.objects.bulk_create(
            [
                Source(workspace=workspace, agent=agent, kind="text", title=f"s{i}", status="done")
                for i in range(520)
            ]
        )
    seen, url = 0, "/api/v1/sources?page_size=1000"
    while url:
        body = api.get(url).json()
        seen += len(body["results"])
        url = body["next"]
    assert seen == 520


def test_the_same_file_uploaded_twice_is_reported_by_its_hash(api, workspace, agent):
    def upload(name: str):
        handle = io.BytesIO(b"Kettles must be descaled monthly.\n")
        handle.name = name
        return api.post("/api/v1/sources", {"agent": agent.id, "file": handle}, format="multipart")

    first = upload("care.txt")
    assert first.status_code == 201 and first.json()[0]["duplicate_of"] == []
    second = upload("care-copy.txt")
    assert second.status_code == 201 and second.json()[0]["duplicate_of"] == [first.json()[0]["id"]]
    assert second.json()[0]["state"]["sha256"] == first.json()[0]["state"]["sha256"]


def test_an_upload_carries_audiences_and_metadata(api, workspace, agent):
    handle = io.BytesIO(b"Internal price list.\n")
    handle.name = "prices.txt"
    response = api.post(
        "/api/v1/sources",
        {
            "agent": agent.id,
            "file": handle,
            "audiences": "staff, sales",
            "metadata": '{"product": "pricing"}',
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert response.json()[0]["audiences"] == ["staff", "sales"]
    assert response.json()[0]["metadata"] == {"product": "pricing"}


def test_an_outsider_cannot_relabel_or_list_another_workspaces_sources(api, outsider_api, agent):
    created = _create(api, agent, "Private.")
    response = outsider_api.patch(
        f"/api/v1/sources/{created['id']}", {"audiences": ["public"]}, format="json"
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert outsider_api.get("/api/v1/sources", {"agent": agent.id}).json()["count"] == 0
    assert api.get(f"/api/v1/sources/{created['id']}").json()["audiences"] == ["public"]
