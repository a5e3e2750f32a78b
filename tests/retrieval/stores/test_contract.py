"""One contract, every store: the same cases run against PgVectorStore and QdrantStore."""

from __future__ import annotations

import numpy as np
import pytest

from ingestion.text.chunking import chunk_id
from retrieval import resident
from retrieval.keyword import K1, B, term_counts
from retrieval.stores.base import InvalidFilter, VectorRecord, VectorStore
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

MODEL = "test-model"


def make_store(name: str):
    if name == "pgvector":
        from retrieval.stores.pgvector import PgVectorStore

        return PgVectorStore()
    from retrieval.stores.qdrant import QdrantStore

    return QdrantStore(location=":memory:", collection="contract_tests")


@pytest.fixture(params=["pgvector", "qdrant"])
def store(request):
    return make_store(request.param)


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


class Corpus:
    """Chunk rows (the pgvector store needs them; the Qdrant store ignores them) plus their records."""

    def __init__(self, store, workspace, agent):
        self.store, self.workspace, self.agent = store, workspace, agent
        with workspace_scope(workspace.id):
            self.source = Source.objects.create(agent=agent, kind="text", title="s")
            self.document = Document.objects.create(source=self.source, text="t")
        self.count = 0

    def add(self, text: str, vector: np.ndarray, **metadata) -> str:
        cid = chunk_id(self.document.id, self.count, text)
        with workspace_scope(self.workspace.id):
            Chunk.objects.create(
                id=cid,
                document=self.document,
                source=self.source,
                position=self.count,
                text=text,
                metadata=metadata,
            )
        self.count += 1
        meta = {
            "workspace_id": self.workspace.id,
            "document_id": self.document.id,
            "source_id": self.source.id,
        }
        meta.update(metadata)
        self.store.upsert(
            workspace_id=self.workspace.id,
            records=[VectorRecord(chunk_id=str(cid), vector=vector, metadata=meta, terms=term_counts(text))],
            model_name=MODEL,
        )
        return str(cid)


@pytest.fixture
def corpus(store, workspace, agent):
    return Corpus(store, workspace, agent)


@pytest.fixture
def other_corpus(store, other_workspace, other_agent):
    return Corpus(store, other_workspace, other_agent)


def ids(hits):
    return [h.chunk_id for h in hits]


def test_vector_search_ranks_by_cosine_within_the_workspace(store, corpus, other_corpus):
    near = corpus.add("near", unit(1, 0.1))
    far = corpus.add("far", unit(0, 1))
    theirs = other_corpus.add("exact", unit(1, 0))
    hits = store.search(workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=10, model_name=MODEL)
    assert ids(hits) == [near, far]
    assert theirs not in ids(hits)
    assert hits[0].score == pytest.approx(float(unit(1, 0.1) @ unit(1, 0)), abs=1e-4)


def test_min_score_applies_before_top_k(store, corpus):
    a = corpus.add("a", unit(1, 0))
    b = corpus.add("b", unit(1, 0.2))
    corpus.add("c", unit(1, 3))
    corpus.add("d", unit(0, 1))
    hits = store.search(
        workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=3, min_score=0.9, model_name=MODEL
    )
    assert ids(hits) == [a, b]
    assert all(h.score >= 0.9 for h in hits)


def test_keyword_search_is_bm25_within_the_workspace(store, corpus, other_corpus):
    refunds = corpus.add("Refunds are paid within five days of the return.", unit(1, 0))
    shipping = corpus.add("Shipping takes two days; refunds are rare.", unit(0, 1))
    corpus.add("Nothing relevant here at all.", unit(1, 1))
    theirs = other_corpus.add("Refunds refunds refunds returns.", unit(1, 0))
    hits = store.keyword_search(
        workspace_id=corpus.workspace.id, terms=term_counts("refund return"), top_k=10
    )
    assert ids(hits) == [refunds, shipping]
    assert theirs not in ids(hits)
    assert 0 < hits[1].score < hits[0].score <= 1.0


def test_keyword_scores_follow_bm25_idf(store, corpus):
    # "alpha" is in every chunk, "omega" in one: the rare term must weigh more.
    common = corpus.add("alpha alpha beta", unit(1, 0))
    rare = corpus.add("alpha omega", unit(0, 1))
    corpus.add("alpha gamma", unit(1, 1))
    hits = store.keyword_search(workspace_id=corpus.workspace.id, terms=term_counts("alpha omega"), top_k=3)
    assert ids(hits)[0] == rare
    assert common in ids(hits)


