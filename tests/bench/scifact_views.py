"""Issue #17's second round of levers, replayed per document: which views of a document are embedded and
what unit BM25 scores, on the full SciFact corpus and the 809 train queries.

scifact_levers replays search_hits chunk by chunk. Here a document's dense score is pooled from the
vectors of several views of it (the 2,000-character chunks ingestion makes now, windows packed to fit
MiniLM's 256 tokens, the title alone, a mean of window vectors) and its keyword score is BM25 over a unit
(the chunk as now, the whole document, the title's terms weighted w times, BM25F-like); both top-200
lists are fused by retrieval.fusion (min-max "score", "zscore"; "absolute" and "complete", min-max over
every candidate's rescored scores, on both signals' scores of every candidate, as search_hits has them)
and scored as retrieval.evaluation does. Every figure is printed for all 809 queries and for the odd and
even query ids apart, so a gain carried by one half shows. `prf`: dense pseudo-relevance feedback.

    nice -n 19 .venv/bin/python -m tests.bench.scifact_views --cache /tmp/scifact-cache embed   # once
    .venv/bin/python -m tests.bench.scifact_views --cache /tmp/scifact-cache levers \
        [--only window900] [--fusions score,zscore,absolute,complete]
    .venv/bin/python -m tests.bench.scifact_views --cache /tmp/scifact-cache prf

`embed` embeds every view's texts not yet in the cache (MiniLM int8, vectors kept by text in
minilm_by_text.pkl; the chunk vectors of `scifact_levers embed minilm` seed it), resumably.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import time
from collections import Counter
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup()

import numpy as np  # noqa: E402

from ingestion.text.chunking import chunk_text  # noqa: E402
from retrieval import evaluation, keyword  # noqa: E402
from retrieval.fusion import FUSIONS  # noqa: E402
from retrieval.vectors import embedding_input  # noqa: E402
from tests.bench.scifact_levers import BM25, CANDIDATES, DATA, corpus_chunks, load_dense, ranking, train  # noqa: E402

WINDOW_CHARS = (900,)  # title + window fit MiniLM's 256 tokens (scientific text: ~4 chars a token)


class Corpus:
    """Per document: its id, title, body, and the texts of each view (lists of (document index, text))."""

    def __init__(self, cache: Path) -> None:
        self.docs = evaluation.load_corpus(DATA / "corpus.jsonl")
        self.ids = [d.doc_id for d in self.docs]
        index = {d: i for i, d in enumerate(self.ids)}
        doc_ids, inputs = corpus_chunks(cache)
        self.views: dict[str, list[tuple[int, str]]] = {
            "chunk": [(index[d], t) for d, t in zip(doc_ids, inputs, strict=True)],
            "title": [(i, d.title) for i, d in enumerate(self.docs) if d.title],
        }
        for size in WINDOW_CHARS:
            self.views[f"window{size}"] = [
                (i, embedding_input(piece.text, d.title))
                for i, d in enumerate(self.docs)
                for piece in chunk_text(d.text, target_chars=size, overlap_chars=size // 8)
            ]

    def texts(self) -> list[str]:
        return list(dict.fromkeys(t for view in self.views.values() for _, t in view))


def vector_store(cache: Path) -> tuple[Path, dict[str, np.ndarray]]:
    path = cache / "minilm_by_text.pkl"
    if path.exists():
        return path, pickle.loads(path.read_bytes())  # noqa: S301 - our own cache file
    _doc_ids, inputs = corpus_chunks(cache)
    chunks, _queries = load_dense(cache, "minilm")
    return path, dict(zip(inputs, chunks, strict=True))


def embed(cache: Path, views: list[str]) -> None:
    from retrieval.embedders.local import MiniLMOnnxEmbedder

    corpus = Corpus(cache)
    path, known = vector_store(cache)
    wanted = [t for name in views or corpus.views for _, t in corpus.views[name]]
    missing = sorted(set(t for t in wanted if t not in known), key=len)
    print(json.dumps({"missing": len(missing)}), flush=True)
    encoder = MiniLMOnnxEmbedder()
    started = time.perf_counter()
    for start in range(0, len(missing), 256):
        batch = missing[start : start + 256]
        known.update(zip(batch, encoder.embed_documents(batch), strict=True))
        path.write_bytes(pickle.dumps(known))
    seconds = time.perf_counter() - started
    counts = {name: len(view) for name, view in corpus.views.items()}
    print(json.dumps({"embedded": len(missing), "seconds": round(seconds, 1), "texts_per_view": counts}))


class Dense:
    """One view's vectors and which document each belongs to; pooled to a score per document."""

    def __init__(self, view: list[tuple[int, str]], known: dict[str, np.ndarray], n_docs: int) -> None:
        order = sorted(range(len(view)), key=lambda i: view[i][0])
        self.doc = np.array([view[i][0] for i in order])
        self.vectors = np.stack([known[view[i][1]] for i in order])
        self.starts = np.flatnonzero(np.r_[True, self.doc[1:] != self.doc[:-1]])
        self.owners = self.doc[self.starts]
        self.n_docs = n_docs
        sums = np.add.reduceat(self.vectors, self.starts, axis=0)
        self.centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)

    def scores(self, query: np.ndarray, pool: str) -> np.ndarray:
        out = np.full(self.n_docs, -1.0)
        if pool == "centroid":
            out[self.owners] = self.centroids @ query
            return out
        cos = self.vectors @ query
        if pool == "max":
            out[self.owners] = np.maximum.reduceat(cos, self.starts)
        else:  # mean of the cosines
            out[self.owners] = np.add.reduceat(cos, self.starts) / np.diff(np.r_[self.starts, len(cos)])
        return out


