"""What a search returns for its ranked chunks: each one's passage (its text, its source and document),
loaded from the copy searched or in one statement, and a reranker's reordering of them."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection

from config.backends import rerankers
from retrieval import resident
from retrieval.stores.base import VectorHit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    text: str
    score: float
    source_id: int
    source_title: str
    source_kind: str
    url: str
    document_id: int
    document_title: str
    vector_score: float | None = None
    keyword_score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# What a passage shows, in one statement written out: a chunk's vector and its document's full text are
# large (loading them was most of a 200-passage search on SciFact), and building this query through the
# ORM was a visible share of a cached search (docs/BENCHMARKS.md). The workspace is in the WHERE clause as
# the tenant manager would put it.
PASSAGES_SQL = (
    f"SELECT {resident.SHOWN} FROM {resident.SHOWN_FROM}"
    ' WHERE c."workspace_id" = %s AND c."id" = ANY(%s::uuid[])'
)


def load_passages(
    workspace_id: int,
    ranked: list[tuple[VectorHit, float, float]],
    copy: resident.ResidentVectors | None = None,
) -> list[Passage]:
    """The ranked chunks' passages, from the copy searched when there is one (no statement), else
    from the database."""
    if not ranked:
        return []
    wanted = [h.chunk_id for h, _, _ in ranked]
    chunks = copy.shown_rows(wanted) if copy is not None else {}
    if len(chunks) < len(wanted):  # no copy, or a chunk of another model (keyword-found) is not a row
        with connection.cursor() as cursor:
            cursor.execute(PASSAGES_SQL, [int(workspace_id), [c for c in wanted if c not in chunks]])
            chunks.update({row[0]: row for row in cursor.fetchall()})
    passages = []
    for hit, vector_score, keyword_score in ranked:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:  # deleted between the search and now
            continue
        _, text, metadata, source_id, source_title, source_kind, document_id, url, document_title = chunk
        passages.append(
            Passage(
                chunk_id=hit.chunk_id,
                text=text,
                score=hit.score,
                source_id=source_id,
                source_title=source_title,
                source_kind=source_kind,
                url=url,
                document_id=document_id,
                document_title=document_title,
                vector_score=vector_score,
                keyword_score=keyword_score,
                metadata=json.loads(metadata),
            )
        )
    return passages


def rerank(query: str, passages: list[Passage], alias: str, pool: int = 50) -> list[Passage] | None:
    """Reorder the first `pool` passages by a reranker's scores; None (logged) on any failure or invalid
    score, and the caller keeps the retrieval order."""
    candidates = passages[:pool]
    try:
        scores = rerankers[alias].rerank(query, [p.text for p in candidates])
        valid = len(scores) == len(candidates) and all(
            isinstance(s, int | float) and not isinstance(s, bool) and np.isfinite(s) for s in scores
        )
    except Exception:
        log.warning("reranker %r failed; keeping the retrieval order", alias, exc_info=True)
        return None
    if not valid:
        log.warning("reranker %r returned invalid scores; keeping the retrieval order", alias)
        return None
    order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))
    return [candidates[i] for i in order] + passages[pool:]
