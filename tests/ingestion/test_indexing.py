"""A real Celery worker process takes a text source from pending to done; search then finds it."""

import pytest

from sources.models import Chunk, Source
from tests.factories import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RETURNS = (
    "Our returns policy: you can return any unworn item within 30 days of delivery for a full refund.\n\n"
    "Refunds are paid to the original payment method within five business days after we receive the item."
)
SHIPPING = "We ship to Canada, Mexico and the United States. Express delivery takes two days."


def test_worker_indexes_a_text_source_and_search_finds_it(
    celery_worker, api, outsider_api, agent, other_agent
):
    response = api.post(
        "/api/v1/sources",
        {"kind": "text", "title": "Returns", "content": RETURNS, "agent": agent.id},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["status"] == "pending"
    source_id = response.json()["id"]
    # The outsider's workspace holds a passage that answers the same question better.
    outsider_source = outsider_api.post(
        "/api/v1/sources",
        {
            "kind": "text",
            "title": "Secret returns",
            "content": "Return items within 30 days for a refund.",
            "agent": other_agent.id,
        },
        format="json",
    ).json()["id"]

    def status_of(client, sid):
        body = client.get(f"/api/v1/sources/{sid}").json()
        return body if body["status"] in ("done", "failed") else None

    done = wait_for(lambda: status_of(api, source_id))
    assert done["status"] == "done", done
    assert done["chunks_count"] >= 1 and done["pages_done"] == 1 and done["pages_left"] == 0
    assert wait_for(lambda: status_of(outsider_api, outsider_source))["status"] == "done"
    assert Chunk.unscoped.filter(source_id=source_id, embedding__isnull=False).count() == done["chunks_count"]

    results = api.get(
        "/api/v1/search", {"q": "how long do I have to send something back?", "top_k": 5}
    ).json()
    assert results["results"], results
    top = results["results"][0]
    assert "30 days" in top["text"]
    assert top["source"] == {"id": source_id, "title": "Returns", "url": None}
    assert 0.0 < top["score"] <= 1.0
    assert {r["source"]["id"] for r in results["results"]} == {source_id}  # never the outsider's passage


def test_a_source_deleted_while_queued_is_skipped_quietly(celery_worker, api, agent):
    from ingestion.lifecycle import source_create, source_delete
    from sources.models import Workspace
    from sources.tenancy import workspace_scope

    workspace = Workspace.objects.get(id=agent.workspace_id)
    with workspace_scope(workspace.id):
        first = source_create(
            workspace=workspace, agent_id=agent.id, kind="text", title="gone", payload={"content": SHIPPING}
        )
        source_delete(source=first)
        second = source_create(
            workspace=workspace, agent_id=agent.id, kind="text", title="kept", payload={"content": SHIPPING}
        )
    wait_for(lambda: Source.unscoped.get(id=second.id).status == "done")
    assert not Source.unscoped.filter(id=first.id).exists()
