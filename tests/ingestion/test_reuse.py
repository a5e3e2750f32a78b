"""A re-index embeds only text it has not embedded before (ingestion/reuse.py): the real embedder, the real
database, and both stores; what the embedder is given is recorded."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from ingestion.indexing import _build_chunks, document_index
from ingestion.text.sentence_inputs import with_sentences
from retrieval.embedders.local import MiniLMOnnxEmbedder
from retrieval.vectors import embedding_input, stored_chunk_vectors
from sources.models import Chunk, Document, Status
from sources.tenancy import workspace_scope
from tests.factories import OneStreamMiniLM, index_text
from tests.retrieval.stores.test_contract import STORE_SETTINGS

pytestmark = pytest.mark.django_db

TOPICS = ["returns", "shipping", "warranty", "payments", "accounts", "gift cards", "repairs", "stores"]


def _paragraph(topic: str, edition: int = 0) -> str:
    return " ".join(
        f"Our {topic} policy, rule {n}, edition {edition}: customers in region {n} follow step {n * 7} "
        f"of the {topic} guide and keep their reference number {1000 + n}."
        for n in range(9)
    )


PAGE = "\n\n".join(_paragraph(t) for t in TOPICS)  # ~9,000 characters: five or six chunks


class RecordingMiniLM(OneStreamMiniLM):
    texts: list[str] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        RecordingMiniLM.texts.extend(texts)
        return super().embed_documents(texts)


class OtherModelMiniLM(RecordingMiniLM):
    model_name = "another-model"


@pytest.fixture(params=sorted(STORE_SETTINGS))
def recorded(request, settings):
    settings.VECTOR_STORES = {"default": STORE_SETTINGS[request.param]}
    settings.EMBEDDERS = {
        "default": {**settings.EMBEDDERS["default"], "BACKEND": "tests.ingestion.test_reuse.RecordingMiniLM"}
    }
    if request.param == "pgvector":
        # Exact scans, as in the store contract: recall of the shared test graph is not the point here.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
    RecordingMiniLM.texts = []
    return RecordingMiniLM.texts


def _inputs(document: Document) -> list[str]:
    """Everything an index of the document as it is now embeds: its chunks' inputs and sentences."""
    with workspace_scope(document.workspace_id):
        chunks = _build_chunks(document)
    inputs = [embedding_input(c.text, document.title) for c in chunks]
    return with_sentences([c.text for c in chunks], inputs, document.title)[0]


def _page(workspace, agent, text: str = PAGE, title: str = "Customer policies") -> Document:
    source = index_text(workspace, agent, title, text)
    with workspace_scope(workspace.id):
        return Document.objects.get(source=source)


def _reindex(document: Document, **changes) -> Document:
    with workspace_scope(document.workspace_id):
        Document.objects.filter(id=document.id).update(status=Status.INDEXING, **changes)
        document = Document.objects.get(id=document.id)
        RecordingMiniLM.texts.clear()
        document_index(document=document)
        return Document.objects.get(id=document.id)


def _assert_vectors_are_the_models(document: Document) -> None:
    """Every stored vector, reused or not, is what the model makes for that chunk's input today."""
    with workspace_scope(document.workspace_id):
        chunks = list(Chunk.objects.filter(document=document).order_by("position"))
    embedder = MiniLMOnnxEmbedder()
    stored = stored_chunk_vectors(
        workspace_id=document.workspace_id, chunk_ids=[str(c.id) for c in chunks], embedder=embedder
    )
    assert len(stored) == len(chunks)
    fresh = embedder.embed_documents([embedding_input(c.text, document.title) for c in chunks])
    for chunk, vector in zip(chunks, fresh, strict=True):
        assert float(np.dot(stored[str(chunk.id)], vector)) > 0.999


