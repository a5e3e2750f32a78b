"""Choosing what the built-in answerer says: the units of the retrieved passages that answer the question,
completed by the neighbours that finish their fact, in page order, each group cited by its passage.

Every candidate (a sentence, list item, table row or code line of a passage that is close enough to the
best passage) is scored by embedding similarity to the question, one batched call to the configured
embedder, plus the share of the question's terms it contains, each term weighed by its idf in the
workspace's own keyword index: in a ferry company's pages "ferry" and "leave" are everywhere and say
little, while "Sundays" picks the one sentence that answers. A candidate whose fact is of the kind the
question asks for (a time for "when", a number with its unit for "how many": expects.py) gets a bonus.
Units scoring near the best one are kept;
a unit on its own may not carry its fact, so completion (complete.py) adds the neighbours that belong to
it, and each chosen unit brings the sentence after it in its paragraph, which often says what the first
one introduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.answer.complete import SENTENCE_END, complete, in_context, next_sentence
from agents.answer.expects import expected_kinds, states
from agents.guard import is_instruction
from agents.prompts import NumberedPassage
from config.backends import embedders
from ingestion.text.segment import CODE, HEADING, ITEM, ROW, Unit, segment
from retrieval.keyword import tokenize, workspace_idf
from sources.tenancy import TenancyError

MAX_UNITS = 4  # units chosen on their own merit; completion may add a few more
MAX_ANSWER_CHARS = 900
MIN_SIMILARITY = 0.35  # a unit must be relevant on its own ...
MIN_OVERLAP = 0.5  # ... or carry half of the question's terms
RELATIVE_CUTOFF = 0.8  # further units must score close to the best one
PASSAGE_CUTOFF = 0.5  # passages scoring below this share of the best passage are not used
OVERLAP_WEIGHT = 0.4
PASSAGE_WEIGHT = 0.1
KIND_WEIGHT = 0.2  # a candidate stating the kind of fact the question asks for
MIN_UNIT_CHARS = 8
REDUNDANCY_WEIGHT = 0.2


@dataclass(frozen=True)
class Candidate:
    number: int  # the passage's citation number
    index: int  # the unit's position among its passage's units
    unit: Unit
    context: str  # the unit with its definition term, as embedded and matched


@dataclass(frozen=True)
class Selection:
    """The chosen units of one passage (indexes into its units, in page order)."""

    number: int
    units: list[Unit]
    indexes: list[int]


def usable_passages(numbered: list[NumberedPassage]) -> list[NumberedPassage]:
    """Passages close enough to the best one: a much weaker passage only adds noise and wrong sources."""
    if not numbered:
        return []
    best = max(item.passage.score for item in numbered)
    if best <= 0:
        return list(numbered)
    return [item for item in numbered if item.passage.score >= PASSAGE_CUTOFF * best]


def choose(question: str, numbered: list[NumberedPassage]) -> list[Selection]:
    """The passages' units that answer `question`, grouped by passage; empty when nothing does."""
    passages = usable_passages(numbered)
    units_by_number = {item.number: segment(item.passage.text) for item in passages}
    candidates = []
    # Passages overlap, so one sentence may come twice: each copy under its own heading is scored (the
    # one whose section matches the question wins), a copy in the same context only once.
    seen: set[str] = set()
    for item in passages:
        units = units_by_number[item.number]
        for index, unit in enumerate(units):
            if unit.kind == HEADING or len(unit.text) < MIN_UNIT_CHARS:
                continue
            context = in_context(units, index)
            if _key(context) in seen:
                continue
            seen.add(_key(context))
            if not is_instruction(unit.text):
                candidates.append(Candidate(item.number, index, unit, context))
    if not candidates:
        return []
    vectors = embedders["default"].embed_documents([question] + [c.context for c in candidates])
    similarity = vectors[1:] @ vectors[0]
    overlap = _weighted_overlap(question, candidates)
    best_passage = max(item.passage.score for item in passages) or 1.0
    passage_share = {item.number: item.passage.score / best_passage for item in passages}
    scores = (
        similarity
        + OVERLAP_WEIGHT * overlap
        + PASSAGE_WEIGHT * np.array([passage_share[c.number] for c in candidates])
        + KIND_WEIGHT * _kind_fit(question, candidates, units_by_number)
    )
    cutoff = RELATIVE_CUTOFF * float(scores.max())
    eligible = []
    taken: set[str] = set()  # a sentence is said once, from its best-scoring copy
    for i in np.argsort(-scores):
        relevant = similarity[i] >= MIN_SIMILARITY or overlap[i] >= MIN_OVERLAP
        text = _key(candidates[i].unit.text)
        if relevant and scores[i] >= cutoff and text not in taken:
            taken.add(text)
            eligible.append(int(i))
    chosen = _diverse(eligible, scores, vectors[1:])
    picked: dict[int, set[int]] = {}
    for i in chosen:
        candidate = candidates[i]
        units = units_by_number[candidate.number]
        indexes = complete(units, candidate.index)
        picked.setdefault(candidate.number, set()).update([*indexes, *next_sentence(units, max(indexes))])
    selections = []
    for item in passages:  # best passage first; within one, page order
        if item.number in picked:
            indexes = _within_budget(units_by_number[item.number], sorted(picked[item.number]))
            units = [units_by_number[item.number][i] for i in indexes]
            selections.append(Selection(item.number, units, indexes))
    return selections


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _weighted_overlap(question: str, candidates: list[Candidate]) -> np.ndarray:
    """Each candidate's share of the question's terms, weighed by how specific each term is."""
    question_terms = set(tokenize(question))
    weights = _specificity(question_terms)
    total = sum(weights.values()) or 1.0
    return np.array(
        [
            sum(weights[t] for t in question_terms & set(tokenize(f"{c.unit.heading} {c.context}"))) / total
            for c in candidates
        ]
    )


