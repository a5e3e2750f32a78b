"""Pushed documents (ingestion/push/): what is embedded again, who may retrieve them, the worker path."""

from __future__ import annotations

import pytest
from django.test import override_settings

from agents.configuration import agent_search_params
from ingestion import tasks
from ingestion.push import documents as push
from retrieval.services import SearchParams, search_passages
from sources.models import Chunk, Document
from sources.tenancy import workspace_scope
from tests.factories import wait_for
from tests.fakes.openai_server import FakeProvider, openai_compatible_server

WARRANTY = "The kettle warranty lasts seven years from the day of purchase, parts and labour included."
DESCALING = "Descale the kettle monthly with white vinegar, then boil fresh water twice and pour it away."


@pytest.fixture
def provider():
    """An embeddings provider on 127.0.0.1 that records every call."""
    with openai_compatible_server(FakeProvider()) as running:
        settings = {
            "default": {
                "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
                "OPTIONS": {"base_url": running.base_url, "model": "fake-embed", "api_key": running.api_key},
            }
        }
        with override_settings(EMBEDDERS=settings):
            yield running


def embedded_texts(provider) -> list[str]:
    return [text for r in provider.requests if r["path"] == "/v1/embeddings" for text in r["body"]["input"]]


def put(workspace, agent, *items):
    return push.put_documents(workspace=workspace, agent_id=agent.id, items=list(items))


def run_index_queue(workspace) -> None:
    with workspace_scope(workspace.id):
        pending = list(Document.objects.filter(status="pending").values_list("id", flat=True))
    for document_id in pending:
        tasks.index_document(workspace_id=workspace.id, document_id=document_id)


@pytest.mark.django_db
def test_only_changed_documents_are_embedded_again(provider, workspace, agent, settings):
    settings.SENTENCE_VECTORS = False  # the provider's requests below are the chunks' alone
    put(
        workspace,
        agent,
        ("warranty", {"title": "Warranty", "text": WARRANTY}),
        ("descaling", {"title": "Descaling", "text": DESCALING}),
    )
    run_index_queue(workspace)
    first = embedded_texts(provider)
    assert len(first) == 2 and any("seven years" in t for t in first) and any("vinegar" in t for t in first)
    with workspace_scope(workspace.id):
        descaling_chunks = set(
            Chunk.objects.filter(document__external_id="descaling").values_list("id", "created_at")
        )

    changed = WARRANTY.replace("seven", "ten")
    outcomes = put(
        workspace,
        agent,
        ("warranty", {"title": "Warranty", "text": changed}),
        ("descaling", {"title": "Descaling", "text": DESCALING}),
    )
    assert [o.result for o in outcomes] == ["updated", "unchanged"]
    run_index_queue(workspace)
    again = embedded_texts(provider)[len(first) :]
    assert len(again) == 1 and "ten years" in again[0]  # the unchanged document cost no embedding call
    with workspace_scope(workspace.id):
        assert set(
            Chunk.objects.filter(document__external_id="descaling").values_list("id", "created_at")
        ) == (descaling_chunks)
        texts = list(Chunk.objects.filter(document__external_id="warranty").values_list("text", flat=True))
    assert texts == [changed]

    # Metadata is stored with each chunk: changing it alone re-indexes the document too, with the
    # vectors its unchanged text already has (ingestion/reuse.py), so with no embedding call.
    put(
        workspace,
        agent,
        ("descaling", {"title": "Descaling", "text": DESCALING, "metadata": {"type": "howto"}}),
    )
    run_index_queue(workspace)
    with workspace_scope(workspace.id):
        descaling = Chunk.objects.get(document__external_id="descaling")
    assert descaling.metadata["type"] == "howto" and descaling.embedding is not None
    assert len(embedded_texts(provider)) == len(first) + 1
    put(
        workspace,
        agent,
        ("descaling", {"title": "Descaling", "text": DESCALING, "metadata": {"type": "howto"}}),
    )
    run_index_queue(workspace)
    assert len(embedded_texts(provider)) == len(first) + 1


@pytest.mark.django_db
def test_a_failed_document_pushed_again_unchanged_is_tried_again(provider, workspace, agent):
    put(workspace, agent, ("warranty", {"title": "Warranty", "text": WARRANTY}))
    provider.api_key = "sk-rotated"  # the provider refuses our key: indexing fails
    run_index_queue(workspace)
    with workspace_scope(workspace.id):
        assert Document.objects.get(external_id="warranty").status == "failed"
    provider.api_key = "sk-test-key"
    [outcome] = put(workspace, agent, ("warranty", {"title": "Warranty", "text": WARRANTY}))
    assert outcome.result == "unchanged" and outcome.document.status == "pending"
    run_index_queue(workspace)
    with workspace_scope(workspace.id):
        assert Document.objects.get(external_id="warranty").status == "done"