def test_an_edited_page_embeds_only_its_new_text(recorded, workspace, agent):
    page = _page(workspace, agent)
    before = set(_inputs(page))
    assert set(recorded) == before
    # A paragraph rewritten in the middle: the chunks after it are cut at other places.
    edited = PAGE.replace(_paragraph("warranty"), _paragraph("warranty", edition=2) + " A new closing line.")
    page = _reindex(page, text=edited)
    after = _inputs(page)
    assert page.status == Status.DONE
    assert recorded and set(recorded) == set(after) - before
    assert len(recorded) < len(after) / 2  # most of the page is the same text
    _assert_vectors_are_the_models(page)


def test_a_page_indexed_again_unchanged_embeds_nothing(recorded, workspace, agent):
    page = _page(workspace, agent)
    with workspace_scope(workspace.id):
        digests = list(Chunk.objects.filter(document=page).values_list("input_digest", flat=True))
    page = _reindex(page)
    assert recorded == []
    assert page.status == Status.DONE
    with workspace_scope(workspace.id):
        chunks = Chunk.objects.filter(document=page)
        assert list(chunks.values_list("input_digest", flat=True)) == digests
        assert all(c.sentence_vectors for c in chunks)
    _assert_vectors_are_the_models(page)


def test_a_new_title_embeds_the_page_again(recorded, workspace, agent):
    """The title is in every chunk's input and among its sentences, and the old one is not kept: the old
    chunks' texts cannot be rebuilt, so none of their vectors are trusted."""
    page = _page(workspace, agent)
    page = _reindex(page, title="Customer policies, 2027")
    assert sorted(recorded) == sorted(_inputs(page))
    _assert_vectors_are_the_models(page)


def test_a_chunk_whose_digest_does_not_hold_is_not_reused(recorded, workspace, agent):
    page = _page(workspace, agent)
    with workspace_scope(workspace.id):
        first = Chunk.objects.filter(document=page).order_by("position").first()
        # As if the segmenter or a setting had changed since: its texts can no longer be rebuilt.
        Chunk.objects.filter(id=first.id).update(input_digest="0" * 32)
    page = _reindex(page)
    assert embedding_input(first.text, page.title) in recorded
    with workspace_scope(workspace.id):
        others = Chunk.objects.filter(document=page).exclude(position=first.position)
        assert not {embedding_input(c.text, page.title) for c in others} & set(recorded)
    _assert_vectors_are_the_models(page)


def test_vectors_of_another_model_or_with_reuse_off_are_embedded_again(recorded, workspace, agent, settings):
    page = _page(workspace, agent)
    every = _inputs(page)
    settings.REINDEX_REUSES_VECTORS = False
    _reindex(page)
    assert sorted(recorded) == sorted(every)
    settings.REINDEX_REUSES_VECTORS = True
    settings.EMBEDDERS = {
        "default": {**settings.EMBEDDERS["default"], "BACKEND": "tests.ingestion.test_reuse.OtherModelMiniLM"}
    }
    page = _reindex(page)
    assert sorted(recorded) == sorted(every)
    with workspace_scope(workspace.id):
        assert set(Chunk.objects.filter(document=page).values_list("embedding_model", flat=True)) == {
            "another-model"
        }


def test_a_first_index_reuses_nothing_from_another_workspace(
    recorded, workspace, agent, other_workspace, other_agent
):
    _page(other_workspace, other_agent)
    RecordingMiniLM.texts.clear()
    page = _page(workspace, agent)
    assert sorted(recorded) == sorted(_inputs(page))


def test_chunks_made_without_sentence_vectors_give_their_own_and_get_sentences(
    recorded, workspace, agent, settings
):
    settings.SENTENCE_VECTORS = False
    page = _page(workspace, agent)
    chunk_inputs = set(recorded)
    settings.SENTENCE_VECTORS = True
    page = _reindex(page)
    assert set(recorded) == set(_inputs(page)) - chunk_inputs
    with workspace_scope(workspace.id):
        assert all(c.sentence_vectors for c in Chunk.objects.filter(document=page))