def _specificity(terms: set[str]) -> dict[str, float]:
    """Each term's BM25 idf in the workspace being asked, and only that one: another tenant's pages
    must not shape this one's answers, nor reveal what they contain. Equal weights when it has no
    keyword statistics, or outside a workspace (the selection used on its own)."""
    try:
        idf = workspace_idf(terms)
    except TenancyError:
        idf = {}
    return {term: idf.get(term, 1.0) for term in terms}


def _kind_fit(
    question: str, candidates: list[Candidate], units_by_number: dict[int, list[Unit]]
) -> np.ndarray:
    """The share of the kinds of fact the question asks for that each candidate states, counting the
    neighbours that complete it (a setting's description is answered by its "Default: ..." line)."""
    kinds = expected_kinds(question)
    if not kinds:
        return np.zeros(len(candidates))
    fit = []
    for c in candidates:
        units = units_by_number[c.number]
        fact = " ".join(units[i].text for i in complete(units, c.index))
        fit.append(sum(states(kind, fact, question) for kind in kinds) / len(kinds))
    return np.array(fit)


def _diverse(eligible: list[int], scores: np.ndarray, vectors: np.ndarray) -> list[int]:
    """Up to MAX_UNITS of the eligible units, each time the best one after a penalty for resembling one
    already chosen (maximal marginal relevance): four wordings of one sentence tell the reader nothing new."""
    chosen: list[int] = []
    remaining = list(eligible)
    while remaining and len(chosen) < MAX_UNITS:
        if chosen:
            resemblance = (vectors[remaining] @ vectors[chosen].T).max(axis=1)
            adjusted = scores[remaining] - REDUNDANCY_WEIGHT * resemblance
        else:
            adjusted = scores[remaining]
        best = remaining[int(np.argmax(adjusted))]
        chosen.append(best)
        remaining.remove(best)
    return chosen


def _within_budget(units: list[Unit], indexes: list[int]) -> list[int]:
    kept: list[int] = []
    used = 0
    for i in indexes:
        if kept and used + len(units[i].text) > MAX_ANSWER_CHARS:
            break
        kept.append(i)
        used += len(units[i].text)
    return kept


def render(selections: list[Selection], title_by_number: dict[int, str]) -> str:
    """The answer text: each passage's units in page order, a heading when it adds context, a citation."""
    parts = []
    for selection in selections:
        pieces = []
        for position, (index, unit) in enumerate(zip(selection.indexes, selection.units, strict=True)):
            following = selection.indexes[position + 1] if position + 1 < len(selection.indexes) else None
            if _is_term(unit) and following == index + 1:
                pieces.append(f"{unit.text}:")  # "SESSION_COOKIE_NAME: The name of the session cookie."
            else:
                pieces.append(_as_sentence(unit))
        body = " ".join(pieces)
        heading = selection.units[0].heading
        title = title_by_number.get(selection.number, "")
        if heading and heading != title and not set(tokenize(heading)) & set(tokenize(body)):
            body = f"{heading}: {body}"
        parts.append(f"{body} [{selection.number}]")
    return " ".join(parts)


def _is_term(unit: Unit) -> bool:
    return unit.kind == ITEM and len(unit.text) <= 60 and not SENTENCE_END.search(unit.text)


def _as_sentence(unit: Unit) -> str:
    text = unit.text.strip()
    if unit.kind == CODE:
        return f"`{text}`"
    if unit.kind == ROW:
        cells = [cell.strip() for cell in text.strip("|").split("|")]
        text = " | ".join(cell for cell in cells if cell)
    return text if SENTENCE_END.search(text) else f"{text}."
