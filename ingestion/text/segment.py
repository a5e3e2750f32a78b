"""A passage's text as units the answerer can quote whole: sentences, list items, table rows, code lines.

Extracted pages keep the source's line wrapping ("Returns are accepted within 30\\ndays of purchase."),
so lines are first grouped into blocks by what they are: a list item, a table row, a heading and a code
line each stand alone, while wrapped prose lines are joined back into their paragraph. Only then are
paragraphs (and long list items) split into sentences, by pysbd's rules, which know abbreviations
("e.g."), decimals ("3.5"), initials and quotes; a line break is never a sentence boundary by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pysbd

from ingestion.text import pysbd_abbreviations, pysbd_patterns

PROSE, ITEM, ROW, HEADING, CODE = "prose", "item", "row", "heading", "code"

_ITEM = re.compile(r"^\s*(?:[-*•+\u25aa\u2013]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+\S")
_ITEM_MARK = re.compile(r"^\s*(?:[-*•+\u25aa\u2013]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s+[^\sa-z]")  # "# equivalent to ..." is a code comment
_ROW = re.compile(r"^\s*\|.*\|\s*$|^[^|]+(?:\s\|\s[^|]*){2,}$|^[^\t]+(?:\t[^\t]*){2,}$")
_CODE_START = re.compile(
    r"^(?:\s{4,}|\t|\$ |> |>>> |\.\.\. |#!|#+\s+[a-z]|@\w|"
    r"(?:async\s+)?(?:def|class)\s+\w+.*:\s*$|from\s+[\w.]+\s+import\s|import\s+[\w.]+(?:\s*,\s*[\w.]+)*\s*$|"
    r"return\s*$|return\s+[\w.]+\(|(?:if|elif|for|while|with)\s[^:]{0,60}[=(.\[<>][^:]*:\s*$|(?:try|else|finally):\s*$|"
    r"[{}\[\]()]\s*$|</?\w+[^>]*>\s*$|\w+(?:\.\w+)*\s*(?:\[[^\]]*\])?\s*[-+*/|]?=\s*\S)"
)
_CODE_END = re.compile(r"(?:[({\[,;]|\)|\]|\}|:\s*\w*\))\s*$")
_SENTENCE_END = re.compile(r"[.!?…][\"'\u2019\u201d)\]]*\s*$")
# A wrapped line that stops on one of these words cannot end a sentence or a heading.
_CONNECTIVES = frozenset(
    "a an the and or but nor of to in on at by for with from as than that which who whose this these "
    "those its their your our is are was were be been can could may might must should will would not "
    "if when where while into onto about over under between such".split()
)


@dataclass(frozen=True)
class Unit:
    """One quotable piece of a passage. `block` numbers the paragraph, item, row or line it came from;
    `heading` is the nearest heading above it within the passage ("" when none)."""

    text: str
    kind: str
    block: int
    heading: str


# Chunking may have glued a line to the sentence before it ("... config key. - DEBUG"): a list item or a
# table row starting right after a sentence end starts a line of its own.
_GLUED_LINE = re.compile(r"(?<=[.!?:])[\"'\u2019\u201d)\]]?\s+(?=(?:[-*\u2022]|\d{1,2}[.)])\s+\S|\|\s)")
_LAST_SENTENCE_END = re.compile(r".*[.!?][\"'\u2019\u201d)\]]*\s+")
# pysbd ends a sentence at " .html" or " .env"; a dot that starts a word is protected while it works.
_LEADING_DOT = re.compile(r"(?<![^\s/~])\.(?=\w)")  # ".env", "~/.netrc", "/etc/.config"
_DOT_STANDIN = "\ue000"
# A paragraph with no sentence mark before its last character is one sentence: pysbd gives it back whole
# (the same output for all 4,628 such paragraphs of the Flask docs and 3,000 SciFact abstracts), and pysbd
# costs ~0.5 ms a paragraph.
_MARKS = ".!?\u2026"
_SENTENCE_MARK = re.compile(f"[{re.escape(_MARKS)}]")
_CLOSERS = "\"')]\u2019\u201d"
_QUOTE_THEN_SPACE = re.compile("[\"'\u2019\u201d]\\s")


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    made = pysbd_patterns.segmenter("en")
    # pysbd's English with an abbreviation pass that gives the same output for less work.
    made.language_module = pysbd_abbreviations.FastEnglish
    return made


def line_kind(line: str) -> str:
    stripped = line.strip()
    if _MARKDOWN_HEADING.match(stripped):
        return HEADING
    if _ROW.match(stripped):
        return ROW
    if _ITEM.match(line) and not _looks_like_code(stripped[2:]):
        return ITEM
    if _looks_like_code(line):
        return CODE
    return PROSE


def _looks_like_code(line: str) -> bool:
    if _CODE_START.match(line):
        return True
    stripped = line.strip()
    if not stripped or " " not in stripped:
        # One token: a call or a dotted path is code; a word is prose (or a heading).
        return bool(re.search(r"[()=\[\]{};]|__\w+__", stripped))
    symbols = sum(1 for ch in stripped if ch in "(){}[]=<>;:_'\"/\\$#@`|*")
    if symbols / len(stripped) > 0.18 and _CODE_END.search(stripped):
        return True
    # Program output such as "TCP 127.0.0.1:5000 0.0.0.0:0 LISTENING 6847": mostly numbers and addresses.
    tokens = stripped.split()
    numeric = sum(1 for t in tokens if re.search(r"\d", t) and not t.isalpha())
    return len(tokens) >= 3 and numeric / len(tokens) > 0.5 and not _SENTENCE_END.search(stripped)


def _is_heading_shape(line: str) -> bool:
    """A short title-like line: no sentence punctuation, no code, not ending on a connective."""
    words = line.split()
    if not words or len(words) > 10 or len(line) > 80:
        return False
    if not (line[0].isupper() or line[0].isdigit()) or re.search(r"[.,;:!=(){}\[\]<>\"`]", line.rstrip("?")):
        return False
    return words[-1].lower() not in _CONNECTIVES


def _continues(previous: str, line: str) -> bool:
    """Whether `line` is the wrapped continuation of `previous`, the last line of a prose or item block."""
    first = line.lstrip()[:1]
    if first.islower() or first in "(,;":
        return True
    tail = previous.rstrip()
    if not tail or _SENTENCE_END.search(tail) or tail.endswith(":"):
        return False
    last_word = tail.split()[-1].lower()
    return tail.endswith((",", ";", "-", "—")) or last_word in _CONNECTIVES or len(tail) >= 60


def _lines(text: str) -> list[str]:
    """The text's lines, with glued list items, table rows and headings put back on lines of their own."""
    lines: list[str] = []
    raw = [part for line in text.replace("\r\n", "\n").split("\n") for part in _GLUED_LINE.split(line)]
    for index, line in enumerate(raw):
        following = next((r for r in raw[index + 1 :] if r.strip()), "")
        head = _LAST_SENTENCE_END.match(line)
        head_end = head.end() if head else len(line)  # no sentence end: no tail
        tail = line[head_end:].strip()
        # "... 3rd party tools. Error Logging Tools" followed by a new paragraph: a glued heading.
        if (
            tail
            and line_kind(line) == PROSE
            and _is_heading_shape(tail)
            and _title_case(tail)
            and following.lstrip()[:1].isupper()
        ):
            lines.extend([line[:head_end].rstrip(), tail])
        else:
            lines.append(line.rstrip())
    return lines


