"""Qdrant-only behaviour: tenancy enforced by the store itself, on-disk local mode, errors for people.

These need no database: the Qdrant store keeps everything in its collection.
"""

from __future__ import annotations

import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from qdrant_client import models

from retrieval import keyword
from retrieval.keyword import term_counts
from retrieval.stores.base import VectorRecord, VectorStoreError
from retrieval.stores.qdrant import QdrantStore

MODEL = "test-model"
OURS, THEIRS = 1, 2


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def record(text: str, vector: np.ndarray, **metadata) -> VectorRecord:
    return VectorRecord(chunk_id=str(uuid.uuid4()), vector=vector, metadata=metadata, terms=term_counts(text))


def ids(hits) -> list[str]:
    return [h.chunk_id for h in hits]


class FilterSpy:
    """Wraps the client and keeps every filter the store sends with a read, count or delete."""

    def __init__(self, client) -> None:
        self.client, self.filters = client, []

    def __getattr__(self, name):
        method = getattr(self.client, name)

        def call(*args, **kwargs):
            for key in ("query_filter", "count_filter"):
                if key in kwargs:
                    self.filters.append((name, kwargs[key]))
            if "points_selector" in kwargs:
                self.filters.append((name, kwargs["points_selector"].filter))
            return method(*args, **kwargs)

        return call


@pytest.fixture
def store():
    store = QdrantStore(location=":memory:", collection="qdrant_tests")
    yield store
    store.close()


def test_workspace_filter_is_sent_even_when_the_caller_passes_none(store):
    mine = record("refund policy", unit(1, 0))
    theirs = record("refund policy", unit(1, 0))  # identical vector and terms in another workspace
    store.upsert(workspace_id=OURS, records=[mine], model_name=MODEL)
    store.upsert(workspace_id=THEIRS, records=[theirs], model_name=MODEL)
    spy = FilterSpy(store._client)
    store._client = spy

    for filters in (None, {}):
        hits = store.search(workspace_id=OURS, vector=unit(1, 0), top_k=10, model_name=MODEL, filters=filters)
        assert ids(hits) == [mine.chunk_id]
        kw = store.keyword_search(workspace_id=OURS, terms=term_counts("refund"), top_k=10, filters=filters)
        assert ids(kw) == [mine.chunk_id]
    assert store.count(workspace_id=OURS) == 1
    store.delete(workspace_id=OURS, chunk_ids=[mine.chunk_id, theirs.chunk_id])

    ours = models.FieldCondition(key="workspace_id", match=models.MatchValue(value=str(OURS)))
    assert {"query_points", "count", "delete"} <= {name for name, _ in spy.filters}
    for name, sent_filter in spy.filters:
        assert sent_filter.must[0] == ours, name
    # The delete, given their id too, removed only ours.
    assert store.count(workspace_id=OURS) == 0
    assert store.count(workspace_id=THEIRS) == 1


def test_keyword_scores_ignore_other_workspaces(store):
    # Qdrant's own IDF spans the collection; ours must not move when another workspace fills up with "omega".
    texts = ["alpha alpha beta", "alpha omega", "alpha gamma"]
    chunks = [record(text, unit(1, i)) for i, text in enumerate(texts)]
    store.upsert(workspace_id=OURS, records=chunks, model_name=MODEL)
    query = term_counts("alpha omega")
    before = store.keyword_search(workspace_id=OURS, terms=query, top_k=3)
    store.upsert(
        workspace_id=THEIRS, records=[record("omega", unit(0, 1)) for _ in range(20)], model_name=MODEL
    )
    after = store.keyword_search(workspace_id=OURS, terms=query, top_k=3)
    assert after == before
    assert ids(after)[0] == chunks[1].chunk_id
    # The exact BM25 of "alpha omega" with this workspace's idf (3 chunks) and the fixed average length.
    idfs = [keyword.idf(3, 3), keyword.idf(3, 1)]
    expected = sum(idf * keyword.term_weight(1, 2, store.average_length) for idf in idfs)
    assert after[0].score == pytest.approx(expected / keyword.max_score(idfs, [1, 1]))


