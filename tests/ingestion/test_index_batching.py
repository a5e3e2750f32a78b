"""One index job embeds the chunks of many crawled pages together (ingestion.indexing.index_ready): the
embedder sees full batches of similar length, each page is still stored on its own, and the other pages'
own jobs then find nothing to do. Run in this process against the real database and the real embedder."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.utils import timezone

from ingestion import tasks
from ingestion.text import sentence_inputs
from retrieval.embedders.local import MiniLMOnnxEmbedder
from retrieval.vectors import embed_texts
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.factories import OneStreamMiniLM

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def chunks_only(settings):
    """These tests count what the embedder is given for chunks; their sentences (settings.SENTENCE_VECTORS)
    would add inputs, and are tested in tests/retrieval/test_sentence_vectors.py."""
    settings.SENTENCE_VECTORS = False


class CountingMiniLM(OneStreamMiniLM):
    """The deployment's embedder, recording how many texts each call embeds."""

    calls: list[int] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        CountingMiniLM.calls.append(len(texts))
        return super().embed_documents(texts)


@pytest.fixture
def counting_embedder(settings):
    settings.EMBEDDERS = {
        "default": {
            **settings.EMBEDDERS["default"],
            "BACKEND": "tests.ingestion.test_index_batching.CountingMiniLM",
        }
    }
    CountingMiniLM.calls = []
    return CountingMiniLM.calls


def _crawled_pages(workspace, agent, count: int, *, prefix: str = "page") -> list[Document]:
    """Pages as the crawler leaves them: text extracted, status indexing, their index jobs still queued."""
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Site", config={"url": "https://a.test/"}
        )
        return [
            Document.objects.create(
                source=source,
                url=f"https://a.test/{prefix}-{i}",
                title=f"{prefix} {i}",
                text=f"The {prefix} number {i} explains how returns work for order type {i}. " * (2 + i),
                status=Status.INDEXING,
            )
            for i in range(count)
        ]


def test_one_job_indexes_the_waiting_pages_in_one_embedding_pass(workspace, agent, counting_embedder):
    pages = _crawled_pages(workspace, agent, 6)
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    assert counting_embedder == [6]  # one call for the six one-chunk pages, not six calls
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}
        assert Chunk.objects.count() == 6
        assert not Document.objects.filter(due_by__isnull=False).exists()
        assert Source.objects.get().status == Status.DONE
    for page in pages[1:]:  # their own jobs come later and find nothing left to do
        tasks.index_document(workspace_id=workspace.id, document_id=page.id)
    assert counting_embedder == [6]
    with workspace_scope(workspace.id):
        assert Chunk.objects.count() == 6


def test_another_workspaces_pages_and_pages_held_by_another_job_are_left_alone(
    workspace, agent, other_workspace, counting_embedder
):
    from agents.models import Agent

    mine = _crawled_pages(workspace, agent, 3)
    with workspace_scope(other_workspace.id):
        other_agent = Agent.objects.create(name="Other")
    theirs = _crawled_pages(other_workspace, other_agent, 2, prefix="secret")
    held_until = timezone.now() + timezone.timedelta(minutes=5)
    with workspace_scope(workspace.id):
        Document.objects.filter(id=mine[2].id).update(due_by=held_until)  # another index job holds it
    tasks.index_document(workspace_id=workspace.id, document_id=mine[0].id)
    assert counting_embedder == [2]
    with workspace_scope(workspace.id):
        assert Document.objects.get(id=mine[2].id).status == Status.INDEXING
    with workspace_scope(other_workspace.id):
        assert set(
            Document.objects.filter(id__in=[d.id for d in theirs]).values_list("status", flat=True)
        ) == {Status.INDEXING}
        assert Chunk.objects.count() == 0


def test_a_batch_stops_at_its_budget_and_the_next_job_takes_the_rest(
    workspace, agent, counting_embedder, settings, eager_tasks
):
    settings.INDEX_BATCH_MAX_DOCUMENTS = 2
    pages = _crawled_pages(workspace, agent, 5)
    tasks.index_document(workspace_id=workspace.id, document_id=pages[3].id)
    # Its own page first, then the oldest waiting one; cut short by the budget, it queued a job for the
    # first page it left, which did the same.
    assert counting_embedder == [2, 2, 1]
    assert eager_tasks == [pages[1].id, pages[4].id]
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}
    for page in pages:  # the pages' own jobs find nothing left
        tasks.index_document(workspace_id=workspace.id, document_id=page.id)
    assert counting_embedder == [2, 2, 1]


