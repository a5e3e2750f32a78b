"""The built-in answerer as it was before issue #17, kept unchanged only as the baseline that
`manage.py evaluate_answers --answerer old` measures the current one against. Not used to answer users.

It splits sentences at every line break, so a wrapped sentence loses its end ("within 30\ndays").

Sentences are ranked by the embedding similarity to the question plus keyword overlap; sentences that
read as instructions to an assistant are never used (our sources are data, not commands).
"""

from __future__ import annotations

import re

import numpy as np

from agents.answer import NOTHING_FOUND, ExtractiveAnswer
from agents.guard import is_instruction
from agents.prompts import NumberedPassage
from config.backends import embedders
from retrieval.keyword import tokenize

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
MAX_SENTENCES = 3
MIN_SIMILARITY = 0.35
RELATIVE_CUTOFF = 0.8


def extractive_answer(question: str, numbered: list[NumberedPassage]) -> ExtractiveAnswer:
    candidates: list[tuple[int, int, str]] = []  # (passage number, order, sentence)
    for item in numbered:
        for order, sentence in enumerate(_SENTENCES.split(item.passage.text)):
            sentence = sentence.strip().lstrip("#").strip()
            if len(sentence) < 12 or is_instruction(sentence):
                continue
            candidates.append((item.number, order, sentence))
    if not candidates:
        return ExtractiveAnswer(NOTHING_FOUND, [])
    embedder = embedders["default"]
    vectors = embedder.embed_documents([question] + [c[2] for c in candidates])
    similarity = vectors[1:] @ vectors[0]
    question_terms = set(tokenize(question))
    overlap = np.array(
        [len(question_terms & set(tokenize(c[2]))) / max(len(question_terms), 1) for c in candidates]
    )
    scores = similarity + 0.3 * overlap
    # A sentence must be relevant on its own and close to the best one: a weaker sentence that merely
    # shares a word ("kettle") with the question would dilute the answer and its sources.
    cutoff = RELATIVE_CUTOFF * float(scores.max())
    best = [
        i
        for i in np.argsort(-scores)[:MAX_SENTENCES]
        if (similarity[i] >= MIN_SIMILARITY or overlap[i] >= 0.5) and scores[i] >= cutoff
    ]
    if not best:
        return ExtractiveAnswer(NOTHING_FOUND, [])
    # Read in source order, so sentences of one passage keep their sequence.
    chosen = sorted(best, key=lambda i: (candidates[i][0], candidates[i][1]))
    parts = []
    for i in chosen:
        number, _order, sentence = candidates[i]
        ending = "" if sentence[-1] in ".!?" else "."
        parts.append(f"{sentence}{ending} [{number}]")
    return ExtractiveAnswer(" ".join(parts), sorted({candidates[i][0] for i in chosen}))
