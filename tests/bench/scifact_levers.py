"""Retrieval levers on SciFact, measured offline: search_hits's arithmetic replayed on cached vectors.

`manage.py evaluate_retrieval` indexes the corpus through the real pipeline for each configuration, which
costs minutes of embedding per model on two shared cores. Fusion, BM25 k1/b and document scoring do not
change a vector, so this script embeds once per model (cached as .npz/.pkl in --cache, never in the repo)
and replays what a search does: chunks cut and titled as ingestion does, exact cosine top 200, our BM25
(retrieval.keyword) top 200 normalised like the stores, the fusions of retrieval.fusion, documents ranked
by their best passage, nDCG@10 and Recall@100 as retrieval.evaluation computes them. At the defaults it
gives the command's figures (keyword 0.7005, vector 0.6768, hybrid 0.7358 on train): the check that the
replay is faithful, printed first by `levers`.

    DJANGO_SETTINGS_MODULE=config.settings.local .venv/bin/python -m tests.bench.scifact_levers \
        --cache /tmp/scifact-cache embed minilm|minilm512|e5 | levers [minilm512] | subset N M | cost N \
        | sentence-cost N

`subset N M`: the judged documents of the first N train queries and M others (evaluation.sample_documents),
for e5, too slow here to embed the whole corpus (vectors cached by text, so a run can be resumed).
`cost N`: docs/s of embedding the first N abstracts with each model, in turns. `sentence-cost N`: the same
for MiniLM without and with sentence vectors (retrieval/sentences.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from collections import defaultdict
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from ingestion.text.chunking import chunk_text  # noqa: E402
from retrieval import evaluation, keyword  # noqa: E402
from retrieval.fusion import FUSIONS  # noqa: E402
from retrieval.stores.base import VectorHit  # noqa: E402
from retrieval.vectors import embedding_input  # noqa: E402

DATA = Path(os.environ.get("GROUNDED_SCIFACT_DIR", "../shared/data/scifact"))
CANDIDATES = 200


def corpus_chunks(cache: Path) -> tuple[list[str], list[str]]:
    path = cache / f"chunks_{settings.CHUNK_TARGET_CHARS}_{settings.CHUNK_OVERLAP_CHARS}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())  # noqa: S301 - our own cache file
    doc_ids, inputs = [], []
    for d in evaluation.load_corpus(DATA / "corpus.jsonl"):
        for piece in chunk_text(
            d.text, target_chars=settings.CHUNK_TARGET_CHARS, overlap_chars=settings.CHUNK_OVERLAP_CHARS
        ):
            doc_ids.append(d.doc_id)
            inputs.append(embedding_input(piece.text, d.title))
    path.write_bytes(pickle.dumps((doc_ids, inputs)))
    return doc_ids, inputs


def train() -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    return evaluation.load_queries(DATA / "queries.jsonl"), evaluation.load_qrels(DATA / "qrels/train.tsv")


class BM25:
    """keyword_search's scores over a fixed set of chunks: idf over them, divided by keyword.max_score."""

    def __init__(self, inputs: list[str], titles: list[str] | None = None, title_weight: int = 1) -> None:
        counts = [keyword.term_counts(t) for t in inputs]
        if titles and title_weight > 1:  # the title's terms counted title_weight times, as indexing does
            for c, title in zip(counts, titles, strict=True):
                for term, n in keyword.term_counts(title).items():
                    c[term] = c.get(term, 0) + (title_weight - 1) * n
        self.lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        self.n, self.average = len(inputs), float(self.lengths.mean())
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i, c in enumerate(counts):
            for term, tf in c.items():
                postings[term][0].append(i)
                postings[term][1].append(tf)
        self.postings = {
            t: (np.array(ids), np.array(tfs, dtype=np.float64)) for t, (ids, tfs) in postings.items()
        }

    def scores(self, query: dict[str, int], k1: float, b: float) -> np.ndarray:
        scores, weights = np.zeros(self.n), []
        for term, qtf in query.items():
            ids, tf = self.postings.get(term, (np.array([], dtype=int), np.array([])))
            weights.append(qtf * keyword.idf(self.n, len(ids)))
            if len(ids):
                norm = k1 * (1 - b + b * self.lengths[ids] / self.average)
                scores[ids] += weights[-1] * tf * (k1 + 1) / (tf + norm)
        best = sum(weights) * (k1 + 1)
        return np.minimum(scores / best, 1.0) if best > 0 else scores