def test_upsert_cannot_take_over_another_workspaces_point(store):
    theirs = record("secret plans", unit(1, 0))
    store.upsert(workspace_id=THEIRS, records=[theirs], model_name=MODEL)
    hijack = VectorRecord(chunk_id=theirs.chunk_id, vector=unit(0, 1), terms=term_counts("mine now"))
    store.upsert(workspace_id=OURS, records=[hijack], model_name=MODEL)
    assert store.count(workspace_id=OURS) == 0
    hits = store.search(workspace_id=THEIRS, vector=unit(1, 0), top_k=1, model_name=MODEL)
    assert ids(hits) == [theirs.chunk_id]
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)


def test_an_on_disk_collection_is_found_again_after_reopening(tmp_path):
    first = QdrantStore(path=str(tmp_path / "qdrant"), collection="on_disk")
    chunk = record("durable words", unit(1, 0), lang="en")
    first.upsert(workspace_id=OURS, records=[chunk], model_name=MODEL)
    first.close()

    reopened = QdrantStore(path=str(tmp_path / "qdrant"), collection="on_disk")
    try:
        assert reopened.count(workspace_id=OURS) == 1
        hits = reopened.search(
            workspace_id=OURS, vector=unit(1, 0), top_k=1, model_name=MODEL, filters={"lang": "en"}
        )
        assert ids(hits) == [chunk.chunk_id]
        assert ids(reopened.keyword_search(workspace_id=OURS, terms=term_counts("durable"), top_k=1)) == [
            chunk.chunk_id
        ]
    finally:
        reopened.close()


def test_vectors_of_another_size_are_refused_with_a_reindex_message(store):
    store.upsert(workspace_id=OURS, records=[record("words", unit(1, 0))], model_name=MODEL)
    small = VectorRecord(chunk_id=str(uuid.uuid4()), vector=np.ones(8, dtype=np.float32))
    with pytest.raises(VectorStoreError, match=r"384-dimensional.*Reindex"):
        store.upsert(workspace_id=OURS, records=[small], model_name="small-model")


def test_an_unreachable_server_is_a_vector_store_error_saying_where():
    store = QdrantStore(url="http://127.0.0.1:9", timeout=2)
    with pytest.raises(
        VectorStoreError, match=r"Qdrant at http://127\.0\.0\.1:9.*Check that Qdrant is running"
    ):
        store.count(workspace_id=OURS)
    with pytest.raises(VectorStoreError, match="Could not store vectors"):
        store.upsert(workspace_id=OURS, records=[record("words", unit(1, 0))], model_name=MODEL)
    with pytest.raises(VectorStoreError, match="Could not search vectors"):
        store.search(workspace_id=OURS, vector=unit(1, 0), top_k=1, model_name=MODEL)


def test_a_store_without_a_location_is_a_configuration_error():
    with pytest.raises(TypeError, match="url="):
        QdrantStore()


@pytest.fixture
def refusing_server():
    """A server on 127.0.0.1 that answers every request as Qdrant does to a wrong API key."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"status":{"error":"Invalid api-key"}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_PUT = do_GET

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_refused_request_is_a_vector_store_error_with_the_status(refusing_server):
    store = QdrantStore(url=refusing_server, api_key="wrong", timeout=2)
    with pytest.raises(VectorStoreError, match=r"Could not count vectors.*401.*Invalid api-key.*API key"):
        store.count(workspace_id=OURS)


def test_a_server_that_never_answers_times_out_as_a_vector_store_error():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    try:
        store = QdrantStore(url=f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=1)
        with pytest.raises(VectorStoreError, match=r"Timeout"):
            store.search(workspace_id=OURS, vector=unit(1, 0), top_k=1, model_name=MODEL)
    finally:
        listener.close()
