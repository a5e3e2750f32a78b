"""Measure retrieval on a BEIR-format dataset through the real ingestion and search code.

The corpus is indexed into a throwaway workspace named after the corpus file, chunking settings,
embedder and store, so a rerun with the same inputs reuses that index and costs only the queries.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.test import override_settings

from agents.models import Agent
from config.backends import embedders, vector_stores
from ingestion.indexing import document_index, source_refresh_status
from ingestion.kinds.text import TextKind
from retrieval import evaluation
from retrieval.services import SearchParams, search_passages
from sources.models import Document, Source, Status, Workspace
from sources.tenancy import workspace_scope

STORES = {
    "pgvector": {"BACKEND": "retrieval.stores.pgvector.PgVectorStore", "OPTIONS": {}},
    "qdrant": {"BACKEND": "retrieval.stores.qdrant.QdrantStore", "OPTIONS": {"location": None}},
}


class Command(BaseCommand):
    help = "Index a BEIR corpus into a throwaway workspace and print nDCG@10, Recall@100, MRR@10 as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", type=Path, required=True)
        parser.add_argument("--queries", type=Path, required=True)
        parser.add_argument("--qrels", type=Path, required=True)
        parser.add_argument("--mode", choices=["keyword", "vector", "hybrid"], default="hybrid")
        parser.add_argument("--fusion", choices=["rrf", "score"], default=None)
        parser.add_argument("--vector-weight", type=float, default=None)
        parser.add_argument("--keyword-weight", type=float, default=None)
        parser.add_argument("--candidates", type=int, default=200)
        parser.add_argument("--rerank", default=None)
        parser.add_argument("--store", choices=sorted(STORES), default="pgvector")
        parser.add_argument("--qdrant-path", type=Path, default=Path(".local/qdrant-eval"))
        parser.add_argument("--limit-queries", type=int, default=0, help="Evaluate only the first N queries.")

    def handle(self, *args: object, **opts: object) -> None:
        store_setting = dict(STORES[opts["store"]])
        if opts["store"] == "qdrant":
            store_setting["OPTIONS"] = {"path": str(opts["qdrant_path"]), "collection": "evaluation"}
        with override_settings(VECTOR_STORES={"default": store_setting}):
            vector_stores.reset()
            workspace = self._index(opts["corpus"], opts["store"])
            queries = evaluation.load_queries(opts["queries"])
            qrels = evaluation.load_qrels(opts["qrels"])
            if opts["limit_queries"]:
                qrels = dict(list(qrels.items())[: opts["limit_queries"]])
            params = SearchParams(
                top_k=opts["candidates"],
                mode=opts["mode"],
                candidates=opts["candidates"],
                rerank=opts["rerank"],
                **{
                    k: v
                    for k, v in {
                        "fusion": opts["fusion"],
                        "vector_weight": opts["vector_weight"],
                        "keyword_weight": opts["keyword_weight"],
                    }.items()
                    if v is not None
                },
            )
            doc_ids = self._doc_ids(workspace)

            def rank(query: str) -> list[str]:
                passages = search_passages(workspace_id=workspace.id, query=query, params=params)
                return evaluation.documents_by_best_passage(doc_ids[p.document_id] for p in passages)

            embedders["default"].embed_query("warm-up")
            result = evaluation.evaluate(queries, qrels, rank)
        result.update(
            mode=opts["mode"],
            fusion=params.fusion if opts["mode"] == "hybrid" else None,
            store=opts["store"],
            rerank=opts["rerank"],
            chunk_chars=settings.CHUNK_TARGET_CHARS,
            embedder=embedders["default"].model_name,
        )
        self.stdout.write(json.dumps(result))

    def _index(self, corpus_path: Path, store: str) -> Workspace:
        key = evaluation.fingerprint(
            evaluation.file_fingerprint(corpus_path),
            settings.CHUNK_TARGET_CHARS,
            settings.CHUNK_OVERLAP_CHARS,
            settings.EMBED_TITLE_PREFIX,
            embedders["default"].model_name,
            store,
        )
        slug = f"eval-{key}"
        workspace, _ = Workspace.objects.get_or_create(
            slug=slug, defaults={"name": f"Evaluation {corpus_path.name}"}
        )
        with workspace_scope(workspace.id):
            source = Source.objects.filter(title=corpus_path.name).first()
            if source is not None and source.status == Status.DONE:
                self.stderr.write(f"reusing the index in workspace {slug}")
                return workspace
            agent = Agent.objects.first() or Agent.objects.create(name="evaluation")
            if source is None:
                corpus = evaluation.load_corpus(corpus_path)
                with transaction.atomic():
                    source = Source.objects.create(
                        agent=agent, kind=TextKind.name, title=corpus_path.name, status=Status.INDEXING
                    )
                    Document.objects.bulk_create(
                        [
                            Document(
                                workspace=workspace,
                                source=source,
                                url=f"beir:{d.doc_id}",
                                title=d.title,
                                text=d.text,
                            )
                            for d in corpus
                        ],
                        batch_size=1000,
                    )
            pending = list(source.documents.exclude(status=Status.DONE).order_by("id"))
            started = time.monotonic()
            for i, document in enumerate(pending, 1):
                document_index(document=document)
                if i % 250 == 0:
                    rate = i / (time.monotonic() - started)
                    self.stderr.write(f"indexed {i}/{len(pending)} documents ({rate:.1f}/s)")
            source_refresh_status(source_id=source.id)
        return workspace

    @staticmethod
    def _doc_ids(workspace: Workspace) -> dict[int, str]:
        with workspace_scope(workspace.id):
            return {pk: url.removeprefix("beir:") for pk, url in Document.objects.values_list("id", "url")}
