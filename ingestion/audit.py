"""The database against the vector store and file storage: what should be there and is not, what is there
and should not be, and counters that don't add up. `manage.py audit_store` prints it; with repair=True
each class is fixed through the code that owns it (the store deletes its orphans, the lifecycle reindexes,
indexing derives counters again, file storage drops folders nobody owns).

Run it at rest: a chunk being written has its vector stored before its row commits, so during indexing a
workspace can show a point without its chunk for a moment. A workspace with sources in flight is reported
as busy, and its store classes are not repaired.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from config.backends import vector_stores
from ingestion import files as storage
from ingestion import lifecycle
from ingestion.status import source_refresh_status
from retrieval.stores.pgvector import PgVectorStore
from sources.models import ACTIVE_STATUSES, Chunk, Document, Source, Status, Workspace
from sources.tenancy import workspace_scope

SAMPLE = 5

CLASSES = {
    "orphan_points": "vector points (and their keyword postings) whose chunk row is gone",
    "chunks_without_vectors": "chunks of indexed documents with no vector in the store",
    "postings_without_vectors": "keyword postings of chunks that have no vector (pgvector)",
    "keyword_stats": "a workspace's keyword statistics that don't match its postings (pgvector)",
    "orphan_files": "upload folders in file storage with no source",
    "source_counters": "a source's pages_*/chunks_count that don't match its documents and chunks",
}


@dataclass
class Finding:
    kind: str
    workspace_id: int
    found: int
    sample: list[str] = field(default_factory=list)
    repaired: int = 0
    note: str = ""


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    workspaces: int = 0
    busy: list[int] = field(default_factory=list)

    def totals(self) -> dict[str, dict[str, int]]:
        totals = {kind: {"found": 0, "repaired": 0} for kind in CLASSES}
        for finding in self.findings:
            totals[finding.kind]["found"] += finding.found
            totals[finding.kind]["repaired"] += finding.repaired
        return totals

    def summary(self) -> dict[str, Any]:
        return {
            "workspaces": self.workspaces,
            "busy_workspaces": self.busy,
            "totals": self.totals(),
            "inconsistencies": sum(f.found for f in self.findings),
            "findings": [asdict(f) for f in self.findings],
        }


def audit(*, workspace_id: int | None = None, repair: bool = False) -> Report:
    report = Report()
    workspaces = (
        Workspace.objects.all() if workspace_id is None else Workspace.objects.filter(id=workspace_id)
    )
    ids = list(workspaces.order_by("id").values_list("id", flat=True))
    report.workspaces = len(ids)
    for wid in ids:
        _audit_workspace(report, wid, repair=repair)
    _audit_files(report, only=workspace_id, repair=repair)
    return report


def _add(
    report: Report, kind: str, workspace_id: int, items: list[Any], repaired: int = 0, note: str = ""
) -> None:
    if items:
        sample = [str(i) for i in sorted(items, key=str)[:SAMPLE]]
        report.findings.append(Finding(kind, workspace_id, len(items), sample, repaired, note))


def _audit_workspace(report: Report, workspace_id: int, *, repair: bool) -> None:
    store = vector_stores["default"]
    with workspace_scope(workspace_id):
        busy = Source.objects.filter(status__in=ACTIVE_STATUSES).exists()
        if busy:
            report.busy.append(workspace_id)
        fix = repair and not busy
        note = "busy: not repaired" if repair and busy else ""
        # The store first: a chunk committed after this read had its vector stored before it committed.
        points = store.point_ids(workspace_id=workspace_id)
        chunks = {str(i) for i in Chunk.objects.values_list("id", flat=True)}

        orphans = sorted(points - chunks)
        if fix and orphans:
            store.delete(workspace_id=workspace_id, chunk_ids=orphans)
        _add(report, "orphan_points", workspace_id, orphans, len(orphans) if fix else 0, note)

        indexed = Chunk.objects.filter(document__status=Status.DONE)
        missing = {str(i): s for i, s in indexed.values_list("id", "source_id") if str(i) not in points}
        repaired = 0
        if fix and missing:
            for source in Source.objects.filter(id__in=set(missing.values())):
                # Through the lifecycle: the source's kept text is chunked and embedded again.
                if lifecycle.source_reindex(source=source):
                    repaired += sum(1 for s in missing.values() if s == source.id)
        _add(report, "chunks_without_vectors", workspace_id, list(missing), repaired, note)

        if isinstance(store, PgVectorStore):
            _audit_postings(report, store, workspace_id, fix=fix, note=note)

        _audit_counters(report, workspace_id, repair=repair)


def _audit_postings(report: Report, store: PgVectorStore, workspace_id: int, *, fix: bool, note: str) -> None:
    """Postings are written and removed with their vector; any beside a chunk without one are stale, and the
    workspace's N and total length must be what its postings add up to."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT p.chunk_id::text FROM retrieval_keywordposting p JOIN sources_chunk c"
            " ON c.id = p.chunk_id WHERE p.workspace_id = %s AND c.embedding IS NULL",
            [workspace_id],
        )
        stale = [row[0] for row in cursor.fetchall()]
    if fix and stale:
        store.delete(workspace_id=workspace_id, chunk_ids=stale)  # drops them and their share of the stats
    _add(report, "postings_without_vectors", workspace_id, stale, len(stale) if fix else 0, note)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(length), 0) FROM (SELECT DISTINCT chunk_id, length"
            " FROM retrieval_keywordposting WHERE workspace_id = %s) AS per_chunk",
            [workspace_id],
        )
        actual = tuple(int(v) for v in cursor.fetchone())
        cursor.execute(
            "SELECT chunk_count, total_length FROM retrieval_keywordstats WHERE workspace_id = %s",
            [workspace_id],
        )
        row = cursor.fetchone()
        kept = tuple(int(v) for v in row) if row else (0, 0)
        if kept == actual:
            return
        if fix:
            cursor.execute(
                "INSERT INTO retrieval_keywordstats (workspace_id, chunk_count, total_length)"
                " VALUES (%s, %s, %s) ON CONFLICT (workspace_id) DO UPDATE SET"
                " chunk_count = EXCLUDED.chunk_count, total_length = EXCLUDED.total_length",
                [workspace_id, *actual],
            )
    item = f"kept chunks={kept[0]} length={kept[1]}, postings say chunks={actual[0]} length={actual[1]}"
    _add(report, "keyword_stats", workspace_id, [item], 1 if fix else 0, note)


