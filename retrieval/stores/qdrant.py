"""Vectors and BM25 keywords in one Qdrant collection shared by every workspace.

Each chunk is one point whose id is the chunk's UUID, so re-indexing overwrites instead of duplicating.
A point holds a named dense vector (cosine) and a named sparse vector of BM25 document weights, plus a
payload: `workspace_id` (a tenant keyword index), `model_name`, the caller's metadata under `meta`, and
the chunk's `terms`, their counts `tfs` and `length`. Every read, count and delete goes through `_scope`,
which puts the workspace condition first in a `must` filter, so no caller can forget it.

Keyword ranking. Qdrant cannot renormalise document length at query time, so each sparse value is
BM25's saturated tf part computed at upsert time against a fixed `average_length`. Its IDF modifier is
computed over the whole collection, i.e. over every workspace, so Qdrant's own scores would let other
tenants' documents shift our ranking. Qdrant's sparse query therefore only gathers candidates (inside
the workspace and filters); they are then scored exactly here with per-workspace idf, from `count`
requests on the indexed `terms` payload, and normalised by `keyword.max_score` like the pgvector store.
The ranking is exact whenever the query terms' document frequencies in the workspace add up to at most
`keyword_candidates` (every chunk holding one is a candidate); beyond that, the candidates are the best
by collection-wide idf, so a chunk ranked low there but high here can be missed. Sending per-workspace
idf as query weights to an unmodified sparse vector would be exact in Qdrant, but not use its IDF.

Only the public client API is used, so local mode (tests) and a server behave alike; client errors
become VectorStoreError with a message for people and the original exception chained for operators.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse

from retrieval import keyword
from retrieval.stores.base import (
    Filters,
    VectorHit,
    VectorRecord,
    VectorStore,
    VectorStoreError,
    validate_filters,
)

DENSE = "dense"
KEYWORDS = "keywords"
UPSERT_BATCH = 256  # points per request, well under the server's default 32 MB request limit


def term_id(term: str) -> int:
    """A stable 32-bit id for a term (Python's hash() changes per process; sparse indices are u32)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def sparse_vector(weights: dict[str, float]) -> models.SparseVector:
    # Two terms may share a 32-bit id; Qdrant wants unique indices, so their weights add up.
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        merged[term_id(term)] = merged.get(term_id(term), 0.0) + float(weight)
    return models.SparseVector(indices=list(merged), values=list(merged.values()))


def filter_conditions(filters: Filters | None) -> list[models.Condition] | None:
    """Qdrant conditions on `meta.<key>` with the semantics of base.matches_filters, or None when the
    filters can match nothing (an empty list of accepted values)."""
    conditions: list[models.Condition] = []
    for key, values in validate_filters(filters).items():
        if not values:
            return None
        path = f"meta.{key}"  # keys are plain identifiers (validate_filters), so no path injection
        options: list[models.Condition] = []
        strings = [v for v in values if isinstance(v, str)]
        if strings:
            # Matching a payload array means sharing one element, which Qdrant does natively.
            options.append(models.FieldCondition(key=path, match=models.MatchAny(any=strings)))
        for value in values:
            if isinstance(value, bool):
                # Qdrant keeps booleans apart from integers, as matches_filters does: True never matches 1.
                options.append(models.FieldCondition(key=path, match=models.MatchValue(value=value)))
            elif isinstance(value, int | float):
                # A range, not MatchValue: 2 must match a stored 2.0 (as in Python and jsonb), and Qdrant
                # has no exact match for floats. Ranges never match booleans.
                options.append(models.FieldCondition(key=path, range=models.Range(gte=value, lte=value)))
        conditions.append(options[0] if len(options) == 1 else models.Filter(should=options))
    return conditions


class QdrantStore(VectorStore):
    def __init__(
        self,
        *,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "grounded_chunks",
        location: str | None = None,
        path: str | None = None,
        timeout: int = 10,
        dimensions: int | None = None,
        average_length: float = 256.0,
        keyword_candidates: int = 200,
        ef_search: int = 100,
        shard_number: int | None = None,
        replication_factor: int | None = None,
        write_consistency_factor: int | None = None,
    ) -> None:
        """`url` (+ `api_key`) for a server; `location=":memory:"` or `path` (a directory) for local mode.

        `dimensions` fixes the dense size when the collection is created (default: the first record's).
        `average_length` is the chunk length, in terms, that BM25 normalises against.
        """
        if url:
            # No version check at construction: building a store must not do network I/O; the first
            # operation reports an unreachable server as VectorStoreError.
            self._client = QdrantClient(
                url=url, api_key=api_key or None, timeout=timeout, check_compatibility=False
            )
            self._where = url
        elif location == ":memory:":
            self._client = QdrantClient(location=":memory:")
            self._where = "in memory"
        elif path or location:
            self._client = QdrantClient(path=path or location)
            self._where = str(path or location)
        else:
            raise TypeError("QdrantStore needs url= (a Qdrant server), or location= or path= for local mode.")
        self.collection = collection
        self.configured_dimensions = dimensions
        self.average_length = float(average_length)
        self.keyword_candidates = int(keyword_candidates)
        self.ef_search = int(ef_search)
        self._dimensions: int | None = None  # the collection's dense size, once it is known to exist
        # Cluster layout, passed when the collection is created; None leaves Qdrant's default.
        self.cluster_options: dict[str, Any] = {
            name: value
            for name, value in (
                ("shard_number", shard_number),
                ("replication_factor", replication_factor),
                ("write_consistency_factor", write_consistency_factor),
            )
            if value is not None
        }

    def close(self) -> None:
        """Release the client (local mode holds a lock on its directory until closed)."""
        self._client.close()

    # --- writes ---------------------------------------------------------------------------------

    def upsert(self, *, workspace_id: int, records: list[VectorRecord], model_name: str) -> None:
        if not records:
            return
        with self._errors("store vectors"):
            self._ensure_collection(self.configured_dimensions or len(records[0].vector))
            for start in range(0, len(records), UPSERT_BATCH):
                batch = records[start : start + UPSERT_BATCH]
                for record in batch:
                    self._check_dimensions(len(record.vector))
                foreign = self._ids_of_other_workspaces(workspace_id, [point_id(r.chunk_id) for r in batch])
                points = [self._point(workspace_id, r, model_name) for r in batch]
                points = [p for p in points if p.id not in foreign]
                if points:
                    self._client.upsert(self.collection, points=points, wait=True)

    def _ids_of_other_workspaces(self, workspace_id: int, ids: list[str]) -> set[str]:
        # Point ids are global in the collection, so upserting another workspace's chunk id would take its
        # point over; such records are skipped, as pgvector skips rows it does not own. The one filter
        # not built by _scope, on purpose: it looks for what is *not* this workspace's.
        not_ours = models.Filter(
            must=[models.HasIdCondition(has_id=list(ids))], must_not=[self._workspace_condition(workspace_id)]
        )
        found, _next = self._client.scroll(
            self.collection, scroll_filter=not_ours, limit=len(ids), with_payload=False
        )
        return {str(r.id) for r in found}

    def _point(self, workspace_id: int, record: VectorRecord, model_name: str) -> models.PointStruct:
        length = sum(record.terms.values())
        vectors: dict[str, Any] = {DENSE: np.asarray(record.vector, dtype=np.float32).tolist()}
        if record.terms:
            weights = {
                t: keyword.term_weight(tf, length, self.average_length) for t, tf in record.terms.items()
            }
            vectors[KEYWORDS] = sparse_vector(weights)
        payload = {
            "workspace_id": str(workspace_id),  # a string: only keyword (and uuid) indexes can be tenants
            "model_name": model_name,
            "meta": record.metadata,
            "terms": list(record.terms),
            "tfs": list(record.terms.values()),
            "length": length,
        }
        return models.PointStruct(id=point_id(record.chunk_id), vector=vectors, payload=payload)

    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None:
        if not chunk_ids:
            return
        with self._errors("delete vectors"):
            if not self._ensure_collection(None):
                return
            ids: list[models.ExtendedPointId] = [point_id(c) for c in chunk_ids]
            selector = models.FilterSelector(
                filter=self._scope(workspace_id, models.HasIdCondition(has_id=ids))
            )
            self._client.delete(self.collection, points_selector=selector, wait=True)

    # --- reads ----------------------------------------------------------------------------------

    def search(
        self,
        *,
        workspace_id: int,
        vector: np.ndarray,
        top_k: int,
        model_name: str,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
    ) -> list[VectorHit]:
        conditions = self._conditions(filters, chunk_ids)
        with self._errors("search vectors"):
            if conditions is None or top_k <= 0 or not self._ensure_collection(None):
                return []
            self._check_dimensions(len(vector))
            # Filtering on model_name keeps vectors of another embedding model out, even at the same size.
            model = models.FieldCondition(key="model_name", match=models.MatchValue(value=model_name))
            response = self._client.query_points(
                self.collection,
                query=np.asarray(vector, dtype=np.float32).tolist(),
                using=DENSE,
                query_filter=self._scope(workspace_id, model, *conditions),
                search_params=models.SearchParams(hnsw_ef=max(self.ef_search, top_k)),
                score_threshold=min_score,  # applied by Qdrant before the limit
                limit=top_k,
                with_payload=False,
            )
        return [VectorHit(chunk_id=str(p.id), score=float(p.score)) for p in response.points]

    def keyword_search(
        self,
        *,
        workspace_id: int,
        terms: dict[str, int],
        top_k: int,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
        k1: float = keyword.K1,
        b: float = keyword.B,
    ) -> list[VectorHit]:
        conditions = self._conditions(filters, chunk_ids)
        with self._errors("search keywords"):
            if conditions is None or not terms or top_k <= 0 or not self._ensure_collection(None):
                return []
            documents, frequencies = self._document_frequencies(workspace_id, list(terms))
            if not any(frequencies.values()):
                return []
            idfs = {term: keyword.idf(documents, n) for term, n in frequencies.items()}
            # Like pgvector: the best score counts every query term, so a half-missing query scores <= 0.5.
            best = keyword.max_score(list(idfs.values()), [terms[t] for t in idfs], k1)
            found = {t: terms[t] for t, n in frequencies.items() if n}
            response = self._client.query_points(
                self.collection,
                query=sparse_vector({t: float(qtf) for t, qtf in found.items()}),
                using=KEYWORDS,
                query_filter=self._scope(workspace_id, *conditions),
                # Every chunk holding a query term when they are few enough, so the ranking is exact.
                limit=min(sum(frequencies.values()), max(self.keyword_candidates, top_k * 4)),
                with_payload=["terms", "tfs", "length"],
            )
        hits = [
            VectorHit(
                chunk_id=str(p.id), score=min(1.0, self._bm25(p.payload or {}, found, idfs, k1, b) / best)
            )
            for p in response.points
        ]
        floor = float(min_score or 0.0)
        hits = [hit for hit in hits if hit.score > 0 and hit.score >= floor]
        hits.sort(key=lambda hit: (-hit.score, hit.chunk_id))
        return hits[:top_k]

    def _document_frequencies(self, workspace_id: int, terms: list[str]) -> tuple[int, dict[str, int]]:
        """The workspace's chunks with terms, and how many hold each term: BM25 idf per workspace, where
        Qdrant's IDF modifier counts the whole collection."""
        no_terms = models.IsEmptyCondition(is_empty=models.PayloadField(key="terms"))
        documents = self._count(self._scope(workspace_id, must_not=[no_terms]))
        if not documents:
            return 0, dict.fromkeys(terms, 0)
        has_term = {t: models.FieldCondition(key="terms", match=models.MatchValue(value=t)) for t in terms}
        return documents, {t: self._count(self._scope(workspace_id, has_term[t])) for t in terms}

    def _bm25(
        self, payload: dict[str, Any], query: dict[str, int], idfs: dict[str, float], k1: float, b: float
    ) -> float:
        # Recomputed from the payload rather than taken from Qdrant's score, so the idf, k1 and b are
        # this workspace's and a 32-bit term id collision cannot count a term the chunk does not hold.
        # (The sparse vectors that pick the candidates keep the default k1 and b they were written with.)
        term_frequencies = dict(zip(payload.get("terms", []), payload.get("tfs", []), strict=False))
        length = payload.get("length", 0)
        return sum(
            idfs[t] * qtf * keyword.term_weight(term_frequencies[t], length, self.average_length, k1, b)
            for t, qtf in query.items()
            if t in term_frequencies
        )

    def vectors(self, *, workspace_id: int, chunk_ids: list[str], model_name: str) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._errors("read vectors"):
            if not chunk_ids or not self._ensure_collection(None):
                return found
            model = models.FieldCondition(key="model_name", match=models.MatchValue(value=model_name))
            ids: list[models.ExtendedPointId] = [point_id(c) for c in chunk_ids]
            points, _next = self._client.scroll(
                self.collection,
                scroll_filter=self._scope(workspace_id, model, models.HasIdCondition(has_id=ids)),
                limit=len(ids),
                with_payload=False,
                with_vectors=[DENSE],
            )
            for point in points:
                vector = point.vector[DENSE] if isinstance(point.vector, dict) else point.vector
                found[str(point.id)] = np.asarray(vector, dtype=np.float32)
            return found

    def count(self, *, workspace_id: int) -> int:
        with self._errors("count vectors"):
            if not self._ensure_collection(None):
                return 0
            return self._count(self._scope(workspace_id))

    def point_ids(self, *, workspace_id: int) -> set[str]:
        found: set[str] = set()
        with self._errors("list points"):
            if not self._ensure_collection(None):
                return found
            offset = None
            while True:
                points, offset = self._client.scroll(
                    self.collection,
                    scroll_filter=self._scope(workspace_id),
                    limit=1000,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                )
                found.update(str(p.id) for p in points)
                if offset is None:
                    return found

    # --- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _workspace_condition(workspace_id: int) -> models.FieldCondition:
        return models.FieldCondition(key="workspace_id", match=models.MatchValue(value=str(workspace_id)))

    def _scope(
        self, workspace_id: int, *conditions: models.Condition, must_not: list[models.Condition] | None = None
    ) -> models.Filter:
        """The one place filters are built: the workspace condition is always there, whatever else is."""
        return models.Filter(must=[self._workspace_condition(workspace_id), *conditions], must_not=must_not)

    @staticmethod
    def _conditions(filters: Filters | None, chunk_ids: list[str] | None) -> list[models.Condition] | None:
        """Metadata and chunk id conditions, or None when nothing can match. Validates the filters before
        any request, so a bad filter is refused even on an empty collection."""
        conditions = filter_conditions(filters)
        if conditions is None or chunk_ids == []:
            return None
        if chunk_ids is not None:
            conditions.append(models.HasIdCondition(has_id=[point_id(c) for c in chunk_ids]))
        return conditions

    def _count(self, count_filter: models.Filter) -> int:
        return self._client.count(self.collection, count_filter=count_filter, exact=True).count

    def _ensure_collection(self, dimensions: int | None) -> bool:
        """Whether the collection exists; with `dimensions`, create it (and its indexes) if missing."""
        if self._dimensions is not None:
            return True
        if not self._client.collection_exists(self.collection):
            if dimensions is None:
                return False
            self._create_collection(dimensions)
        vectors = self._client.get_collection(self.collection).config.params.vectors
        if not isinstance(vectors, dict) or DENSE not in vectors:
            raise VectorStoreError(
                f"The Qdrant collection {self.collection!r} was not created by this store (it has no"
                f" {DENSE!r} vector). Configure another collection name."
            )
        self._dimensions = vectors[DENSE].size
        return True

    def _create_collection(self, dimensions: int) -> None:
        try:
            self._client.create_collection(
                self.collection,
                vectors_config={DENSE: models.VectorParams(size=dimensions, distance=models.Distance.COSINE)},
                # IDF is Qdrant's own (collection-wide); it only ranks keyword candidates, see the docstring.
                sparse_vectors_config={KEYWORDS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                # Qdrant's multitenancy layout: no global graph, one graph per workspace (payload_m), since
                # every search is filtered by workspace.
                hnsw_config=models.HnswConfigDiff(m=0, payload_m=16),
                **self.cluster_options,
            )
        except UnexpectedResponse as exc:
            if exc.status_code != 409:  # 409: another process created it first, which is fine
                raise
        # Indexes must exist before data arrives for the per-workspace graphs; creating one again is a no-op.
        # `terms` is indexed for the document-frequency counts; `model_name` is not, since nearly every
        # point shares one value and an index would only add a graph the size of the collection.
        tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        self._client.create_payload_index(self.collection, "workspace_id", field_schema=tenant, wait=True)
        self._client.create_payload_index(
            self.collection, "terms", field_schema=models.PayloadSchemaType.KEYWORD, wait=True
        )

    def _check_dimensions(self, size: int) -> None:
        if self._dimensions is not None and size != self._dimensions:
            raise VectorStoreError(
                f"The Qdrant collection {self.collection!r} holds {self._dimensions}-dimensional vectors but"
                f" got {size}: the embedding model changed. Reindex into a new collection."
            )

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except (ApiException, httpx.HTTPError, OSError) as exc:
            cause = exc.source if isinstance(exc, ResponseHandlingException) else exc  # the httpx error
            detail = " ".join(f"{type(cause).__name__}: {cause}".split())[:300]
            raise VectorStoreError(
                f"Could not {action} in Qdrant at {self._where} (collection {self.collection!r}): {detail}."
                " Check that Qdrant is running and reachable, and that its URL and API key are right."
            ) from exc


def point_id(chunk_id: str) -> str:
    """Chunk ids are UUIDs; Qdrant echoes them in canonical form, so they are sent in that form too."""
    return str(uuid.UUID(str(chunk_id)))
