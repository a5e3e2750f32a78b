"""An index job stores what it has embedded while it embeds the next part (ingestion/jobs/store_behind.py), on
the real database and the real embedder."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import transaction

from ingestion import tasks
from ingestion.jobs.store_behind import StoreBehind
from retrieval.embedders.base import EmbeddingError
from retrieval.embedders.local import MiniLMOnnxEmbedder
from retrieval.vectors import embedding_input
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import current_workspace_id, workspace_scope
from tests.ingestion.test_index_batching import CountingMiniLM, _crawled_pages

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def chunks_only(settings):
    """These tests count what the embedder is given for chunks; their sentences (settings.SENTENCE_VECTORS)
    would add inputs, and are tested in tests/retrieval/test_sentence_vectors.py."""
    settings.SENTENCE_VECTORS = False


class RecordingMiniLM(CountingMiniLM):
    texts: list[list[str]] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        RecordingMiniLM.texts.append(list(texts))
        return super().embed_documents(texts)


class FailingOnSecondPart(CountingMiniLM):
    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        if len(CountingMiniLM.calls) == 1:
            CountingMiniLM.calls.append(len(texts))
            raise EmbeddingError("The embedding service is unreachable.", "connection refused")
        return super().embed_documents(texts)


def _embedder(settings, backend: str) -> list[int]:
    settings.EMBEDDERS = {"default": {**settings.EMBEDDERS["default"], "BACKEND": backend}}
    CountingMiniLM.calls = []
    return CountingMiniLM.calls


def test_a_job_embeds_in_parts_and_every_page_is_stored_whole(workspace, agent, settings, monkeypatch):
    calls = _embedder(settings, "tests.ingestion.test_index_batching.CountingMiniLM")
    settings.EMBED_BATCH_SIZE = 2
    pages = _crawled_pages(workspace, agent, 6)  # one chunk each
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    assert calls == [2, 2, 2]  # three parts, in order
    with workspace_scope(workspace.id):
        assert set(Document.objects.values_list("status", flat=True)) == {Status.DONE}
        assert Chunk.objects.filter(embedding__isnull=False).count() == 6 == Chunk.objects.count()


def test_parts_cut_across_documents_by_length_and_each_vector_is_its_own_chunks(workspace, agent, settings):
    _embedder(settings, "tests.ingestion.jobs.test_store_behind.RecordingMiniLM")
    RecordingMiniLM.texts = []
    settings.EMBED_BATCH_SIZE = 2
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Site", config={"url": "https://a.test/"}
        )
        # Two pages of a long chunk and a short one each: a part of each length, not a part of each page.
        pages = [
            Document.objects.create(
                source=source,
                url=f"https://a.test/{name}",
                title=name,
                text=f"The {name} guide covers returns and refunds in detail. " * 40
                + f"\n\nShort {name} note.",
                status=Status.INDEXING,
            )
            for name in ("alpha", "beta")
        ]
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    first, second = RecordingMiniLM.texts
    assert all("Short" in text for text in first) and not any("Short" in text for text in second)
    with workspace_scope(workspace.id):
        chunks = list(Chunk.objects.order_by("document_id", "position"))
        assert len(chunks) == 4 and {d.status for d in Document.objects.all()} == {Status.DONE}
        inputs = [embedding_input(c.text, c.document.title) for c in chunks]
    own = MiniLMOnnxEmbedder().embed_documents(inputs)
    assert np.allclose(np.array([c.embedding for c in chunks]), own, atol=1e-5)


def test_a_provider_failing_on_a_later_part_fails_the_rest_with_its_reason(
    workspace, agent, settings, monkeypatch
):
    calls = _embedder(settings, "tests.ingestion.jobs.test_store_behind.FailingOnSecondPart")
    settings.EMBED_BATCH_SIZE = 2
    pages = _crawled_pages(workspace, agent, 6)
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    assert calls == [2, 2]  # the third part is not tried against a provider that just failed
    with workspace_scope(workspace.id):
        status = dict(Document.objects.values_list("id", "status"))
        assert [status[p.id] for p in pages] == [Status.DONE] * 2 + [Status.FAILED] * 4
        failed = Document.objects.filter(status=Status.FAILED)
        assert {d.error for d in failed} == {"The embedding service is unreachable."}
        assert Chunk.objects.count() == 2  # the first part's pages, stored before the failure


def test_parts_are_stored_in_order_on_the_store_thread_in_the_workspace_scope(workspace):
    seen: list[tuple[int, str, int]] = []
    with workspace_scope(workspace.id):
        behind = StoreBehind()
        for number in range(3):
            behind.submit(
                lambda n=number: seen.append((n, threading.current_thread().name, current_workspace_id()))
            )
        behind.wait()
    assert [n for n, _, _ in seen] == [0, 1, 2]
    assert {name.startswith("index-store") for _, name, _ in seen} == {True}
    assert {scope for _, _, scope in seen} == {workspace.id}


def test_inside_a_transaction_parts_are_stored_in_the_callers_thread(workspace):
    # Another connection could not see the transaction's uncommitted rows.
    seen: list[str] = []
    with transaction.atomic():
        behind = StoreBehind()
        behind.submit(lambda: seen.append(threading.current_thread().name))
        behind.wait()
    assert seen == [threading.current_thread().name]
