"""Keyword terms for BM25: tokenising, stemming, stop words, and the BM25 formula itself.

English gets Snowball stemming and stop words. Other scripts are never broken: words in any
alphabet are kept whole (lower-cased), and CJK text, which has no spaces, becomes character bigrams.
The stores keep the postings; this module decides what a term is and how it scores, and reads a
workspace's idf from PgVectorStore's postings for the built-in answerer (`workspace_idf`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.db.models import Count

from retrieval.models import KeywordPosting, KeywordStats

# The defaults; every workspace may set its own (Workspace.bm25_k1, bm25_b), read at query time.
from sources.models import BM25_B as B
from sources.models import BM25_K1 as K1

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUNS = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
_LATIN = re.compile(r"^[a-z0-9_\u00c0-\u024f]+$")
MAX_TERM_LENGTH = 64

# The classic English stop list (as used by Lucene/bm25s), so frequent function words neither
# bloat the postings nor dilute scores.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can did do does doing down during each few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with you your yours yourself
    yourselves""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:  # a Stemmer.Stemmer (PyStemmer ships no types)
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    terms: list[str] = []
    latin: list[str] = []
    for word in _WORD.findall(text):
        if _CJK.search(word):
            terms.extend(_cjk_terms(word))
        elif _LATIN.match(word):
            if word not in STOP_WORDS:
                latin.append(word)
        else:
            terms.append(word[:MAX_TERM_LENGTH])
    terms.extend(t[:MAX_TERM_LENGTH] for t in _stemmer().stemWords(latin))
    return terms


def _cjk_terms(word: str) -> list[str]:
    """Bigrams over runs of CJK characters; other characters in the word stay as their own runs."""
    out: list[str] = []
    for run in _CJK_RUNS.findall(word):
        if _CJK.match(run):
            out.extend(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
        else:
            out.append(run)
    return out


def term_counts(text: str) -> dict[str, int]:
    return dict(Counter(tokenize(text)))


def idf(document_count: int, document_frequency: int) -> float:
    """BM25's idf (the Lucene form, never negative)."""
    return math.log(1 + (document_count - document_frequency + 0.5) / (document_frequency + 0.5))


def workspace_idf(terms: Iterable[str]) -> dict[str, float]:
    """Each term's idf in the active workspace's keyword index, as its BM25 search weighs it: counted
    over that workspace's chunks only (the managers are scoped to it). Empty when the workspace has no
    statistics there: nothing indexed yet, or a store that keeps its postings elsewhere (Qdrant).
    Two index-only reads, the same the search itself makes for the query's terms."""
    wanted = sorted(set(terms))
    chunk_count = KeywordStats.objects.values_list("chunk_count", flat=True).first()
    if not wanted or not chunk_count:
        return {}
    frequencies = dict(
        KeywordPosting.objects.filter(term__in=wanted)
        .values("term")
        .annotate(n=Count("*"))
        .values_list("term", "n")
    )
    return {term: idf(chunk_count, frequencies.get(term, 0)) for term in wanted}


def term_weight(tf: int, length: int, average_length: float, k1: float = K1, b: float = B) -> float:
    """The saturated term-frequency part of BM25; between 0 and k1 + 1."""
    norm = k1 * (1 - b + b * length / max(average_length, 1e-9))
    return tf * (k1 + 1) / (tf + norm) if tf + norm > 0 else 0.0


def max_score(idfs: list[float], query_counts: list[int], k1: float = K1) -> float:
    """The score a chunk would get if every query term saturated: BM25 scores divided by this land in
    [0, 1] with a meaning that does not depend on the other results."""
    return sum(w * q for w, q in zip(idfs, query_counts, strict=True)) * (k1 + 1)
