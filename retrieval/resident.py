"""A small workspace's vectors (and, when they cover it, its BM25 postings) held in this process's memory,
so a search of it is an exact matrix product and a BM25 sum in numpy instead of an HNSW walk and a postings
scan in PostgreSQL.

Why: on a small workspace PostgreSQL's HNSW statement costs several times numpy's exact search of the
same vectors (docs/BENCHMARKS.md, "Search API latency"), and the graph is shared by every
workspace, so its cost follows the whole table, not the workspace. The postings
(retrieval/resident_postings.py) are held only when every keyword-indexed chunk is a row of the copy;
otherwise BM25 stays in SQL. Metadata filters (an agent's sources, an audience) are masks over the rows
(retrieval/resident_filters.py).

What keeps it correct:
- **Current.** A copy is keyed by the workspace, the model and the search cache's generation
  (retrieval/cache.py), which every write to what a search finds replaces, at once and on commit. The
  copy is read *after* that generation was, so it is never older than it; once the generation is replaced
  the copy is never used again (and is dropped when its slot is needed).
- **One workspace.** The rows are read with the workspace in the WHERE clause, the copy records its
  workspace, and `held` returns a copy only to a caller asking for that workspace and model.
- **Bounded.** Only workspaces up to RESIDENT_MAX_CHUNKS vectors are held, and at most
  RESIDENT_MAX_BYTES in all per process (least recently used dropped first).
- **Committed rows only.** A search inside a transaction (which must see its own writes) never uses one.
- **Never on the request's time.** A search that finds no copy takes the SQL path and asks for one to be
  built on a background thread (one build per workspace at a time); later searches use it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection

from config import metrics
from config.pool_threads import LazyPool, connection_checked
from retrieval import resident_postings
from retrieval.resident_filters import FilterIndex
from retrieval.resident_postings import ResidentPostings
from retrieval.stores.base import Filters, HybridHits, VectorHit

log = logging.getLogger(__name__)

_builds = LazyPool(lambda: 1, "resident-vectors")
#: (workspace, model, generation) found too large, remembered so they are not read again (at most this many).
TOO_LARGE_REMEMBERED = 10_000
_lock = threading.Lock()
#: (workspace, model) -> the copy under its generation, least recently used first
_copies: OrderedDict[tuple[int, str], ResidentVectors] = OrderedDict()
#: (workspace, model, generation) being built, or found too large to hold under that generation
_pending: set[tuple[int, str, str]] = set()
_too_large: set[tuple[int, str, str]] = set()


#: What a passage shows, in PASSAGES_SQL's order (retrieval/passages.py): the chunk's id, text and
#: metadata (JSON text), its source's id, title and kind, its document's id, URL and title. A copy holds
#: these per row, so a search of it loads no passage either. Everything here that can change without the
#: chunk being rewritten (a source renamed, a page's title) replaces the search cache's generation.
SHOWN = (
    'c."id"::text, c."text", c."metadata"::text, c."source_id", s."title", s."kind", c."document_id",'
    ' d."url", d."title"'
)
SHOWN_FROM = (
    'sources_chunk c JOIN sources_source s ON s."id" = c."source_id"'
    ' JOIN sources_document d ON d."id" = c."document_id"'
)


@dataclass(frozen=True)
class ResidentVectors:
    workspace_id: int
    model_name: str
    generation: str
    ids: list[str]
    #: float32 (n, dimensions), each row of unit length, so a dot product is the cosine
    matrix: np.ndarray
    #: the rows' BM25 postings, when they are all of the workspace's (retrieval/resident_postings.py)
    postings: ResidentPostings | None = None
    #: the rows' metadata, for filtered searches (retrieval/resident_filters.py)
    filters: FilterIndex | None = None
    #: each row as SHOWN selects it: what its passage shows
    shown: list[tuple] = field(default_factory=list, repr=False, compare=False)
    #: each row's packed sentence vectors (retrieval/sentences.py) or None; empty when not held (a copy
    #: that would not fit the budget with them is held without them)
    sentences: list[bytes | None] = field(default_factory=list, repr=False, compare=False)
    #: chunk id -> its row
    row: dict[str, int] = field(init=False, repr=False, compare=False)
    #: the memory the copy takes, roughly (counted once: _keep sums it over every copy at each build)
    nbytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row", {cid: i for i, cid in enumerate(self.ids)})
        held = self.postings.nbytes if self.postings is not None else 0
        held += self.filters.nbytes if self.filters is not None else 0
        held += sum(sum(len(v) for v in r if isinstance(v, str)) + 200 for r in self.shown)
        held += sum(len(v) + 40 for v in self.sentences if v is not None)
        # the ids and their index, roughly
        object.__setattr__(self, "nbytes", int(self.matrix.nbytes) + 100 * len(self.ids) + held)

    def sentence_rows(self, chunk_ids: list[str]) -> dict[str, bytes] | None:
        """The packed sentence vectors of those chunk ids that have them; None when the copy holds none
        (the caller reads them from the database)."""
        if not self.sentences:
            return None
        found = {c: self.sentences[self.row[c]] for c in chunk_ids if c in self.row}
        return {c: v for c, v in found.items() if v is not None}

    def shown_rows(self, chunk_ids: list[str]) -> dict[str, tuple]:
        """What the passages of those chunk ids that are rows here show (as PASSAGES_SQL's rows)."""
        return {c: self.shown[self.row[c]] for c in chunk_ids if c in self.row}

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """The rows a search with these metadata filters may return; None when unfiltered."""
        if not filters:
            return None
        assert self.filters is not None
        return self.filters.mask(filters)

    def top(
        self, query: np.ndarray, k: int, floor: float | None, mask: np.ndarray | None = None
    ) -> list[VectorHit]:
        """The k nearest by cosine among the rows `mask` passes, best first (ties by id, as the SQL's
        order leaves them arbitrary)."""
        if not self.ids or k <= 0:
            return []
        scores = self._cosines(query)
        if mask is not None:
            candidates = np.flatnonzero(mask)
            scores = scores[candidates]
        keep = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        rows = candidates[keep] if mask is not None else keep
        hits = [VectorHit(self.ids[r], float(s)) for r, s in zip(rows, scores[keep], strict=True)]
        if floor is not None:
            hits = [h for h in hits if h.score >= floor]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def scores(self, query: np.ndarray, chunk_ids: list[str], floor: float | None) -> dict[str, float]:
        """The cosine of those of chunk_ids held here (a chunk of another model has no vector here)."""
        rows = [self.row[c] for c in chunk_ids if c in self.row]
        if not rows:
            return {}
        cosines = np.einsum("ij,j->i", self.matrix[rows], _unit(query))  # on this thread, as _cosines
        found = {self.ids[r]: float(s) for r, s in zip(rows, cosines, strict=True)}
        return {c: s for c, s in found.items() if floor is None or s >= floor}

    def bm25(self, terms: dict[str, int], k1: float, b: float) -> resident_postings.Scored:
        """Every matching row's BM25, for keyword_top and keyword_scores (needs postings)."""
        assert self.postings is not None
        return self.postings.scores(terms, k1, b)

    def keyword_top(
        self, scored: resident_postings.Scored, k: int, floor: float | None, mask: np.ndarray | None = None
    ) -> list[VectorHit]:
        """The BM25 top k among the rows `mask` passes, as the store ranks it."""
        if mask is not None:
            rows, scores = scored
            passing = mask[rows]
            scored = (rows[passing], scores[passing])
        return resident_postings.rank(scored, self.ids, top_k=k, floor=floor)

    def keyword_scores(
        self, scored: resident_postings.Scored, chunk_ids: list[str], floor: float | None
    ) -> dict[str, float]:
        return resident_postings.scores_of(scored, self.row, chunk_ids, floor=floor)

    def _cosines(self, query: np.ndarray) -> np.ndarray:
        # einsum stays on this thread: a BLAS product may start threads that fight the embedder's.
        return np.einsum("ij,j->i", self.matrix, _unit(query))


def hybrid_search(
    copy: ResidentVectors,
    *,
    vector: Callable[[], np.ndarray],
    terms: dict[str, int],
    top_k: int,
    min_score: float | None,
    k1: float,
    b: float,
    filters: Filters | None = None,
) -> HybridHits:
    """VectorStore.hybrid_search's answer from a copy with its postings: no statement at all. Every
    candidate passes the filters, so the candidates' other scores need no mask."""
    mask = copy.mask(filters)
    bm25 = copy.bm25(terms, k1, b)  # once, for the ranking and for the vector candidates
    by_keyword = copy.keyword_top(bm25, top_k, min_score, mask)
    query = vector()
    by_vector = copy.top(query, top_k, min_score, mask)
    vector_scores = {h.chunk_id: h.score for h in by_vector}
    keyword_scores = {h.chunk_id: h.score for h in by_keyword}
    missing = [c for c in keyword_scores if c not in vector_scores]
    vector_scores.update(copy.scores(query, missing, min_score))
    missing = [c for c in vector_scores if c not in keyword_scores]
    if missing and terms:
        keyword_scores.update(copy.keyword_scores(bm25, missing, min_score))
    return HybridHits(by_vector, by_keyword, vector_scores, keyword_scores)


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def held(*, workspace_id: int, model_name: str, generation: str | None) -> ResidentVectors | None:
    """The workspace's vectors of `model_name` as of `generation`, when this process holds them; else
    None, and a build is started in the background if the workspace may be held. Never inside a
    transaction: its search must see its own writes, which a copy read on another connection does not."""
    if generation is None or settings.SEARCH_RESIDENT_MAX_CHUNKS <= 0 or connection.in_atomic_block:
        return None
    slot = (workspace_id, model_name)
    with _lock:
        copy = _copies.get(slot)
        if copy is not None and copy.generation == generation:
            _copies.move_to_end(slot)
            return copy
        wanted = (workspace_id, model_name, generation)
        if wanted in _pending or wanted in _too_large:
            return None
        _pending.add(wanted)
    _builds().submit(_build, workspace_id, model_name, generation)
    return None


def _build(workspace_id: int, model_name: str, generation: str) -> None:
    wanted = (workspace_id, model_name, generation)
    try:
        with connection_checked():
            copy = load(workspace_id=workspace_id, model_name=model_name, generation=generation)
        with _lock:
            if copy is None:
                if len(_too_large) >= TOO_LARGE_REMEMBERED:  # one per generation searched: kept bounded
                    _too_large.clear()
                _too_large.add(wanted)
            else:
                _keep(copy)
        metrics.RESIDENT_BUILDS.labels(outcome="too_large" if copy is None else "held").inc()
    except Exception:  # a failed build leaves the SQL path in charge; the next generation tries again
        log.exception("resident_vectors_build_failed", extra={"workspace_id": workspace_id})
        metrics.RESIDENT_BUILDS.labels(outcome="failed").inc()
    finally:
        # Builds are rare (one per generation searched): the thread gives its connection back rather than
        # keep a PostgreSQL backend open per web process for them.
        connection.close()
        with _lock:
            _pending.discard(wanted)


def load(*, workspace_id: int, model_name: str, generation: str) -> ResidentVectors | None:
    """Read the workspace's vectors of the model (None when there are more than may be held). Binary
    (pgvector's vector_send: two int16 then big-endian float32s) rather than text: parsing 2.2 million
    floats from text would cost more than the searches it saves."""
    limit = settings.SEARCH_RESIDENT_MAX_CHUNKS
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT vector_send(c.embedding), c.sentence_vectors, {SHOWN} FROM {SHOWN_FROM}"
            " WHERE c.workspace_id = %s"
            " AND c.embedding IS NOT NULL AND c.embedding_model = %s LIMIT %s",
            [workspace_id, model_name, limit + 1],
        )
        rows = cursor.fetchall()
    if len(rows) > limit:
        return None
    shown = [row[2:] for row in rows]
    sentences = [bytes(row[1]) if row[1] is not None else None for row in rows]
    ids = [row[0] for row in shown]
    filters = FilterIndex.of([json.loads(row[2]) for row in shown])
    if not rows:
        matrix = np.zeros((0, 0), dtype=np.float32)
    else:
        raw = np.stack([np.frombuffer(bytes(row[0]), dtype=">f4", offset=4) for row in rows])
        matrix = raw.astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms == 0, 1, norms)
    postings = resident_postings.load(workspace_id=workspace_id, ids=ids) if ids else None
    copy = ResidentVectors(
        workspace_id, model_name, generation, ids, matrix, postings, filters, shown, sentences
    )
    if copy.nbytes > settings.SEARCH_RESIDENT_MAX_BYTES and any(v is not None for v in sentences):
        # Too big with its sentences: held without them, the rescoring reads those rows from the database.
        copy = ResidentVectors(workspace_id, model_name, generation, ids, matrix, postings, filters, shown)
    return copy


def _keep(copy: ResidentVectors) -> None:
    """Hold copy in place of its slot's older one, dropping the least recently used beyond the budget."""
    slot = (copy.workspace_id, copy.model_name)
    _copies.pop(slot, None)
    if copy.nbytes > settings.SEARCH_RESIDENT_MAX_BYTES:
        return
    _copies[slot] = copy
    while sum(c.nbytes for c in _copies.values()) > settings.SEARCH_RESIDENT_MAX_BYTES:
        _copies.popitem(last=False)


def forget_all() -> None:
    """Drop every copy (tests)."""
    with _lock:
        _copies.clear()
        _too_large.clear()


def wait_for_builds() -> None:
    """Block until the builds asked for so far are done (tests, and the benchmark's warm-up). A build
    leaves _pending last, after its connection is closed, so none is running once it is empty."""
    with _lock:
        if not _pending:
            return
    _builds().submit(lambda: None).result()