def _audit_counters(report: Report, workspace_id: int, *, repair: bool) -> None:
    """Idle sources only: a source in flight updates its counters as its pages finish."""
    counted = (
        Document.objects.values("source_id")
        .annotate(
            total=Count("id"),
            done=Count("id", filter=Q(status=Status.DONE)),
            failed=Count("id", filter=Q(status=Status.FAILED)),
            skipped=Count("id", filter=Q(status=Status.SKIPPED)),
        )
        .order_by()
    )
    documents = {row["source_id"]: row for row in counted}
    chunks = dict(
        Chunk.objects.values("source_id").annotate(n=Count("id")).values_list("source_id", "n").order_by()
    )
    wrong = []
    for source in Source.objects.exclude(status__in=ACTIVE_STATUSES).only(
        "id", "pages_total", "pages_done", "pages_failed", "pages_skipped", "chunks_count"
    ):
        row = documents.get(source.id, {"total": 0, "done": 0, "failed": 0, "skipped": 0})
        kept = (
            source.pages_total,
            source.pages_done,
            source.pages_failed,
            source.pages_skipped,
            source.chunks_count,
        )
        actual = (row["total"], row["done"], row["failed"], row["skipped"], chunks.get(source.id, 0))
        if kept != actual:
            wrong.append(source.id)
    if repair:
        for source_id in wrong:
            source_refresh_status(source_id=source_id)
    _add(report, "source_counters", workspace_id, wrong, len(wrong) if repair else 0)


def _audit_files(report: Report, *, only: int | None, repair: bool) -> None:
    workspace_dirs, _ = storage._listdir("uploads")
    owners = set(Source.unscoped.values_list("workspace_id", "id"))
    orphans: dict[int, list[str]] = defaultdict(list)
    for workspace_dir in workspace_dirs:
        if not workspace_dir.isdigit() or (only is not None and int(workspace_dir) != only):
            continue
        source_dirs, _ = storage._listdir(f"uploads/{workspace_dir}")
        for source_dir in source_dirs:
            if source_dir.isdigit() and (int(workspace_dir), int(source_dir)) not in owners:
                orphans[int(workspace_dir)].append(source_dir)
    for workspace_id, source_dirs in sorted(orphans.items()):
        if repair:
            for source_dir in source_dirs:
                storage.delete_files(workspace_id, int(source_dir))
        paths = [f"uploads/{workspace_id}/{s}" for s in source_dirs]
        _add(report, "orphan_files", workspace_id, paths, len(paths) if repair else 0)


def table(report: Report) -> str:
    lines = [f"{'class':<26} {'workspace':>9} {'found':>7} {'repaired':>8}  sample"]
    for f in report.findings:
        extra = f"  ({f.note})" if f.note else ""
        lines.append(
            f"{f.kind:<26} {f.workspace_id:>9} {f.found:>7} {f.repaired:>8}  {', '.join(f.sample)}{extra}"
        )
    if not report.findings:
        lines.append(f"(no inconsistency in {report.workspaces} workspace(s))")
    return "\n".join(lines)
