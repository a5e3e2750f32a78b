"""Choosing what the built-in answerer says: the units of the retrieved passages that answer the question,
completed by the neighbours that finish their fact, in page order, each group cited by its passage.

Every candidate (a sentence, list item, table row or code line of a passage that is close enough to the
best passage) is scored by embedding similarity to the question, one batched call to the configured
embedder, plus the share of the question's terms it contains, each term weighed by its idf in the
workspace's own keyword index: in a ferry company's pages "ferry" and "leave" are everywhere and say
little, while "Sundays" picks the one sentence that answers. A candidate whose fact is of the kind the
question asks for (a time for "when", a number with its unit for "how many": expects.py) gets a bonus.
Units scoring near the best one are kept;
a unit on its own may not carry its fact, so completion adds the neighbours that belong to it:
  - the term of a definition list item ("SESSION_COOKIE_NAME" above "The name of the session cookie."),
  - a trailer that states the value ("Default: 'session'", "Defaults to 4093."),
  - the list, code or rows a lead-in announces ("... the following values:"),
  - the header row of a table row, and the sentence a "This"/"It" sentence refers to,
  - the description after a label (a setting's or option's name on its own line),
  - and the sentence after a chosen one in its paragraph, which often says what the first one introduced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from agents.answer.expects import expected_kinds, states
from agents.guard import is_instruction
from agents.prompts import NumberedPassage
from config.backends import embedders
from ingestion.text.segment import CODE, HEADING, ITEM, PROSE, ROW, Unit, segment
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

_TRAILER = re.compile(
    r"^(?:defaults?(?:\s+(?:to|value|is))?|default value|type|values?|units?|range|required|optional)\b",
    re.IGNORECASE,
)
_ANAPHOR = re.compile(r"^(?:this|it|its|they|these|that|those|such|there|here|he|she|both|either)\b", re.I)
# The next sentence carries on from this one ("To counter this attack, ...", "In this situation, ...",
# "If so, ...", "Otherwise, ..."): it finishes what this one began.
_CARRIES_ON = re.compile(
    r"^(?:(?:to|in order to)\s+\w+\s+(?:this|that|these|those|it|them|the)\b"
    r"|in (?:this|that|such|either|both|which) (?:case|situation|event|instance|scenario)s?\b"
    r"|if so\b|if not\b|otherwise\b|then\b|in that\b)",
    re.I,
)
# A sentence about code shown just before it ("The code above ...", "This example ...").
_POINTS_BACK = re.compile(r"\b(?:above|previous example|this (?:code|example|snippet))\b", re.I)
_SENTENCE_END = re.compile(r"[.!?…:][\"'\u2019\u201d)\]]*$")
LEAD_IN_UNITS = 8
FAQ_ANSWER_CHARS = 500
LABEL_WORDS = 6  # a unit this short without a sentence's end names a thing rather than says something
DESCRIPTION_CHARS = 300
LEAD_IN_CHARS = 600


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
            context = _in_context(units, index)
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
        picked.setdefault(candidate.number, set()).update([*indexes, *_next_sentence(units, max(indexes))])
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


def complete(units: list[Unit], index: int) -> list[int]:
    """The unit at `index` and the neighbours that complete its fact."""
    unit = units[index]
    chosen = [index]
    term = _term_index(units, index)
    if term is not None:
        chosen.append(term)
    if _ANAPHOR.match(unit.text) and index > 0 and units[index - 1].block == unit.block:
        chosen.append(index - 1)
    if _POINTS_BACK.search(unit.text):
        chosen.extend(_code_before(units, index))
    following = units[index + 1] if index + 1 < len(units) else None
    if following is not None and following.kind != HEADING:
        if unit.text.rstrip().endswith("?"):
            chosen.append(index + 1)  # a question in the page: its answer follows
        elif following.block == unit.block and _CARRIES_ON.match(following.text):
            chosen.append(index + 1)
    if unit.kind == CODE:
        chosen.extend(_code_run(units, index))
    if unit.kind == ROW:
        chosen.extend(_table_header(units, index))
    if unit.text.rstrip().endswith(":"):
        chosen.extend(_announced(units, index))
    trailer = _trailer(units, index)
    if trailer is not None:
        chosen.append(trailer)
    if unit.heading.rstrip().endswith("?"):
        chosen.extend(_faq_answer(units, index))
    if _is_label(unit):
        chosen.extend(_described(units, index))
    return sorted(set(chosen))


def _is_label(unit: Unit) -> bool:
    """A name or title on its own ("autodoc_member_order", "sphinx-apidoc", "--tocfile"): it names what the
    question is about, and what it says about it follows."""
    text = unit.text.strip()
    return unit.kind in (PROSE, ITEM) and len(text.split()) <= LABEL_WORDS and not _SENTENCE_END.search(text)


def _described(units: list[Unit], index: int) -> list[int]:
    """The units after a label, in its section and before the next label, until a sentence ends past half
    of DESCRIPTION_CHARS."""
    taken: list[int] = []
    used = 0
    for later in range(index + 1, len(units)):
        candidate = units[later]
        if candidate.kind == HEADING or candidate.heading != units[index].heading or _is_label(candidate):
            break  # the section ends, or the next name starts its own description
        if taken and used + len(candidate.text) > DESCRIPTION_CHARS:
            break
        taken.append(later)
        used += len(candidate.text)
        if used >= DESCRIPTION_CHARS // 2 and _SENTENCE_END.search(candidate.text):
            break
    return taken


def _next_sentence(units: list[Unit], index: int) -> list[int]:
    """The sentence after a chosen fact, in its paragraph: a sentence that matches the question often
    names the topic, and the one after it says the thing asked ("... may be set to change the largest
    request. The default is 10 megabytes.")."""
    following = index + 1
    if (
        following < len(units)
        and units[following].kind == PROSE
        and units[following].block == units[index].block
    ):
        return [following]
    return []


def _faq_answer(units: list[Unit], index: int) -> list[int]:
    """Under a heading that asks a question (an FAQ's entry), the entry's answer from its start, as
    far as FAQ_ANSWER_CHARS: its point is often in the sentence after the one that matched ("No! As
    of 2.28.0 ... no longer supports Python 2.7. Users who ... should pin to requests<2.28.")."""
    heading = units[index].heading
    first = index
    while first > 0 and units[first - 1].heading == heading and units[first - 1].kind != HEADING:
        first -= 1
    taken: list[int] = []
    used = 0
    for later in range(first, len(units)):
        if units[later].heading != heading or units[later].kind == HEADING:
            break
        used += len(units[later].text)
        if used > FAQ_ANSWER_CHARS:
            break  # a long entry: the chosen unit stands on its own, as elsewhere
        taken.append(later)
    return taken if index in taken else []


def _in_context(units: list[Unit], index: int) -> str:
    """What is embedded and matched for a unit: its section heading, its definition term, and for a
    sentence that points back ("It should be 16 x 16 pixels") the sentence it points to."""
    unit = units[index]
    parts = [unit.heading] if unit.heading else []
    if unit.kind == ROW:
        parts.extend(units[i].text for i in _table_header(units, index, with_lead_in=True))
    term = _term_index(units, index)
    if term is not None:
        parts.append(units[term].text)
    if _ANAPHOR.match(unit.text) and index > 0 and units[index - 1].block == unit.block:
        parts.append(units[index - 1].text)
    return ": ".join([*parts, unit.text]) if parts else unit.text


def _code_before(units: list[Unit], index: int) -> list[int]:
    taken: list[int] = []
    for earlier in range(index - 1, max(-1, index - 1 - LEAD_IN_UNITS), -1):
        if units[earlier].kind != CODE:
            break
        taken.insert(0, earlier)
    return taken


def _term_index(units: list[Unit], index: int) -> int | None:
    """The definition term of a list item's description: a short unpunctuated item just before its block."""
    unit = units[index]
    if unit.kind != ITEM:
        return None
    first = index
    while first > 0 and units[first - 1].block == unit.block:
        first -= 1
    if first == 0:
        return None
    term = units[first - 1]
    is_short = term.kind == ITEM and len(term.text) <= 60 and len(term.text.split()) <= 6
    # A term is a one-unit item of its own, without sentence punctuation.
    alone = first < 2 or units[first - 2].block != term.block
    return first - 1 if is_short and alone and not _SENTENCE_END.search(term.text) else None


def _trailer(units: list[Unit], index: int) -> int | None:
    """A short value line ("Default: None") after the unit, before the next item or heading."""
    block = units[index].block
    for later in range(index + 1, min(len(units), index + 8)):
        candidate = units[later]
        if candidate.kind in (HEADING, ROW) or (candidate.kind == ITEM and candidate.block != block):
            return None
        if len(candidate.text) <= 100 and _TRAILER.match(candidate.text):
            return later
    return None


def _announced(units: list[Unit], index: int) -> list[int]:
    """The items, code lines or rows that follow a lead-in ending with a colon."""
    taken: list[int] = []
    used = 0
    for later in range(index + 1, len(units)):
        candidate = units[later]
        if candidate.kind in (HEADING, PROSE) or len(taken) >= LEAD_IN_UNITS:
            break
        used += len(candidate.text)
        if used > LEAD_IN_CHARS and taken:
            break
        taken.append(later)
    return taken


def _table_header(units: list[Unit], index: int, *, with_lead_in: bool = False) -> list[int]:
    """The table's first row (its header) and, if asked, the sentence introducing the table."""
    first = index
    while first > 0 and units[first - 1].kind == ROW:
        first -= 1
    header = [first] if first != index else []
    if with_lead_in and first > 0 and units[first - 1].kind in (PROSE, ITEM):
        return [first - 1, *header]
    return header


def _code_run(units: list[Unit], index: int) -> list[int]:
    """The code lines around a chosen one: a single line of a snippet rarely stands alone."""
    first = index
    while first > 0 and units[first - 1].kind == CODE and index - first < LEAD_IN_UNITS:
        first -= 1
    last = index
    while last + 1 < len(units) and units[last + 1].kind == CODE and last - first < LEAD_IN_UNITS:
        last += 1
    return list(range(first, last + 1))


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
    return unit.kind == ITEM and len(unit.text) <= 60 and not _SENTENCE_END.search(unit.text)


def _as_sentence(unit: Unit) -> str:
    text = unit.text.strip()
    if unit.kind == CODE:
        return f"`{text}`"
    if unit.kind == ROW:
        cells = [cell.strip() for cell in text.strip("|").split("|")]
        text = " | ".join(cell for cell in cells if cell)
    return text if _SENTENCE_END.search(text) else f"{text}."
