"""Sentence vectors (settings.SENTENCE_VECTORS): ingestion embeds each chunk's sentences beside the chunk,
in the same pass, and a hybrid search rescores its head with them. Real embedder, real PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest

from config.backends import embedders
from ingestion.text.sentence_inputs import MAX_PER_CHUNK, sentence_texts
from retrieval import sentences
from retrieval.services import SearchParams, search_passages
from sources.models import Chunk
from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.retrieval.stores.test_contract import STORE_SETTINGS

pytestmark = pytest.mark.django_db

FILLER = (
    "The kettle body is brushed steel with a matte finish. It holds one point seven litres of water. "
    "A blue light shows while it heats. The base turns all the way round on its stand. "
    "The cord tucks into a slot under the base. A filter in the spout keeps scale out of your cup. "
)
BURIED = "Our Lyon shop closes at noon on public holidays."
# One strong sentence inside a long chunk of unrelated text, against short pages that share words with
# the question but not its fact.
DOCS = {
    "Kettle guide": FILLER * 2 + BURIED + " " + FILLER,
    "Lyon shop": "Our shop in Lyon sells kettles, teapots and cups all year.",
    "Holiday dates": "Public holiday dates for France are listed in the calendar.",
}
QUESTION = "when does the Lyon shop close on a public holiday?"


def _chunks(workspace, title):
    with workspace_scope(workspace.id):
        return list(Chunk.objects.filter(source__title=title).order_by("position"))


def test_pack_and_unpack_keep_the_vectors_to_float16_precision():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(5, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    back = sentences.unpack(sentences.pack(vectors), 384)
    assert back.shape == (5, 384)
    assert np.abs(back - vectors).max() < 1e-3
    assert sentences.pack(np.zeros((0, 384), np.float32)) is None


def test_rescore_reorders_only_the_head_and_a_chunk_without_sentences_keeps_its_cosine():
    order = ["a", "b", "c", "d"]
    vector_scores = {"a": 0.5, "b": 0.4, "c": 0.45, "d": 0.9}
    keyword_scores = {"a": 0.5, "b": 0.4, "c": 0.4}
    # b's best sentence matches the query closely; c has no sentence vectors: its cosine stands in.
    rescored = sentences.rescore(
        order,
        vector_scores=vector_scores,
        keyword_scores=keyword_scores,
        sentence_scores={"a": 0.5, "b": 0.95},
        weights=(0.2, 0.3, 0.5),
        candidates=3,
    )
    # a: .1+.15+.25=.50; b: .08+.285+.2=.565; c: .09+.135+.2=.425; d beyond the head stays last.
    assert rescored == ["b", "a", "c", "d"]


def test_sentence_texts_are_the_title_and_the_units_whole_unique_and_bounded():
    text = (
        "Returns are accepted within 30\ndays of purchase. Refunds take five days.\n- Keep the receipt please"
    )
    assert sentence_texts(text, "Returns policy") == [
        "Returns policy",
        "Returns are accepted within 30 days of purchase.",
        "Refunds take five days.",
        "Keep the receipt please",
    ]
    assert sentence_texts("Ok. Yes. " + "A sentence long enough. " * 3, "") == ["A sentence long enough."]
    many = " ".join(f"Sentence number {i} is here." for i in range(100))
    assert len(sentence_texts(many, "")) == MAX_PER_CHUNK


def test_ingestion_stores_each_chunks_sentence_vectors_from_the_same_model(workspace, agent, settings):
    settings.SENTENCE_VECTORS = True
    index_text(workspace, agent, "Kettle guide", DOCS["Kettle guide"])
    chunks = _chunks(workspace, "Kettle guide")
    embedder = embedders["default"]
    for chunk in chunks:
        texts = sentence_texts(chunk.text, "Kettle guide")
        stored = sentences.unpack(chunk.sentence_vectors, embedder.dimensions)
        assert len(stored) == len(texts)
        expected = embedder.embed_documents(texts)
        assert np.allclose(stored, expected, atol=2e-3)
    assert any(BURIED in sentence_texts(c.text, "") for c in chunks)


def test_without_the_setting_no_sentence_vectors_are_made_or_read(workspace, agent, settings):
    settings.SENTENCE_VECTORS = False
    index_text(workspace, agent, "Kettle guide", DOCS["Kettle guide"])
    assert all(c.sentence_vectors is None for c in _chunks(workspace, "Kettle guide"))


def test_a_buried_sentence_lifts_its_chunk_over_pages_that_only_share_words(workspace, agent, settings):
    settings.SENTENCE_VECTORS = True
    for title, text in DOCS.items():
        index_text(workspace, agent, title, text)

    def first(**rescoring):
        params = SearchParams(top_k=2, semantic_cache=False, **rescoring)
        return search_passages(workspace_id=workspace.id, query=QUESTION, params=params)[0].source_title

    assert SearchParams().sentence_weights == (0.2, 0.3, 0.5)  # the deployment's, where it makes them
    assert first(sentence_weights=(0.0, 0.0, 0.0)) != "Kettle guide"  # chunk cosine and BM25 alone
    assert first() == "Kettle guide"


@pytest.mark.parametrize("store_name", sorted(STORE_SETTINGS))
def test_the_rescoring_follows_its_weights_whichever_store_holds_the_vectors(
    store_name, workspace, agent, settings
):
    """Sentences live on the chunk rows, so the stage is the same on every store: by chunk cosine alone
    the page about the shop is first, by best sentence alone the guide with the buried answer."""
    settings.VECTOR_STORES = {"default": STORE_SETTINGS[store_name]}
    settings.SENTENCE_VECTORS = True
    for title, text in DOCS.items():
        index_text(workspace, agent, title, text)

    def first(weights):
        params = SearchParams(top_k=3, semantic_cache=False, sentence_weights=weights)
        return search_passages(workspace_id=workspace.id, query=QUESTION, params=params)[0].source_title

    assert first((1.0, 0.0, 0.0)) == "Lyon shop"
    assert first((0.0, 1.0, 0.0)) == "Kettle guide"


def test_a_deployment_without_sentence_vectors_does_not_rescore(settings):
    settings.SENTENCE_VECTORS = False
    assert SearchParams().sentence_weights == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="sentence_weights"):
        SearchParams(sentence_weights=(0.5, -0.1, 0.6))


def test_sentence_scores_are_read_within_the_workspace_and_model_only(
    workspace, other_workspace, agent, other_agent, settings
):
    settings.SENTENCE_VECTORS = True
    index_text(other_workspace, other_agent, "Kettle guide", DOCS["Kettle guide"])
    theirs = [str(c.id) for c in _chunks(other_workspace, "Kettle guide")]
    query = embedders["default"].embed_query(QUESTION)
    model = embedders["default"].model_name
    read = {"chunk_ids": theirs, "vector": query, "model_name": model}
    assert sentences.best_sentence_scores(workspace_id=workspace.id, **read) == {}
    assert set(sentences.best_sentence_scores(workspace_id=other_workspace.id, **read)) == set(theirs)
    read["model_name"] = "another-model"
    assert sentences.best_sentence_scores(workspace_id=other_workspace.id, **read) == {}


def test_one_job_of_many_pages_gives_every_chunk_its_own_sentences(workspace, agent, settings):
    """Sentences go in the same parts as the chunks, cut across pages (EMBED_BATCH_SIZE 7 here), and a
    sentence every page repeats is in each page's inputs: each chunk must get exactly its own."""
    from ingestion.indexing import documents_index
    from sources.models import Document, Source, Status

    settings.SENTENCE_VECTORS, settings.EMBED_BATCH_SIZE = True, 7
    shared = "Every order ships from the warehouse in Lyon."
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Site", config={"url": "https://a.test/"}
        )
        documents = [
            Document.objects.create(
                source=source,
                url=f"https://a.test/{i}",
                title=f"Page {i}",
                text=f"{shared} Page {i} explains returns of order type {i}. " + FILLER * (i % 3),
                status=Status.INDEXING,
            )
            for i in range(6)
        ]
        documents_index(documents=documents)
        chunks = list(Chunk.objects.filter(source=source).select_related("document"))
    embedder = embedders["default"]
    assert {c.document_id for c in chunks} == {d.id for d in documents}
    for chunk in chunks:
        texts = sentence_texts(chunk.text, chunk.document.title)
        assert shared in texts
        stored = sentences.unpack(chunk.sentence_vectors, embedder.dimensions)
        assert np.allclose(stored, embedder.embed_documents(texts), atol=2e-3)