def test_keyword_min_score_and_unknown_terms(store, corpus):
    corpus.add("apples and oranges", unit(1, 0))
    assert store.keyword_search(workspace_id=corpus.workspace.id, terms=term_counts("zebra"), top_k=5) == []
    assert store.keyword_search(workspace_id=corpus.workspace.id, terms={}, top_k=5) == []
    hits = store.keyword_search(
        workspace_id=corpus.workspace.id, terms=term_counts("apples zebra"), top_k=5, min_score=0.99
    )
    assert hits == []  # half the query is missing, so the normalised score cannot reach 0.99


FILTER_CASES = [
    ({"lang": "en"}, ["en-public", "en-admin"]),
    ({"lang": ["de", "fr"]}, ["de-public"]),
    ({"audience": "public"}, ["en-public", "de-public"]),
    ({"audience": ["role:admin", "nobody"]}, ["en-admin"]),
    ({"audience": []}, []),
    ({"lang": "en", "audience": "public"}, ["en-public"]),
    ({"missing_field": "x"}, []),
    ({"flag": True}, ["en-admin"]),
    ({"flag": 1}, []),
]


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
def test_filters_work_as_acls_in_both_searches(store, corpus, filters, expected):
    made = {
        "en-public": corpus.add("policy en public", unit(1, 0), lang="en", audience=["public"]),
        "en-admin": corpus.add(
            "policy en admin", unit(1, 0.1), lang="en", audience=["role:admin"], flag=True
        ),
        "de-public": corpus.add("policy de public", unit(1, 0.2), lang="de", audience=["public", "de"]),
    }
    want = {made[name] for name in expected}
    vector_hits = store.search(
        workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=10, model_name=MODEL, filters=filters
    )
    keyword_hits = store.keyword_search(
        workspace_id=corpus.workspace.id, terms=term_counts("policy"), top_k=10, filters=filters
    )
    assert set(ids(vector_hits)) == want
    assert set(ids(keyword_hits)) == want


@pytest.mark.parametrize("bad", [{"a b": "x"}, {"x;drop": 1}, {"ok": {"nested": 1}}, {"ok": None}])
def test_bad_filters_are_refused_not_ignored(store, corpus, bad):
    with pytest.raises(InvalidFilter):
        store.search(
            workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=1, model_name=MODEL, filters=bad
        )
    with pytest.raises(InvalidFilter):
        store.keyword_search(workspace_id=corpus.workspace.id, terms={"x": 1}, top_k=1, filters=bad)


def test_search_can_be_restricted_to_chunk_ids(store, corpus):
    a = corpus.add("apple pie", unit(1, 0))
    b = corpus.add("apple tart", unit(0, 1))
    hits = store.search(
        workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=5, model_name=MODEL, chunk_ids=[b]
    )
    assert ids(hits) == [b]
    kw = store.keyword_search(
        workspace_id=corpus.workspace.id, terms=term_counts("apple"), top_k=5, chunk_ids=[a]
    )
    assert ids(kw) == [a]


def test_upsert_replaces_and_delete_leaves_nothing_behind(store, corpus, other_corpus):
    a = corpus.add("first version words", unit(1, 0))
    b = corpus.add("second words", unit(0, 1))
    theirs = other_corpus.add("words", unit(1, 0))
    store.upsert(
        workspace_id=corpus.workspace.id,
        records=[
            VectorRecord(
                chunk_id=a,
                vector=unit(0, 1),
                terms=term_counts("replaced text"),
                metadata={"workspace_id": corpus.workspace.id},
            )
        ],
        model_name=MODEL,
    )
    assert store.keyword_search(workspace_id=corpus.workspace.id, terms=term_counts("first"), top_k=5) == []
    assert ids(
        store.keyword_search(workspace_id=corpus.workspace.id, terms=term_counts("replaced"), top_k=5)
    ) == [a]
    assert store.count(workspace_id=corpus.workspace.id) == 2

    store.delete(workspace_id=corpus.workspace.id, chunk_ids=[a, b])
    assert store.count(workspace_id=corpus.workspace.id) == 0
    assert store.search(workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=5, model_name=MODEL) == []
    assert store.keyword_search(workspace_id=corpus.workspace.id, terms=term_counts("words"), top_k=5) == []
    # Deleting from one workspace never touches another's points, even given their ids.
    store.delete(workspace_id=corpus.workspace.id, chunk_ids=[theirs])
    assert store.count(workspace_id=other_corpus.workspace.id) == 1