def ranking(scores: np.ndarray, positive: bool = False) -> list[VectorHit]:
    top = np.argpartition(-scores, min(CANDIDATES, len(scores) - 1))[:CANDIDATES]
    top = top[np.lexsort((top, -scores[top]))]
    return [VectorHit(str(i), float(scores[i])) for i in top if not positive or scores[i] > 0]


def evaluate(
    qrels: dict, queries: dict, doc_of: list[str], dense: list, bm25: BM25, config: dict
) -> tuple[float, ...]:
    """`dense`: (chunk vectors, {query id: vector}) per model; config: mode, weights (dense..., keyword),
    fusion, k1, b, second (the weight of a document's second-best passage). Returns nDCG@10, Recall@100,
    and nDCG@10 on the odd and on the even query ids apart (a gain carried by one half is noise)."""
    ndcg, recall = [], []
    for qid, relevant in qrels.items():
        lists, arrays = [], []
        if config["mode"] != "keyword":
            arrays += [vectors @ by_query[qid] for vectors, by_query in dense]
            lists += [ranking(a) for a in arrays]
        if config["mode"] != "vector":
            terms = keyword.term_counts(queries[qid])
            arrays.append(bm25.scores(terms, config.get("k1", 1.2), config.get("b", 0.75)))
            lists.append(ranking(arrays[-1], True))
        if config.get("fusion") == "absolute" and len(lists) > 1:
            # search_hits scores every candidate by both retrievers and adds those scores
            union = sorted({int(h.chunk_id) for hits in lists for h in hits})
            lists = [[VectorHit(str(i), float(a[i])) for i in union] for a in arrays]
        if len(lists) == 1:
            fused = {h.chunk_id: -rank for rank, h in enumerate(lists[0])}
        else:
            fused = FUSIONS[config.get("fusion", "score")](lists, config["weights"])
        order = sorted(fused, key=lambda c: (-fused[c], c))[:CANDIDATES]
        ranked = by_document(order, fused, doc_of, config.get("second", 0.0))
        ndcg.append(evaluation.ndcg_at(ranked, relevant, 10))
        recall.append(evaluation.recall_at(ranked, relevant, 100))
    halves = [[v for q, v in zip(qrels, ndcg, strict=True) if int(q) % 2 == odd] for odd in (1, 0)]
    return (
        round(float(np.mean(ndcg)), 4),
        round(float(np.mean(recall)), 4),
        *(round(float(np.mean(h)), 4) for h in halves),
    )


def by_document(order: list[str], fused: dict[str, float], doc_of: list[str], second: float) -> list[str]:
    if not second:
        return evaluation.documents_by_best_passage(doc_of[int(c)] for c in order)
    passages: dict[str, list[float]] = defaultdict(list)
    for c in order:
        passages[doc_of[int(c)]].append(fused[c])
    score = {d: s[0] + second * (s[1] if len(s) > 1 else 0.0) for d, s in passages.items()}
    return sorted(score, key=lambda d: -score[d])


def embedder(model: str):
    from django.utils.module_loading import import_string

    if model == "minilm512":
        return _minilm_at(512)
    path = {
        "minilm": "retrieval.embedders.local.MiniLMOnnxEmbedder",
        "e5": "retrieval.embedders.e5.E5SmallEmbedder",
    }
    return import_string(path[model])()


