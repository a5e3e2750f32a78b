"""Keyword postings for BM25 in PostgreSQL (used by PgVectorStore), with per-workspace statistics."""

from __future__ import annotations

from django.db import models

from sources.tenancy import TenantModel


class KeywordPosting(TenantModel):
    """One term of one chunk. The chunk's length is repeated here so BM25 needs no join."""

    # No index of its own: (workspace, term) below starts with it, and a workspace-only index tempted
    # the planner, with statistics stale after bulk loads, to read a workspace's every posting to
    # delete one chunk's.
    workspace = models.ForeignKey(
        "sources.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    chunk = models.ForeignKey("sources.Chunk", on_delete=models.CASCADE, related_name="+", db_index=False)
    term = models.CharField(max_length=64)
    tf = models.PositiveIntegerField()
    length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            # An index-only scan answers a query term: the postings of that workspace's term.
            models.Index(
                fields=["workspace", "term"], include=["chunk", "tf", "length"], name="posting_term"
            ),
            # Deleting a chunk's postings: both of the delete's conditions are in this index.
            models.Index(fields=["chunk", "workspace"], name="posting_chunk_workspace"),
        ]


class KeywordStats(TenantModel):
    """N and the total length of a workspace's keyword-indexed chunks, kept in step by the store so a
    query never has to count a million rows."""

    chunk_count = models.BigIntegerField(default=0)
    total_length = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace"], name="one_keyword_stats_per_workspace")]
