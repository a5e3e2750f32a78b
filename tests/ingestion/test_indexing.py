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


def crawled_site(agent, pages: int):
    """A web source whose pages were fetched before: what a reindex starts from."""
    from sources.models import Document
    from sources.tenancy import workspace_scope

    with workspace_scope(agent.workspace_id):
        source = Source.objects.create(
            agent=agent, kind="url", title="Site", config={"url": "https://example.com/"}, status="done"
        )
        for i in range(pages):
            Document.objects.create(
                source=source,
                url=f"https://example.com/{i}",
                title=f"Page {i}",
                text=f"Page {i} explains how kettle model {i} keeps water warm for {i + 10} minutes.",
                status="done",
            )
    return source


def test_a_big_reindex_runs_in_batched_index_jobs_on_the_workers(celery_worker, api, agent, settings):
    assert settings.INDEX_FAN_OUT_AT == 3  # the worker processes run with the same test settings
    source = crawled_site(agent, pages=5)
    assert api.post(f"/api/v1/sources/{source.id}/reindex").status_code == 202
    body = wait_for(
        lambda: (b := api.get(f"/api/v1/sources/{source.id}").json())["status"] in ("done", "failed") and b
    )
    assert body["status"] == "done" and body["pages_done"] == 5, body
    assert Chunk.unscoped.filter(source_id=source.id).values("document_id").distinct().count() == 5


@pytest.mark.django_db
def test_the_index_task_hands_a_big_source_back_to_the_index_queue(agent, settings):
    from ingestion.kinds.registry import get_kind
    from ingestion.lifecycle import source_reindex
    from sources.tenancy import workspace_scope

    settings.INDEX_FAN_OUT_AT = 3
    source = crawled_site(agent, pages=5)
    assert source_reindex(source=source, queue=False)
    with workspace_scope(agent.workspace_id):
        left = get_kind("url").index(source=source)
        assert len(left) == 5 and Source.objects.get(id=source.id).status == "indexing"
        assert not Chunk.objects.filter(source_id=source.id).exists()  # nothing indexed inside this task
    small = crawled_site(agent, pages=2)
    assert source_reindex(source=small, queue=False)
    with workspace_scope(agent.workspace_id):
        assert get_kind("url").index(source=small) == []
        assert Source.objects.get(id=small.id).status == "done"


def test_no_broad_except_in_ingestion_swallows_the_tasks_time_limit():
    """SoftTimeLimitExceeded is an Exception: every broad handler in ingestion must let it through."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "ingestion"
    offenders = []
    for path in root.rglob("*.py"):
        if "parsers" in path.parts:  # parsers run in an isolated child process, where no time limit arrives
            continue
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if re.match(r"\s*except (Exception|BaseException)\b", line):
                before = "\n".join(lines[max(0, number - 3) : number])
                if "except SoftTimeLimitExceeded" not in before:
                    offenders.append(f"{path.relative_to(root.parent)}:{number + 1}")
    assert offenders == []