def _minilm_at(max_tokens: int):
    """The built-in MiniLM reading up to `max_tokens` (its position table has 512) instead of the 256 it
    was trained with: the 2,000-character chunks whole, for the lever "chunks not cut at 256 tokens"."""
    from retrieval.embedders.local import MiniLMOnnxEmbedder

    class LongerMiniLM(MiniLMOnnxEmbedder):
        def _load(self) -> None:
            super()._load()
            self._tokenizer.enable_truncation(max_length=max_tokens)

    return LongerMiniLM()


def embed(cache: Path, model: str) -> None:
    doc_ids, inputs = corpus_chunks(cache)
    queries, qrels = train()
    encoder = embedder(model)
    encoder.embed_query("warm-up")
    started = time.perf_counter()
    vectors = np.zeros((len(inputs), encoder.dimensions), dtype=np.float32)
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    for start in range(0, len(order), settings.EMBED_BATCH_SIZE):
        ids = order[start : start + settings.EMBED_BATCH_SIZE]
        vectors[ids] = encoder.embed_documents([inputs[i] for i in ids])
    seconds = time.perf_counter() - started
    by_query = {q: encoder.embed_query(queries[q]) for q in qrels if q in queries}
    np.savez(cache / f"{model}.npz", chunks=vectors, **{f"q{q}": v for q, v in by_query.items()})
    docs = len(set(doc_ids))
    print(
        json.dumps(
            {"model": model, "docs": docs, "chunks": len(inputs), "docs_per_s": round(docs / seconds, 2)}
        )
    )


def cost(cache: Path, documents: int) -> None:
    """Embedding cost of the two built-in models on the same first `documents` abstracts, run in turns
    (MiniLM, e5, MiniLM, e5) so a change of load on the shared machine hits both alike."""
    doc_ids, inputs = corpus_chunks(cache)
    keep = set(list(dict.fromkeys(doc_ids))[:documents])
    texts = [t for d, t in zip(doc_ids, inputs, strict=True) if d in keep]
    encoders = {model: embedder(model) for model in ("minilm", "e5")}
    rates: dict[str, list[float]] = {model: [] for model in encoders}
    for _round in range(2):
        for model, encoder in encoders.items():
            encoder.embed_query("warm-up")
            started = time.perf_counter()
            for start in range(0, len(texts), settings.EMBED_BATCH_SIZE):
                encoder.embed_documents(texts[start : start + settings.EMBED_BATCH_SIZE])
            rates[model].append(round(len(keep) / (time.perf_counter() - started), 2))
    print(json.dumps({"documents": len(keep), "chunks": len(texts), "docs_per_s": rates}))


def sentence_cost(cache: Path, documents: int) -> None:
    """Embedding docs/s of the first `documents` abstracts as ingestion embeds them, without and with
    sentence vectors (each chunk's inputs plus ingestion.text.sentence_inputs' sentences), in turns."""
    from ingestion.text.sentence_inputs import sentence_texts

    title_of = {d.doc_id: d.title for d in evaluation.load_corpus(DATA / "corpus.jsonl")}
    doc_ids, inputs = corpus_chunks(cache)
    keep = list(dict.fromkeys(doc_ids))[:documents]
    chosen = [(d, t) for d, t in zip(doc_ids, inputs, strict=True) if d in set(keep)]
    chunks_only = [t for _, t in chosen]
    with_sentences = list(chunks_only)
    for d in keep:  # each document's unique sentences, as with_sentences dedupes them per document
        title = title_of[d]
        texts = [
            s for doc, t in chosen if doc == d for s in sentence_texts(t.removeprefix(f"{title}\n\n"), title)
        ]
        with_sentences += list(dict.fromkeys(texts))
    encoder = embedder("minilm")
    encoder.embed_query("warm-up")
    rates: dict[str, list[float]] = {"chunks": [], "chunks + sentences": []}
    for _round in range(2):
        for name, texts in (("chunks", chunks_only), ("chunks + sentences", with_sentences)):
            texts = sorted(texts, key=len)  # as index jobs order their inputs
            started = time.perf_counter()
            for start in range(0, len(texts), settings.EMBED_BATCH_SIZE):
                encoder.embed_documents(texts[start : start + settings.EMBED_BATCH_SIZE])
            rates[name].append(round(len(keep) / (time.perf_counter() - started), 2))
    inputs_count = {"chunks": len(chunks_only), "chunks + sentences": len(with_sentences)}
    print(json.dumps({"documents": len(keep), "inputs": inputs_count, "docs_per_s": rates}))