def bigrams(text: str) -> dict[str, int]:
    """Adjacent terms (after stop words and stemming) as one term: a phrase match counts apart."""
    terms = keyword.tokenize(text)
    return dict(Counter(f"{a}_{b}" for a, b in itertools.pairwise(terms)))


def keyword_units(corpus: Corpus, title_weight: float, counting=keyword.term_counts) -> BM25:
    """BM25 over whole documents, the title's term counts (and length) multiplied by title_weight:
    1 is the title prefixed once as ingestion does, 2 the title twice, 1.5 BM25F-like in between."""
    bm25 = BM25([""])  # replaced below: BM25 takes texts, this builds weighted counts
    counts = []
    for d in corpus.docs:
        c = Counter({t: float(n) for t, n in counting(d.text).items()})
        for t, n in counting(d.title).items():
            c[t] += title_weight * n
        counts.append(c)
    bm25.lengths = np.array([sum(c.values()) for c in counts])
    bm25.n, bm25.average = len(counts), float(bm25.lengths.mean())
    postings: dict[str, tuple[list[int], list[float]]] = {}
    for i, c in enumerate(counts):
        for term, tf in c.items():
            ids, tfs = postings.setdefault(term, ([], []))
            ids.append(i)
            tfs.append(tf)
    bm25.postings = {t: (np.array(i), np.array(f, dtype=np.float64)) for t, (i, f) in postings.items()}
    return bm25


def chunk_keyword(corpus: Corpus, bm25: BM25, terms: dict[str, int]) -> np.ndarray:
    """The chunk index as it is: each document scored by its best chunk's BM25."""
    scores = bm25.scores(terms, keyword.K1, keyword.B)
    out = np.zeros(len(corpus.ids))
    np.maximum.at(out, np.array([i for i, _ in corpus.views["chunk"]]), scores)
    return out


