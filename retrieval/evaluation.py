"""Retrieval quality on BEIR-format data: load, index through the real pipeline, score.

Documents are ranked by their best passage. Metrics follow BEIR/pytrec_eval: nDCG@10 with graded
relevance (2^rel - 1 gains, log2 discounts), Recall@100, MRR@10.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BeirDocument:
    doc_id: str
    title: str
    text: str


def load_corpus(path: Path) -> list[BeirDocument]:
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [BeirDocument(str(r["_id"]), r.get("title", ""), r.get("text", "")) for r in rows]


def load_queries(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8") as f:
        return {str(r["_id"]): r["text"] for r in (json.loads(line) for line in f if line.strip())}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        for row in reader:
            if not row or row[0] == "query-id":
                continue
            query_id, doc_id, score = row[0], row[1], int(row[2])
            qrels.setdefault(query_id, {})[doc_id] = score
    return qrels


def sample_documents(corpus_ids: list[str], qrels: dict[str, dict[str, int]], distractors: int) -> set[str]:
    """The judged documents of `qrels` and `distractors` others drawn at random (a fixed seed, so every
    model is measured on the same documents): a corpus small enough for a slow embedder."""
    judged = {doc_id for relevant in qrels.values() for doc_id in relevant}
    others = sorted(set(corpus_ids) - judged)
    return judged | set(random.Random(0).sample(others, min(distractors, len(others))))


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def file_fingerprint(path: Path) -> str:
    stat = path.stat()
    return fingerprint(str(path.resolve()), stat.st_size, int(stat.st_mtime))


def documents_by_best_passage(passage_doc_ids: Iterable[str]) -> list[str]:
    """Passages arrive best first; a document ranks where its best passage does."""
    seen: dict[str, None] = {}
    for doc_id in passage_doc_ids:
        seen.setdefault(doc_id, None)
    return list(seen)


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    positives = {d for d, r in relevant.items() if r > 0}
    return len(positives & set(ranked[:k])) / len(positives) if positives else 0.0


def mrr_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    for i, doc_id in enumerate(ranked[:k]):
        if relevant.get(doc_id, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def evaluate(
    queries: dict[str, str], qrels: dict[str, dict[str, int]], rank: Callable[[str], list[str]]
) -> dict[str, float]:
    """Run `rank(query_text) -> ranked doc ids` for every judged query and average the metrics."""
    ndcg, recall, mrr, latencies = [], [], [], []
    for query_id, relevant in qrels.items():
        if query_id not in queries:
            continue
        started = time.perf_counter()
        ranked = rank(queries[query_id])
        latencies.append((time.perf_counter() - started) * 1000)
        ndcg.append(ndcg_at(ranked, relevant, 10))
        recall.append(recall_at(ranked, relevant, 100))
        mrr.append(mrr_at(ranked, relevant, 10))
    count = len(ndcg)
    return {
        "ndcg@10": round(sum(ndcg) / count, 4) if count else 0.0,
        "recall@100": round(sum(recall) / count, 4) if count else 0.0,
        "mrr@10": round(sum(mrr) / count, 4) if count else 0.0,
        "queries": count,
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
    }