@pytest.mark.django_db
def test_audiences_and_metadata_reach_search(workspace, agent):
    put(
        workspace,
        agent,
        ("public", {"title": "Warranty", "text": WARRANTY, "metadata": {"type": "policy"}}),
        (
            "staff",
            {
                "title": "Staff descaling",
                "text": DESCALING,
                "audiences": ["staff"],
                "metadata": {"type": "howto"},
            },
        ),
    )
    run_index_queue(workspace)

    def found(audiences: list[str]) -> set[str]:
        passages = search_passages(
            workspace_id=workspace.id,
            query="how do I descale the kettle with vinegar",
            params=agent_search_params(agent, audiences),
            agent_id=agent.id,
        )
        return {p.document_title for p in passages}

    assert "Staff descaling" not in found([])  # a public visitor never sees it
    assert "Staff descaling" in found(["staff"])  # a visitor whose signed token grants "staff" does
    by_type = search_passages(
        workspace_id=workspace.id, query="kettle", params=SearchParams(top_k=5, filters={"type": "policy"})
    )
    assert [p.document_title for p in by_type] == ["Warranty"]
    with workspace_scope(workspace.id):
        metadata = Chunk.objects.get(document__external_id="staff").metadata
    assert metadata["audience"] == ["staff"] and metadata["type"] == "howto"
    assert metadata["agent_id"] == agent.id and metadata["workspace_id"] == workspace.id


@pytest.mark.django_db
def test_a_reindex_of_the_push_source_indexes_its_documents_again(workspace, agent, api):
    [outcome] = put(workspace, agent, ("warranty", {"title": "Warranty", "text": WARRANTY}))
    run_index_queue(workspace)
    source_id = outcome.document.source_id
    assert api.post(f"/api/v1/sources/{source_id}/reindex").status_code == 202
    # A push while the reindex waits is left for the reindex task, which indexes every pending document.
    [late] = put(workspace, agent, ("descaling", {"title": "Descaling", "text": DESCALING}))
    assert late.result == "created"
    tasks.index_source(workspace_id=workspace.id, source_id=source_id)
    body = api.get(f"/api/v1/sources/{source_id}").json()
    assert body["status"] == "done" and body["pages_done"] == 2, body
    preview = api.get(f"/api/v1/sources/{source_id}/preview").json()
    assert {d["title"] for d in preview["documents"]} == {"Warranty", "Descaling"}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_index_worker_indexes_a_pushed_document(celery_worker, api, agent):
    response = api.put(
        f"/api/v1/agents/{agent.id}/documents/policies/warranty",
        {"title": "Warranty", "text": WARRANTY},
        format="json",
    )
    assert response.status_code == 202 and response.json()["status"] == "pending"
    url = f"/api/v1/agents/{agent.id}/documents/policies/warranty"
    done = wait_for(lambda: (body := api.get(url).json())["status"] in ("done", "failed") and body)
    assert done["status"] == "done", done
    hits = api.get("/api/v1/search", {"q": "how long is the kettle warranty", "top_k": 1}).json()["results"]
    assert "seven years" in hits[0]["text"]


@pytest.mark.django_db(transaction=True)
def test_a_push_never_makes_an_index_job_storing_the_source_wait(workspace, agent):
    """A push holds its agent and source while it writes; an index job storing one of the source's
    documents meanwhile inserts chunks that reference the source (FOR KEY SHARE on its row). That insert
    must not wait for the push: the push may itself be waiting for the job's document, a deadlock."""
    import threading

    from django.db import connection, transaction

    put(workspace, agent, ("a.md", {"title": "A", "text": WARRANTY}))
    with workspace_scope(workspace.id):
        document = Document.objects.get(external_id="a.md")
    holding, release = threading.Event(), threading.Event()

    def push_in_progress() -> None:
        try:
            with workspace_scope(workspace.id), transaction.atomic():
                push._push_source(push._lock_agent(agent.id), create=False)
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    pusher = threading.Thread(target=push_in_progress)
    pusher.start()
    try:
        assert holding.wait(10)
        with workspace_scope(workspace.id), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")  # waiting for the push fails the test
            Chunk.objects.create(
                id="00000000-0000-0000-0000-00000000000a",
                workspace_id=workspace.id,
                document=document,
                source_id=document.source_id,
                position=99,
                text="stored while a push holds the source",
            )
    finally:
        release.set()
        pusher.join(10)