def run(corpus: Corpus, qrels: dict, queries: dict, signals, config: dict) -> dict[str, float]:
    """`signals(qid)` -> list of per-document score arrays (dense ones first, keyword last)."""
    per_query: dict[str, float] = {}
    recall: dict[str, float] = {}
    for qid, relevant in qrels.items():
        arrays = signals(qid)
        lists = [ranking(a, positive=(i == len(arrays) - 1)) for i, a in enumerate(arrays)]
        fusion = config.get("fusion", "score")
        if fusion not in ("complete", "absolute"):
            fused = FUSIONS[fusion](lists, config["weights"])
        else:  # every candidate scored by every signal, as search_hits rescores them
            ids = np.array(sorted({int(h.chunk_id) for hits in lists for h in hits}))
            fused = dict.fromkeys(map(str, ids), 0.0)
            for a, w in zip(arrays, config["weights"], strict=True):
                x = np.maximum(a[ids], 0.0)
                if fusion == "complete":
                    x = (x - x.min()) / max(x.max() - x.min(), 1e-12)
                for i, v in zip(ids, x, strict=True):
                    fused[str(i)] += w * float(v)
        order = sorted(fused, key=lambda c: (-fused[c], int(c)))[:CANDIDATES]
        ranked = [corpus.ids[int(c)] for c in order]
        per_query[qid] = evaluation.ndcg_at(ranked, relevant, 10)
        recall[qid] = evaluation.recall_at(ranked, relevant, 100)
    odd = [v for q, v in per_query.items() if int(q) % 2]
    even = [v for q, v in per_query.items() if not int(q) % 2]
    return {
        "all": round(float(np.mean(list(per_query.values()))), 4),
        "odd": round(float(np.mean(odd)), 4),
        "even": round(float(np.mean(even)), 4),
        "recall": round(float(np.mean(list(recall.values()))), 4),
    }


def levers(cache: Path, only: str = "", only_fusions: str = "score,zscore") -> None:
    corpus = Corpus(cache)
    _path, known = vector_store(cache)
    queries, qrels = train()
    qrels = {q: r for q, r in qrels.items() if q in queries}
    _chunks, query_vectors = load_dense(cache, "minilm")
    n = len(corpus.ids)
    dense: dict[str, Dense] = {}
    chunk_bm25 = BM25([t for _, t in corpus.views["chunk"]])
    doc_bm25 = {w: keyword_units(corpus, w) for w in (1.0, 1.5, 2.0, 3.0)}
    pairs = keyword_units(corpus, 2.0, bigrams)
    terms = {q: keyword.term_counts(queries[q]) for q in qrels}
    query_pairs = {q: bigrams(queries[q]) for q in qrels}
    kw_cache: dict[tuple, np.ndarray] = {}
    dense_cache: dict[tuple, np.ndarray] = {}

    def kw(unit, qid):
        key = (unit, qid)
        if key not in kw_cache:
            if unit == "chunk":
                kw_cache[key] = chunk_keyword(corpus, chunk_bm25, terms[qid])
            elif isinstance(unit, str):  # "bigrams L": title x2 plus L x the bigram BM25
                extra = pairs.scores(query_pairs[qid], keyword.K1, keyword.B)
                kw_cache[key] = kw(2.0, qid) + float(unit.split()[1]) * extra
            else:
                kw_cache[key] = doc_bm25[unit].scores(terms[qid], keyword.K1, keyword.B)
        return kw_cache[key]

    def dn(view, pool, qid):
        key = (view, pool, qid)
        if view not in dense:
            dense[view] = Dense(corpus.views[view], known, n)
        if key not in dense_cache:
            dense_cache[key] = dense[view].scores(query_vectors[qid], pool)
        return dense_cache[key]

    def combo(views, unit):
        return lambda qid: [*(dn(v, p, qid) for v, p in views), kw(unit, qid)]

    runs = [
        ("default: chunk max / chunk BM25", [("chunk", "max")], "chunk", [0.4, 0.6]),
        ("chunk max / doc BM25", [("chunk", "max")], 1.0, [0.4, 0.6]),
        *[(f"chunk max / doc BM25 title x{w}", [("chunk", "max")], w, [0.4, 0.6]) for w in (1.5, 2.0, 3.0)],
    ]
    runs += [
        (f"chunk max / doc BM25 x2 + {b}", [("chunk", "max")], b, [0.4, 0.6])
        for b in ("bigrams 0.2", "bigrams 0.5", "bigrams 1.0")
    ]
    for size in WINDOW_CHARS:
        view = f"window{size}"
        runs += [
            (f"{view} max / chunk BM25", [(view, "max")], "chunk", [0.4, 0.6]),
            (f"{view} centroid / chunk BM25", [(view, "centroid")], "chunk", [0.4, 0.6]),
            (f"{view} mean / chunk BM25", [(view, "mean")], "chunk", [0.4, 0.6]),
            (f"{view} max / doc BM25 x2", [(view, "max")], 2.0, [0.4, 0.6]),
            (f"{view} centroid / doc BM25 x2", [(view, "centroid")], 2.0, [0.4, 0.6]),
            (f"{view} max+centroid / doc BM25 x2", [(view, "max"), (view, "centroid")], 2.0, [0.2, 0.2, 0.6]),
            (f"{view} max+title / doc BM25 x2", [(view, "max"), ("title", "max")], 2.0, [0.3, 0.1, 0.6]),
        ]
    for name, views, unit, weights in runs:
        if only and only not in name:
            continue
        dense_share = [x / sum(weights[:-1]) * 0.5 for x in weights[:-1]]
        fusions = [
            ("score", weights),
            ("zscore", [*dense_share, 0.5]),
            ("complete", weights),
            *[("absolute", [x / 0.5 * (1 - k) for x in dense_share] + [k]) for k in (0.3, 0.4, 0.5, 0.6)],
        ]
        for fusion, w in fusions:
            if fusion not in only_fusions.split(","):
                continue
            w = [round(x, 3) for x in w]
            figures = run(corpus, qrels, queries, combo(views, unit), {"weights": w, "fusion": fusion})
            print(f"{name:44s} {fusion:6s} {json.dumps(w):22s} {json.dumps(figures)}", flush=True)


