"""Completing a chosen unit: the neighbours that belong to its fact, since a unit on its own may not carry it.

- the term of a definition list item ("SESSION_COOKIE_NAME" above "The name of the session cookie."),
- a trailer that states the value ("Default: 'session'", "Defaults to 4093."),
- the list, code or rows a lead-in announces ("... the following values:"),
- the header row of a table row, and the sentence a "This"/"It" sentence refers to,
- the description after a label (a setting's or option's name on its own line),
- an FAQ entry's answer, and the sentence that carries on from the unit ("In this situation, ...").
"""

from __future__ import annotations

import re

from ingestion.text.segment import CODE, HEADING, ITEM, PROSE, ROW, Unit

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
SENTENCE_END = re.compile(r"[.!?…:][\"'\u2019\u201d)\]]*$")
LEAD_IN_UNITS = 8
FAQ_ANSWER_CHARS = 500
LABEL_WORDS = 6  # a unit this short without a sentence's end names a thing rather than says something
DESCRIPTION_CHARS = 300
LEAD_IN_CHARS = 600


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
    return unit.kind in (PROSE, ITEM) and len(text.split()) <= LABEL_WORDS and not SENTENCE_END.search(text)


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
        if used >= DESCRIPTION_CHARS // 2 and SENTENCE_END.search(candidate.text):
            break
    return taken


def next_sentence(units: list[Unit], index: int) -> list[int]:
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


def in_context(units: list[Unit], index: int) -> str:
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
    return first - 1 if is_short and alone and not SENTENCE_END.search(term.text) else None


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