def test_point_ids_lists_the_workspaces_vectors_and_nothing_else(store, corpus, other_corpus):
    assert store.point_ids(workspace_id=corpus.workspace.id) == set()
    # More than one page of a listing (Qdrant scrolls 1,000 at a time), written in one batch.
    with workspace_scope(corpus.workspace.id):
        rows = Chunk.objects.bulk_create(
            Chunk(
                id=chunk_id(corpus.document.id, n, f"chunk {n}"),
                workspace_id=corpus.workspace.id,
                document=corpus.document,
                source=corpus.source,
                position=n,
                text=f"chunk {n}",
            )
            for n in range(1005)
        )
    many = {str(row.id) for row in rows}
    records = [VectorRecord(chunk_id=cid, vector=unit(1, 0.5), terms={"chunk": 1}) for cid in many]
    store.upsert(workspace_id=corpus.workspace.id, records=records, model_name=MODEL)
    theirs = other_corpus.add("theirs", unit(1, 0))
    assert store.point_ids(workspace_id=corpus.workspace.id) == many
    assert store.point_ids(workspace_id=other_corpus.workspace.id) == {theirs}
    gone = sorted(many)[:5]
    store.delete(workspace_id=corpus.workspace.id, chunk_ids=gone)
    assert store.point_ids(workspace_id=corpus.workspace.id) == many - set(gone)


def test_vectors_of_another_model_are_not_mixed_in(store, corpus):
    corpus.add("old", unit(1, 0))
    hits = store.search(
        workspace_id=corpus.workspace.id, vector=unit(1, 0), top_k=5, model_name="other-model"
    )
    assert hits == []


def test_vectors_are_read_back_by_id_within_the_workspace_and_model(store, corpus, other_corpus):
    ours = corpus.add("ours", unit(1, 2, 3))
    theirs = other_corpus.add("theirs", unit(3, 2, 1))
    read = store.vectors(workspace_id=corpus.workspace.id, chunk_ids=[ours, theirs], model_name=MODEL)
    assert list(read) == [ours]
    np.testing.assert_allclose(read[ours], unit(1, 2, 3), atol=1e-6)
    assert store.vectors(workspace_id=corpus.workspace.id, chunk_ids=[ours], model_name="other-model") == {}
    # The outsider asking for our id by its own workspace gets nothing.
    assert store.vectors(workspace_id=other_corpus.workspace.id, chunk_ids=[ours], model_name=MODEL) == {}
    assert store.vectors(workspace_id=corpus.workspace.id, chunk_ids=[], model_name=MODEL) == {}


def test_a_filter_that_few_chunks_pass_still_finds_them_by_keyword(store, corpus):
    # 210 strong matches fail the filter; the one weak match that passes must still be found.
    for i in range(210):
        corpus.add(f"alpha alpha alpha note {i}", unit(1, i / 210), lang="en")
    rare = corpus.add(
        "alpha and a lot of other words that dilute the match for this one", unit(0, 1), lang="de"
    )
    hits = store.keyword_search(
        workspace_id=corpus.workspace.id, terms=term_counts("alpha"), top_k=3, filters={"lang": "de"}
    )
    assert ids(hits) == [rare]


# --- a change of embedding model, through the services, the search API and `manage.py reindex` ----------

STORE_SETTINGS = {
    "pgvector": {"BACKEND": "retrieval.stores.pgvector.PgVectorStore"},
    "qdrant": {
        "BACKEND": "retrieval.stores.qdrant.QdrantStore",
        "OPTIONS": {"location": ":memory:", "collection": "contract_model_change"},
    },
}


@pytest.fixture
def provider():
    from tests.fakes.openai_server import FakeProvider, openai_compatible_server

    with openai_compatible_server(FakeProvider()) as running:
        yield running


def use_embedding_model(settings, provider, model: str) -> None:
    """The deployment's embedder; the fake provider gives both models the same vectors, so only the
    recorded model name can keep the old ones out of a search."""
    settings.EMBEDDERS = {
        "default": {
            "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
            "OPTIONS": {"base_url": provider.base_url, "model": model, "api_key": provider.api_key},
        }
    }


TIDES = "The tide rises twice a day because of the moon."