def prf(cache: Path) -> None:
    """Dense pseudo-relevance feedback: the query vector moved towards the mean of its first k documents'
    vectors (Rocchio, q + beta * mean), searched again, fused absolutely (0.4 / 0.6) with BM25 as before."""
    corpus = Corpus(cache)
    _path, known = vector_store(cache)
    queries, qrels = train()
    qrels = {q: r for q, r in qrels.items() if q in queries}
    _chunks, query_vectors = load_dense(cache, "minilm")
    dense = Dense(corpus.views["chunk"], known, len(corpus.ids))
    centroid = np.zeros((len(corpus.ids), dense.vectors.shape[1]))
    centroid[dense.owners] = dense.centroids
    chunk_bm25 = BM25([t for _, t in corpus.views["chunk"]])
    terms = {q: chunk_keyword(corpus, chunk_bm25, keyword.term_counts(queries[q])) for q in qrels}
    config = {"weights": [0.4, 0.6], "fusion": "absolute"}
    for k, beta in ((0, 0.0), (3, 0.3), (3, 0.6), (5, 0.5), (10, 0.5), (3, 1.0)):

        def signals(qid, k=k, beta=beta):
            q = query_vectors[qid]
            first = dense.scores(q, "max")
            if k:
                fused = 0.4 * np.maximum(first, 0) + 0.6 * terms[qid]
                top = np.argsort(-fused)[:k]
                q = q + beta * centroid[top].mean(axis=0)
                first = dense.scores(q / np.linalg.norm(q), "max")
            return [first, terms[qid]]

        figures = run(corpus, qrels, queries, signals, config)
        print(f"dense PRF k {k} beta {beta}: {json.dumps(figures)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("action", choices=["embed", "levers", "prf"])
    parser.add_argument("--only", default="")
    parser.add_argument("--fusions", default="score,zscore")
    parser.add_argument("views", nargs="*")
    opts = parser.parse_args()
    if opts.action == "embed":
        embed(opts.cache, opts.views)
    elif opts.action == "prf":
        prf(opts.cache)
    else:
        levers(opts.cache, opts.only, opts.fusions)


if __name__ == "__main__":
    main()