def test_a_copy_in_memory_rescores_without_reading_the_database_and_alike(workspace, agent, settings):
    """A workspace held in memory (retrieval/resident.py) holds its sentence vectors too: the rescoring
    reads no row for them and scores what the database holds; a copy too big with them is held without
    them, and the rescoring reads the rows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from retrieval import resident

    settings.SENTENCE_VECTORS = True
    for title, text in DOCS.items():
        index_text(workspace, agent, title, text)
    embedder = embedders["default"]
    with workspace_scope(workspace.id):
        ids = [str(i) for i in Chunk.objects.values_list("id", flat=True)]
    read = {"workspace_id": workspace.id, "chunk_ids": ids, "vector": embedder.embed_query(QUESTION)}
    from_rows = sentences.best_sentence_scores(**read, model_name=embedder.model_name)
    copy = resident.load(workspace_id=workspace.id, model_name=embedder.model_name, generation="g")
    with CaptureQueriesContext(connection) as queries:
        held = sentences.best_sentence_scores(**read, model_name=embedder.model_name, held=copy)
    assert held == from_rows and len(held) == len(ids)
    assert not queries.captured_queries
    settings.SEARCH_RESIDENT_MAX_BYTES = copy.nbytes - 1
    smaller = resident.load(workspace_id=workspace.id, model_name=embedder.model_name, generation="g")
    assert smaller.sentence_rows(ids) is None and smaller.nbytes < copy.nbytes
    with CaptureQueriesContext(connection) as queries:
        assert (
            sentences.best_sentence_scores(**read, model_name=embedder.model_name, held=smaller) == from_rows
        )
    assert len(queries.captured_queries) == 1