@pytest.mark.parametrize("store_name", sorted(STORE_SETTINGS))
def test_a_model_change_is_reported_and_reindexed_alike_on_every_store(
    store_name, settings, provider, workspace, agent, api
):
    import io

    from django.core.management import call_command
    from django.db import connection

    from ingestion.lifecycle import source_index_now, source_reindex
    from retrieval.vectors import embedding_input
    from sources.models import Status
    from tests.factories import index_text

    settings.VECTOR_STORES = {"default": STORE_SETTINGS[store_name]}
    if store_name == "pgvector":
        # Exact scans: the test database's HNSW graph keeps every rolled-back test's vectors, among which
        # an approximate scan can miss one of two live rows (pgvector#181); recall is not the point here.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
    use_embedding_model(settings, provider, "embed-v1")
    tides = index_text(workspace, agent, "Tides", TIDES)
    bread = index_text(workspace, agent, "Bread", "Sourdough bread needs a starter and a long rise.")
    with workspace_scope(workspace.id):
        assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {"embed-v1"}
    # What was embedded for the Tides chunk, so its vector is the query's (the fake's vectors are random).
    query = {"q": embedding_input(TIDES, "Tides"), "mode": "vector"}
    body = api.get("/api/v1/search", query).json()
    assert "reindex_needed" not in body
    assert body["results"][0]["source"]["title"] == "Tides"

    use_embedding_model(settings, provider, "embed-v2")
    # Bread is re-embedded by the new model, Tides is left behind.
    assert source_reindex(source=bread, queue=False)
    source_index_now(source=bread)
    body = api.get("/api/v1/search", query).json()
    assert body["reindex_needed"]["chunks"] == tides.chunks_count
    # The old model's vectors are never mixed in, and the notice says why they are missing.
    assert "Tides" not in [r["source"]["title"] for r in body["results"]]
    assert [r["source"]["title"] for r in body["results"]] == ["Bread"]

    out = io.StringIO()
    call_command("reindex", "--workspace", str(workspace.id), "--stale-only", stdout=out)
    assert "Queued 1 sources" in out.getvalue()
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=tides.id).status == Status.PENDING
        assert Source.objects.get(id=bread.id).status == Status.DONE
    source_index_now(source=tides)  # what the queued task does

    body = api.get("/api/v1/search", query).json()
    assert "reindex_needed" not in body
    assert body["results"][0]["source"]["title"] == "Tides"
    with workspace_scope(workspace.id):
        assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {"embed-v2"}


@pytest.mark.parametrize("in_memory", [False, "vectors", "all"], ids=["store", "vectors", "postings"])
@pytest.mark.parametrize("min_score", [None, 0.3])
def test_hybrid_search_gives_the_base_class_answer(store, corpus, other_corpus, min_score, in_memory):
    """A store's own hybrid_search (pgvector's two statements) must equal the four searches it replaces:
    both rankings, and every candidate's cosine and BM25 (top 2 of each, so some candidates are only in
    one list and get scored by the other retriever). So must a search of the workspace's vectors held in
    memory (retrieval/resident.py), up to float32 rounding of the cosines, and one with its postings too
    (retrieval/resident_postings.py: no statement at all)."""
    if in_memory and not store.searches_resident_vectors:
        pytest.skip("this store searches its own vectors only")
    texts = [
        ("Refunds are paid within five days of the return.", unit(1, 0.1)),
        ("Shipping takes two days; refunds are rare.", unit(0, 1)),
        ("Returns need the original packaging.", unit(1, 0.5)),
        ("Nothing relevant here, most days.", unit(1, 0)),
        ("Gift cards are never refunded.", unit(0.2, 1)),
        ("Exchanges within thirty days of delivery.", unit(1, 2)),
        ("Our shop opens at nine.", unit(1, -0.3)),
    ]
    for text, vector in texts:
        corpus.add(text, vector)
    other_corpus.add("Refunds refunds refunds returns.", unit(1, 0))
    asked = []

    def query_vector():
        asked.append(True)
        return unit(1, 0)

    arguments = {
        "workspace_id": corpus.workspace.id,
        "terms": term_counts("refund return days"),
        "top_k": 2,
        "model_name": MODEL,
        "min_score": min_score,
    }
    held = None
    if in_memory:
        held = resident.load(workspace_id=corpus.workspace.id, model_name=MODEL, generation="g")
        assert len(held.ids) == len(texts)  # the other workspace's chunk is not in this one's copy
        assert held.postings is not None and held.postings.chunk_count == len(texts)
    if in_memory == "all":
        options = {k: v for k, v in arguments.items() if k not in ("workspace_id", "model_name")}
        own = resident.hybrid_search(held, vector=query_vector, k1=K1, b=B, **options)
    else:
        own = store.hybrid_search(vector=query_vector, resident=held, **arguments)
    reference = VectorStore.hybrid_search(store, vector=query_vector, **arguments)
    assert asked == [True, True]  # the embedding was asked for once per search
    assert ids(own.by_vector) == ids(reference.by_vector) and len(own.by_vector) == 2
    assert ids(own.by_keyword) == ids(reference.by_keyword) and own.by_keyword
    assert own.vector_scores.keys() == reference.vector_scores.keys()
    assert own.keyword_scores.keys() == reference.keyword_scores.keys()
    if min_score is None:  # a vector candidate outside the keyword top 2 got its BM25, and the reverse
        assert set(own.keyword_scores) - set(ids(own.by_keyword))
        assert set(own.vector_scores) - set(ids(own.by_vector))
    for chunk, score in reference.vector_scores.items():
        assert own.vector_scores[chunk] == pytest.approx(score, abs=1e-6 if in_memory else 1e-12)
    for chunk, score in reference.keyword_scores.items():
        assert own.keyword_scores[chunk] == pytest.approx(score, abs=1e-9 if in_memory else 1e-12)