def _title_case(text: str) -> bool:
    words = [w for w in text.split() if w.lower() not in _CONNECTIVES]
    return bool(words) and sum(w[0].isupper() or w[0].isdigit() for w in words) >= 0.6 * len(words)


def blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text) blocks in reading order; wrapped prose lines joined, headings recognised."""
    lines = _lines(text)
    result: list[list[str]] = []  # [kind, text]
    open_block = False  # whether the last block may still take continuation lines
    last_line = ""
    for index, line in enumerate(lines):
        if not line.strip():
            open_block = False
            continue
        kind = line_kind(line)
        if kind == PROSE and open_block and _continues(last_line, line):
            result[-1][1] = f"{result[-1][1]} {line.strip()}"
            last_line = line
            continue
        last_line = line
        if kind == PROSE and _is_heading_shape(line.strip()) and _heading_context(lines, index, result):
            kind = HEADING
        text_part = line.strip()
        if kind == HEADING:
            text_part = text_part.lstrip("#").strip()
        result.append([kind, text_part])
        open_block = kind in (PROSE, ITEM)
    return [(kind, body) for kind, body in result]


def _heading_context(lines: list[str], index: int, so_far: list[list[str]]) -> bool:
    """A heading-shaped line is a heading when what precedes it is closed and what follows starts anew."""
    if so_far and so_far[-1][0] in (PROSE, ITEM) and not _closed(so_far[-1][1]):
        return False
    following = next((line for line in lines[index + 1 :] if line.strip()), "")
    if not following:
        return False
    return not following.lstrip()[:1].islower()


def _closed(text: str) -> bool:
    return bool(_SENTENCE_END.search(text)) or text.rstrip().endswith(":") or len(text) < 60


def sentences(text: str) -> list[str]:
    """pysbd's sentences of one paragraph, trimmed; an empty text gives none."""
    text = _LEADING_DOT.sub(_DOT_STANDIN, " ".join(text.split()))
    if not text:
        return []
    if one_sentence(text):
        return [text.replace(_DOT_STANDIN, ".")]
    return [s.strip().replace(_DOT_STANDIN, ".") for s in _segmenter().segment(text) if s.strip()]


def one_sentence(text: str) -> bool:
    """Whether a whitespace-normalised paragraph has no sentence mark but (at most) one at its end."""
    core = text.rstrip(_CLOSERS)
    if core[-1:] in _MARKS:
        core = core[:-1]
    # pysbd may also end a sentence at a closing quote ("'192b9b...' Do not reveal the key."): such a
    # paragraph goes through it.
    return not _SENTENCE_MARK.search(core) and not _QUOTE_THEN_SPACE.search(core)


def segment(text: str) -> list[Unit]:
    """The units of a passage in reading order."""
    units: list[Unit] = []
    heading = ""
    for number, (kind, body) in enumerate(blocks(text)):
        if kind == HEADING:
            heading = body
            units.append(Unit(body, HEADING, number, heading))
        elif kind in (ROW, CODE):
            units.append(Unit(body, kind, number, heading))
        else:
            if kind == ITEM:
                body = _ITEM_MARK.sub("", body, count=1)
            units.extend(Unit(s, kind, number, heading) for s in sentences(body))
    return units
