"""Measure retrieval on a BEIR-format dataset through the real ingestion and search code.

The corpus is indexed into a throwaway workspace named after the corpus file, chunking settings,
embedder and store, so a rerun with the same inputs reuses that index and costs only the queries.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.test import override_settings

from agents.models import Agent
from config.backends import embedders, vector_stores
from ingestion.indexing import documents_index, in_batches
from ingestion.kinds.text import TextKind
from ingestion.status import source_refresh_status
from retrieval import evaluation
from retrieval.fusion import FUSIONS
from retrieval.services import SearchParams, search_passages, with_workspace_bm25
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
        parser.add_argument("--fusion", choices=sorted(FUSIONS), default=None)
        parser.add_argument("--bm25-k1", type=float, default=None, help="Default: the workspace's (1.2).")
        parser.add_argument("--bm25-b", type=float, default=None, help="Default: the workspace's (0.75).")
        parser.add_argument("--vector-weight", type=float, default=None)
        parser.add_argument("--keyword-weight", type=float, default=None)
        parser.add_argument("--candidates", type=int, default=200)
        parser.add_argument("--rerank", default=None)
        parser.add_argument("--store", choices=sorted(STORES), default="pgvector")
        parser.add_argument("--qdrant-path", type=Path, default=Path(".local/qdrant-eval"))
        parser.add_argument("--limit-queries", type=int, default=0, help="Evaluate only the first N queries.")
        parser.add_argument(
            "--distractors",
            type=int,
            default=None,
            help="With --limit-queries: index only those queries' judged documents and this many others drawn"
            " at random (seed 0), for a model too slow to embed the whole corpus. Figures on such a subset"
            " are comparable only with each other.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        store_setting = dict(STORES[opts["store"]])
        if opts["store"] == "qdrant":
            store_setting["OPTIONS"] = {"path": str(opts["qdrant_path"]), "collection": "evaluation"}
        with override_settings(VECTOR_STORES={"default": store_setting}):
            vector_stores.reset()
            queries = evaluation.load_queries(opts["queries"])
            qrels = evaluation.load_qrels(opts["qrels"])
            if opts["limit_queries"]:
                qrels = dict(list(qrels.items())[: opts["limit_queries"]])
            sample = None
            if opts["distractors"] is not None:
                if not opts["limit_queries"]:
                    raise CommandError("--distractors needs --limit-queries")
                corpus_ids = [d.doc_id for d in evaluation.load_corpus(opts["corpus"])]
                sample = evaluation.sample_documents(corpus_ids, qrels, opts["distractors"])
            workspace = self._index(opts["corpus"], opts["store"], sample)
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
                        "bm25_k1": opts["bm25_k1"],
                        "bm25_b": opts["bm25_b"],
                    }.items()
                    if v is not None
                },
            )
            doc_ids = self._doc_ids(workspace)

            def rank(query: str) -> list[str]:
                passages = search_passages(workspace_id=workspace.id, query=query, params=params)
                return evaluation.documents_by_best_passage(doc_ids[p.document_id] for p in passages)

            embedders["default"].embed_query("warm-up")
            result: dict[str, Any] = evaluation.evaluate(queries, qrels, rank)
            bm25 = with_workspace_bm25(params, workspace.id)
        result.update(
            documents=len(doc_ids),
            mode=opts["mode"],
            fusion=params.fusion if opts["mode"] == "hybrid" else None,
            store=opts["store"],
            rerank=opts["rerank"],
            bm25=[bm25.bm25_k1, bm25.bm25_b] if opts["mode"] != "vector" else None,
            chunk_chars=settings.CHUNK_TARGET_CHARS,
            sentence_vectors=settings.SENTENCE_VECTORS,
            sentence_weights=list(params.sentence_weights),
            embedder=embedders["default"].model_name,
        )
        self.stdout.write(json.dumps(result))

    def _index(self, corpus_path: Path, store: str, sample: set[str] | None) -> Workspace:
        key = evaluation.fingerprint(
            evaluation.file_fingerprint(corpus_path),
            *([sorted(sample)] if sample is not None else []),
            settings.CHUNK_TARGET_CHARS,
            settings.CHUNK_OVERLAP_CHARS,
            settings.EMBED_TITLE_PREFIX,
            settings.SENTENCE_VECTORS,
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
                if sample is not None:
                    corpus = [d for d in corpus if d.doc_id in sample]
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
            pending = list(source.documents.exclude(status=Status.DONE).order_by("id"))  # type: ignore[misc]  # django-stubs cannot type a reverse manager of a from_queryset manager
            started = time.monotonic()
            done = 0
            # In groups as an index job takes them (ingestion.indexing.index_ready): one embedding pass
            # over many documents' chunks keeps the embedder's batches full.
            for group in in_batches(pending):
                documents_index(documents=group)
                done += len(group)
                rate = done / (time.monotonic() - started)
                self.stderr.write(f"indexed {done}/{len(pending)} documents ({rate:.1f}/s)")
            source_refresh_status(source_id=source.id)
        return workspace

    @staticmethod
    def _doc_ids(workspace: Workspace) -> dict[int, str]:
        with workspace_scope(workspace.id):
            return {pk: url.removeprefix("beir:") for pk, url in Document.objects.values_list("id", "url")}
