"""Re-embed the sources of one or more workspaces, e.g. after switching the embedding model.

    manage.py reindex --workspace 3 [--workspace 5] [--stale-only]
    manage.py reindex --all --stale-only --rebuild-vector-index

By default each source is queued on the `index` queue, as the admin's Reindex action does. With
--rebuild-vector-index (pgvector only) the work runs in this process instead: the HNSW index is dropped,
every source is re-embedded, and the index is built once at the end. Inserting into the graph is most
of a one-document upsert; at a million chunks bulk writes plus one build of the index take a fraction of a
reindex that keeps the index (docs/BENCHMARKS.md). The index is shared
by every workspace, so their vector searches are exact (slower, never wrong) until it is rebuilt.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from config.backends import vector_stores
from ingestion.lifecycle import source_index_now, source_reindex
from retrieval.stores.pgvector import PgVectorStore
from retrieval.vectors import embedded_by_another_model
from sources.models import Chunk, Source, Workspace
from sources.tenancy import workspace_scope


class Command(BaseCommand):
    help = "Re-embed sources from their kept text (nothing is fetched or uploaded again)."

    def add_arguments(self, parser: Any) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--workspace", type=int, action="append", help="a workspace id (repeatable)")
        which.add_argument("--all", action="store_true", help="every workspace")
        parser.add_argument(
            "--stale-only",
            action="store_true",
            help="only sources with chunks embedded by another model than the configured one",
        )
        parser.add_argument(
            "--rebuild-vector-index",
            action="store_true",
            help="run here with the HNSW index dropped, and build it once at the end (pgvector)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = vector_stores["default"]
        rebuild = options["rebuild_vector_index"]
        if rebuild and not isinstance(store, PgVectorStore):
            raise CommandError("--rebuild-vector-index applies to the pgvector store only.")
        if options["all"]:
            workspace_ids = list(Workspace.objects.order_by("id").values_list("id", flat=True))
        else:
            workspace_ids = options["workspace"]
            found = set(Workspace.objects.filter(id__in=workspace_ids).values_list("id", flat=True))
            if missing := sorted(set(workspace_ids) - found):
                raise CommandError(f"No workspace with id {', '.join(map(str, missing))}.")

        marked: list[Source] = []
        skipped = 0
        for workspace_id in workspace_ids:
            for source in self._sources(workspace_id, stale_only=options["stale_only"]):
                if source_reindex(source=source, queue=not rebuild):
                    marked.append(source)
                else:
                    skipped += 1  # already pending or running: its own run will embed it
        if not rebuild:
            self.stdout.write(f"Queued {len(marked)} sources for reindexing ({skipped} busy, left alone).")
            return

        started = time.monotonic()
        store.drop_index()
        try:
            for number, source in enumerate(marked, 1):
                source_index_now(source=source)
                self.stdout.write(f"[{number}/{len(marked)}] {source.title or source.id}")
        finally:
            # Built even if a source failed: searches must not stay exact.
            built = time.monotonic()
            store.ensure_index()
            self.stdout.write(f"Vector index rebuilt in {time.monotonic() - built:.0f} s.")
            # Filter plans (HNSW or the metadata index) follow the planner's statistics; after a bulk
            # rewrite they are stale until autovacuum gets to them, so refresh them now.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE sources_chunk")
                cursor.execute("ANALYZE retrieval_keywordposting")
        seconds = time.monotonic() - started
        self.stdout.write(f"Reindexed {len(marked)} sources in {seconds:.0f} s ({skipped} busy, left alone).")

    @staticmethod
    def _sources(workspace_id: int, *, stale_only: bool) -> list[Source]:
        with workspace_scope(workspace_id):
            sources = Source.objects.order_by("id")
            if stale_only:
                stale = Chunk.objects.filter(embedded_by_another_model(workspace_id)).values("source_id")
                sources = sources.filter(id__in=stale)
            return list(sources)
