"""Does the embedder find non-English pages? Questions whose answer page must come first.

The pages are real non-English feed items from the shared data (Portuguese news, German football news,
a Russian phone-software blog); each question, asked in the page's language or in English, names one
page. Every embedder is run on the same pages in memory (exact cosine, our BM25 and the configured
fusion), so the check needs no database and compares models, not stores.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils.module_loading import import_string

from retrieval import keyword
from retrieval.fusion import FUSIONS
from retrieval.stores.base import VectorHit
from retrieval.vectors import embedding_input

FEEDS = {
    "pt": "rss-parser/encoding.rss",
    "de": "rss-parser/itunes-href.rss",
    "ru": "feedparser-py/large-atom-touchnokia-ru.xml",
}
# (question, the start of the answer page's title)
QUESTIONS = [
    ("Quantas pessoas morreram quando o autocarro caiu na ravina?", "Acidente com autocarro"),
    ("Porque é que o cacau pode desaparecer?", "Só há chocolate"),
    ("A Apple troca a bateria de telemóveis antigos?", "Apple disponível"),
    ("Que selos lançou o correio britânico?", "Royal Mail"),
    ("Que países foram atingidos pela tempestade?", "Tempestade Eleanor"),
    ("Welcher Mittelfeldspieler geht von Leicester zurück nach Spanien?", "Transfer fix"),
    ("Wer wird neuer Trainer in Bonn?", "Regionalliga West"),
    ("антивирус для смартфона", "Программы для Nokia 5800 и Nokia N97: Kaspersky"),
    ("как защитить экран телефона от царапин", "Невидимая броня"),
    ("бесплатный клиент Google Talk с голосовыми звонками", "Программы для Nokia 5800 и Nokia N97: Talk"),  # noqa: RUF001
    ("How many people died when a bus fell into a ravine in Peru?", "Acidente com autocarro"),
    ("Why might chocolate run out by 2050?", "Só há chocolate"),
    ("antivirus software for a Nokia phone", "Программы для Nokia 5800 и Nokia N97: Kaspersky"),
    ("Which midfielder returns to Villarreal from Leicester?", "Transfer fix"),
]
EMBEDDERS = ["retrieval.embedders.local.MiniLMOnnxEmbedder", "retrieval.embedders.e5.E5SmallEmbedder"]


def load_pages(feeds_dir: Path) -> list[tuple[str, str]]:
    import feedparser

    pages = []
    for path in FEEDS.values():
        for entry in feedparser.parse((feeds_dir / path).read_bytes()).entries:
            body = entry.get("summary") or (entry.get("content") or [{}])[0].get("value", "")
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())
            pages.append((entry.get("title", ""), text))
    return pages


def bm25_ranking(pages_terms: list[dict[str, int]], query: dict[str, int]) -> list[VectorHit]:
    lengths = [sum(t.values()) for t in pages_terms]
    average = sum(lengths) / len(lengths)
    idfs = {t: keyword.idf(len(pages_terms), sum(1 for p in pages_terms if t in p)) for t in query}
    best = keyword.max_score(list(idfs.values()), list(query.values()))
    hits = []
    for i, terms in enumerate(pages_terms):
        found = [t for t in query if t in terms]
        score = sum(idfs[t] * query[t] * keyword.term_weight(terms[t], lengths[i], average) for t in found)
        if score > 0:
            hits.append(VectorHit(chunk_id=str(i), score=score / best))
    return sorted(hits, key=lambda h: -h.score)


class Command(BaseCommand):
    help = "Top-1 hits of non-English questions for each built-in embedder (vector, keyword, hybrid)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--feeds", type=Path, default=Path("../shared/data/feeds"))
        parser.add_argument("--embedder", action="append", help="Dotted path; default: both built-in ones.")

    def handle(self, *args: Any, **opts: Any) -> None:
        pages = load_pages(opts["feeds"])
        inputs = [embedding_input(text, title) for title, text in pages]
        answers = [next(i for i, (title, _) in enumerate(pages) if title.startswith(a)) for _, a in QUESTIONS]
        pages_terms = [keyword.term_counts(text) for text in inputs]
        keyword_hits = [bm25_ranking(pages_terms, keyword.term_counts(q)) for q, _ in QUESTIONS]
        report: dict[str, object] = {"pages": len(pages), "questions": len(QUESTIONS)}
        for dotted in opts["embedder"] or EMBEDDERS:
            embedder = import_string(dotted)()
            vectors = embedder.embed_documents(inputs)
            firsts: dict[str, list[bool]] = {"vector": [], "keyword": [], "hybrid": []}
            for (question, _), answer, by_keyword in zip(QUESTIONS, answers, keyword_hits, strict=True):
                cosines = vectors @ embedder.embed_query(question)
                order = np.argsort(-cosines)
                by_vector = [VectorHit(chunk_id=str(i), score=float(cosines[i])) for i in order]
                fused = FUSIONS[settings.SEARCH_FUSION](
                    [by_vector, by_keyword], [settings.SEARCH_VECTOR_WEIGHT, settings.SEARCH_KEYWORD_WEIGHT]
                )
                firsts["vector"].append(by_vector[0].chunk_id == str(answer))
                firsts["keyword"].append(bool(by_keyword) and by_keyword[0].chunk_id == str(answer))
                firsts["hybrid"].append(max(fused, key=fused.__getitem__) == str(answer))
            misses = [q for (q, _), hit in zip(QUESTIONS, firsts["vector"], strict=True) if not hit]
            report[embedder.model_name] = {m: f"{sum(h)}/{len(h)}" for m, h in firsts.items()} | {
                "vector_misses": misses
            }
        self.stdout.write(json.dumps(report, ensure_ascii=False, indent=1))