def load_dense(cache: Path, model: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    saved = np.load(cache / f"{model}.npz")
    return saved["chunks"], {k[1:]: saved[k] for k in saved.files if k.startswith("q")}


def report(name: str, config: dict, figures: tuple[float, ...]) -> None:
    ndcg, recall, odd, even = figures
    halves = f"(odd {odd:.4f} even {even:.4f})"
    print(f"{name:34s} nDCG@10 {ndcg:.4f} {halves} Recall@100 {recall:.4f}  {json.dumps(config)}", flush=True)


def levers(cache: Path, model: str = "minilm") -> None:
    doc_ids, inputs = corpus_chunks(cache)
    queries, qrels = train()
    qrels = {q: r for q, r in qrels.items() if q in queries}
    bm25, dense = BM25(inputs), [load_dense(cache, model)]
    runs = [
        ("keyword (default)", {"mode": "keyword"}),
        ("vector (default)", {"mode": "vector"}),
        ("hybrid (default)", {"mode": "hybrid", "weights": [0.4, 0.6]}),
        *[("min-max", {"mode": "hybrid", "weights": [w, 1 - w]}) for w in (0.3, 0.35, 0.45, 0.5)],
        *[
            ("z-score", {"mode": "hybrid", "fusion": "zscore", "weights": [w, 1 - w]})
            for w in (0.3, 0.4, 0.45, 0.5, 0.55)
        ],
        *[
            ("best + second passage", {"mode": "hybrid", "weights": [0.4, 0.6], "second": s})
            for s in (0.1, 0.3)
        ],
        *[
            (f"{mode} k1 {k1} b {b}", {"mode": mode, "weights": [0.4, 0.6], "k1": k1, "b": b})
            for mode in ("keyword", "hybrid")
            for k1, b in ((0.9, 0.75), (1.5, 0.75), (2.0, 0.75), (1.2, 0.5), (1.2, 0.9), (1.2, 1.0))
        ],
    ]
    for name, config in runs:
        report(name, config, evaluate(qrels, queries, doc_ids, dense, bm25, config))


def absolute(cache: Path, model: str = "minilm") -> None:
    """The absolute fusion (each candidate's cosine plus its BM25 over the query's maximum) and the
    title's terms counted twice, chunk by chunk as search_hits does, beside the defaults."""
    doc_ids, inputs = corpus_chunks(cache)
    queries, qrels = train()
    qrels = {q: r for q, r in qrels.items() if q in queries}
    title_of = {d.doc_id: d.title for d in evaluation.load_corpus(DATA / "corpus.jsonl")}
    titles = [title_of[d] if inputs[i].startswith(title_of[d]) else "" for i, d in enumerate(doc_ids)]
    dense = [load_dense(cache, model)]
    for weight in (1, 2):
        bm25 = BM25(inputs, titles, weight)
        runs = [("keyword", {"mode": "keyword"})]
        runs += [("hybrid min-max", {"mode": "hybrid", "weights": [0.4, 0.6]})]
        runs += [
            ("hybrid absolute", {"mode": "hybrid", "fusion": "absolute", "weights": [w, round(1 - w, 2)]})
            for w in (0.3, 0.4, 0.5, 0.6)
        ]
        runs += [
            (
                f"absolute k1 {k1} b {b}",
                {"mode": "hybrid", "fusion": "absolute", "weights": [0.4, 0.6], "k1": k1, "b": b},
            )
            for k1, b in (
                (0.6, 0.75),
                (0.9, 0.75),
                (1.5, 0.75),
                (1.2, 0.6),
                (1.2, 0.9),
                (0.9, 0.6),
                (0.75, 0.6),
            )
            if weight == 1
        ]
        for name, config in runs:
            config["title_weight"] = weight
            report(name, config, evaluate(qrels, queries, doc_ids, dense, bm25, config))


def subset(cache: Path, queries_count: int, distractors: int) -> None:
    doc_ids, inputs = corpus_chunks(cache)
    queries, qrels = train()
    qrels = {q: r for q, r in list(qrels.items())[:queries_count] if q in queries}
    sample = evaluation.sample_documents(sorted(set(doc_ids)), qrels, distractors)
    chunks = [i for i, d in enumerate(doc_ids) if d in sample]
    texts = [inputs[i] for i in chunks]
    store = cache / "e5_by_text.pkl"
    known: dict[str, np.ndarray] = pickle.loads(store.read_bytes()) if store.exists() else {}  # noqa: S301
    encoder = embedder("e5")
    missing = [t for t in texts if t not in known]
    started = time.perf_counter()
    for start in range(0, len(missing), 16):
        batch = missing[start : start + 16]
        known.update(zip(batch, encoder.embed_documents(batch), strict=True))
        store.write_bytes(pickle.dumps(known))
    if missing:
        print(json.dumps({"e5_chunks_per_s": round(len(missing) / (time.perf_counter() - started), 2)}))
    minilm_chunks, minilm_queries = load_dense(cache, "minilm")
    minilm = (minilm_chunks[chunks], minilm_queries)
    e5 = (np.stack([known[t] for t in texts]), {q: encoder.embed_query(queries[q]) for q in qrels})
    bm25, doc_of = BM25(texts), [doc_ids[i] for i in chunks]
    print(json.dumps({"queries": len(qrels), "documents": len(sample), "chunks": len(chunks)}))
    runs = [
        ("keyword", [], {"mode": "keyword"}),
        ("vector MiniLM", [minilm], {"mode": "vector"}),
        ("vector e5", [e5], {"mode": "vector"}),
        ("hybrid MiniLM (default)", [minilm], {"mode": "hybrid", "weights": [0.4, 0.6]}),
        *[
            (f"hybrid e5 {fusion}", [e5], {"mode": "hybrid", "fusion": fusion, "weights": [w, 1 - w]})
            for fusion in ("score", "zscore")
            for w in (0.3, 0.4, 0.5, 0.6)
        ],
        *[
            ("MiniLM + e5 + BM25", [minilm, e5], {"mode": "hybrid", "weights": list(w)})
            for w in ((0.2, 0.2, 0.6), (0.2, 0.3, 0.5), (0.25, 0.25, 0.5))
        ],
    ]
    for name, dense, config in runs:
        report(name, config, evaluate(qrels, queries, doc_of, dense, bm25, config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("action", choices=["embed", "levers", "absolute", "subset", "cost", "sentence-cost"])
    parser.add_argument("args", nargs="*")
    opts = parser.parse_args()
    opts.cache.mkdir(parents=True, exist_ok=True)
    if opts.action == "embed":
        embed(opts.cache, *opts.args)
    elif opts.action == "levers":
        levers(opts.cache, *opts.args)  # [minilm|minilm512]: whose cached vectors are the dense signal
    elif opts.action == "absolute":
        absolute(opts.cache, *opts.args)
    elif opts.action == "cost":
        cost(opts.cache, int(opts.args[0]))
    elif opts.action == "sentence-cost":
        sentence_cost(opts.cache, int(opts.args[0]))
    else:
        subset(opts.cache, int(opts.args[0]), int(opts.args[1]))


if __name__ == "__main__":
    main()