def test_vectors_come_back_in_input_order_although_embedded_by_length(settings):
    texts = [
        "a much longer passage about the shipping of parcels to Canada and Mexico " * 5,
        "refunds",
        "tax",
    ]
    together = embed_texts(texts)
    alone = np.stack([embed_texts([t])[0] for t in texts])
    assert np.allclose((together * alone).sum(axis=1), 1.0, atol=1e-3)


@pytest.fixture
def eager_tasks():
    """Published tasks run at once in this process (nested where a task publishes the next), each counted."""
    from celery.signals import task_prerun

    from config.celery import app

    ran: list[int] = []

    def count(sender=None, kwargs=None, **_):  # type: ignore[no-untyped-def]
        if getattr(sender, "name", "") == tasks.index_document.name:
            ran.append(kwargs["document_id"])

    task_prerun.connect(count, weak=False)
    app.conf.task_always_eager = True
    yield ran
    app.conf.task_always_eager = False
    task_prerun.disconnect(count)


def _reindexed(pages: list[Document]) -> list[int]:
    """The pages as a reindex hands them to the index queue: pending, no job yet."""
    Document.unscoped.filter(id__in=[p.id for p in pages]).update(status=Status.PENDING)
    return [p.id for p in pages]


def test_queued_documents_get_one_job_per_batch_not_one_each(
    workspace, agent, counting_embedder, settings, eager_tasks
):
    from ingestion import lifecycle

    settings.INDEX_BATCH_MAX_DOCUMENTS = 4
    ids = _reindexed(_crawled_pages(workspace, agent, 9))
    lifecycle.queue_index_jobs(workspace_id=workspace.id, document_ids=ids)
    # Three jobs published (one per batch of four); the first two, cut by the budget, each queued the next.
    assert sorted(eager_tasks) == sorted([ids[0], ids[4], ids[8], ids[4], ids[8]])
    assert counting_embedder == [4, 4, 1]
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}
        assert Chunk.objects.values("document_id").distinct().count() == 9 == Chunk.objects.count()


def test_what_a_jobs_budget_leaves_waiting_gets_the_next_job(
    workspace, agent, counting_embedder, settings, eager_tasks
):
    from ingestion import lifecycle

    settings.INDEX_BATCH_MAX_CHARS = 10  # every page is over it: one page per job
    ids = _reindexed(_crawled_pages(workspace, agent, 3))
    lifecycle.queue_index_jobs(workspace_id=workspace.id, document_ids=ids)
    assert eager_tasks == ids  # one job published; each job queued the next
    assert counting_embedder == [1, 1, 1]
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}


class StartedMiniLM(MiniLMOnnxEmbedder):
    """The built-in embedder on two streams, saying when its first batch starts."""

    started = threading.Event()

    def __init__(self, **options):  # type: ignore[no-untyped-def]
        super().__init__(**{**options, "threads": 2, "streams": 2})

    def _forward(self, rows, streamed=False):  # type: ignore[no-untyped-def]
        StartedMiniLM.started.set()
        return super()._forward(rows, streamed)


def test_the_embedder_starts_on_the_chunks_while_their_sentences_are_cut(
    workspace, agent, settings, monkeypatch
):
    settings.SENTENCE_VECTORS = True
    settings.EMBEDDERS = {
        "default": {
            **settings.EMBEDDERS["default"],
            "BACKEND": "tests.ingestion.test_index_batching.StartedMiniLM",
        }
    }
    StartedMiniLM.started = threading.Event()
    seen_when_cutting: list[bool] = []
    with_sentences = sentence_inputs.with_sentences

    def cut(*args, **kwargs):  # type: ignore[no-untyped-def]
        # The first page's cutting waits a moment for the embedder: it starts at once when the chunks
        # were queued before (and never, were they queued after the sentences).
        seen_when_cutting.append(StartedMiniLM.started.wait(timeout=0 if seen_when_cutting else 5))
        return with_sentences(*args, **kwargs)

    monkeypatch.setattr(sentence_inputs, "with_sentences", cut)
    pages = _crawled_pages(workspace, agent, 40)  # 50 chunks: two batches
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    assert seen_when_cutting and all(seen_when_cutting)
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}
        chunks = list(Chunk.objects.all())
    assert len(chunks) == 50 and all(c.sentence_vectors for c in chunks)
