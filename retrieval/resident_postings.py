"""A small workspace's BM25 postings in memory, beside its vectors (retrieval/resident.py), so a hybrid
search of a copy sends no search statement at all.

The arithmetic is keyword_sql's, term for term (pgvector_sql.py): idf = ln(1 + (N - df + 0.5) / (df + 0.5))
over the workspace's statistics, a chunk's score the sum over the query's terms of
idf * qtf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg)), divided by the best score the query
could reach, sum(idf * qtf) * (k1 + 1). Held only when every keyword-indexed chunk of the workspace is a
row of the copy (a chunk embedded by another model has postings but no row here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.db import connection

from retrieval.stores.base import VectorHit

#: rows matching a query's terms (ascending) and their normalised BM25: computed once per search
Scored = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ResidentPostings:
    #: term -> (row numbers of the copy, term frequencies), float64 as PostgreSQL's float8 arithmetic
    terms: dict[str, tuple[np.ndarray, np.ndarray]]
    #: each row's length in terms
    lengths: np.ndarray
    chunk_count: int
    average_length: float

    @property
    def nbytes(self) -> int:
        return int(self.lengths.nbytes) + sum(r.nbytes + t.nbytes + 60 for r, t in self.terms.values())

    def scores(self, terms: dict[str, int], k1: float, b: float) -> Scored:
        """(rows matching a query term, ascending; their normalised BM25)."""
        weights = {}
        for term, qtf in terms.items():
            df = len(self.terms[term][0]) if term in self.terms else 0
            weights[term] = qtf * math.log(1 + (self.chunk_count - df + 0.5) / (df + 0.5))
        best = sum(weights.values()) * (k1 + 1)
        total = np.zeros(len(self.lengths), dtype=np.float64)
        matched = np.zeros(len(self.lengths), dtype=bool)
        for term, w in weights.items():
            if term not in self.terms:
                continue
            rows, tf = self.terms[term]
            norm = k1 * (1 - b + b * self.lengths[rows] / self.average_length)
            total[rows] += w * tf * (k1 + 1) / (tf + norm)
            matched[rows] = True
        rows = np.flatnonzero(matched)
        if not best:  # keyword_sql's nullif: no term with weight, no score
            return rows[:0], total[:0]
        return rows, total[rows] / best


def rank(scored: Scored, ids: list[str], *, top_k: int, floor: float | None) -> list[VectorHit]:
    """keyword_sql's ranking of ResidentPostings.scores' answer: the top_k at or above the floor, best
    first, ties by chunk id."""
    rows, scores = scored
    passing = scores >= (floor or 0.0)
    rows, scores = rows[passing], scores[passing]
    if top_k <= 0:
        return []
    if len(scores) > top_k:
        # Only the rows that can be in the top k (ties at its edge kept, for the order by id) become
        # objects: a common term matches thousands of chunks, and sorting them all cost more than SQL.
        edge = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
        keep = scores >= edge
        rows, scores = rows[keep], scores[keep]
    pairs = zip(rows.tolist(), scores.tolist(), strict=True)
    hits = [VectorHit(ids[r], min(1.0, float(s))) for r, s in pairs]
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:top_k]


def scores_of(
    scored: Scored, row: dict[str, int], chunk_ids: list[str], *, floor: float | None
) -> dict[str, float]:
    """The normalised BM25 of those of chunk_ids that match a term, at or above the floor."""
    rows, scores = scored
    wanted = [(c, row[c]) for c in chunk_ids if c in row]
    at = np.searchsorted(rows, [r for _, r in wanted])  # rows are ascending (flatnonzero)
    found = {
        c: min(1.0, float(scores[i]))
        for (c, r), i in zip(wanted, at.tolist(), strict=True)
        if i < len(rows) and rows[i] == r
    }
    return {c: s for c, s in found.items() if s >= (floor or 0.0)}


def load(*, workspace_id: int, ids: list[str]) -> ResidentPostings | None:
    """The workspace's postings over the copy's rows (`ids`, in order), or None when the workspace has
    keyword-indexed chunks that are not rows of the copy."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_count, total_length FROM retrieval_keywordstats WHERE workspace_id = %s",
            [workspace_id],
        )
        stats = cursor.fetchone()
        if stats is None or not stats[0]:
            return None
        # Row numbers come from the database, so no million (term, chunk) tuples are built here.
        cursor.execute(
            "SELECT p.term, array_agg(o.n - 1 ORDER BY o.n), array_agg(p.tf ORDER BY o.n),"
            " array_agg(p.length ORDER BY o.n)"
            " FROM retrieval_keywordposting p"
            " JOIN unnest(%s::uuid[]) WITH ORDINALITY AS o(id, n) ON o.id = p.chunk_id"
            " WHERE p.workspace_id = %s GROUP BY p.term",
            [ids, workspace_id],
        )
        grouped = cursor.fetchall()
    lengths = np.zeros(len(ids), dtype=np.float64)
    terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    covered = np.zeros(len(ids), dtype=bool)
    for term, rows, tfs, term_lengths in grouped:
        row_array = np.asarray(rows, dtype=np.int32)
        terms[term] = (row_array, np.asarray(tfs, dtype=np.float64))
        lengths[row_array] = term_lengths
        covered[row_array] = True
    if int(covered.sum()) != int(stats[0]):  # the statistics count chunks that are not rows of the copy
        return None
    return ResidentPostings(terms, lengths, int(stats[0]), float(stats[1]) / int(stats[0]))
