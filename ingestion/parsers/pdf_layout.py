"""Reading order for PDF pages: columns one after the other, tables as blocks, running headers dropped.

A page arrives as positioned words (from pdfplumber) plus table blocks. A recursive XY-cut orders them:
a region splits at the widest vertical gutter that runs its full height and leaves two real columns,
otherwise at its widest horizontal gap, otherwise between the full-width lines and the lines below (or
above) them that stand in two columns (text going on beside a picture); the leaves are read line by line.
Lines that repeat at the top or bottom of most pages (running headers, footers, page numbers) are found
across the whole document.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

# A gutter narrower than this (in points) is a wide word space, not a column break; nor is one narrower
# than one and a half of the region's usual word space.
MIN_GUTTER = 6.0
WORD_GAPS_PER_GUTTER = 1.5
# A narrower gutter still parts two columns when no line crosses it: a caption set in smaller type beside
# the body text (a scanned book's picture), its lines falling between the body's. Across a word space, the
# two sides are one line and share its top and bottom.
NARROW_GUTTER = 2.0
ALIGNED = 1.0  # points between the tops (and the bottoms) of two pieces of one line
# A column is at least this share of the page width: narrower strips are table cells or line numbers.
MIN_COLUMN_SHARE = 0.14
MIN_COLUMN_LINES = 3
# The top and bottom bands of a page, where running headers and footers live.
MARGIN_BAND = 0.1
_PAGE_NUMBER = re.compile(r"^\W*(page\s*)?\d{1,5}(\s*(of|/)\s*\d{1,5})?\W*$", re.I)
_HYPHENATED = re.compile(r"[a-z]-$")


@dataclass
class Box:
    x0: float
    top: float
    x1: float
    bottom: float
    text: str
    # A table block is placed as one unit and printed as it is.
    block: bool = False
    children: list[Box] = field(default_factory=list)

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True)
class Rule:
    """A drawn vertical line: between two columns it settles where one ends and the next begins."""

    x: float
    top: float
    bottom: float


def words_to_boxes(words: list[dict]) -> list[Box]:
    """Upright words as boxes. Rotated words outside the body of upright text are margin stamps (print
    dates, job numbers) and are dropped; rotated words inside it (turned table headers) are kept."""
    upright = [w for w in words if w["text"].strip() and w.get("upright", True)]
    boxes = [Box(w["x0"], w["top"], w["x1"], w["bottom"], w["text"]) for w in upright]
    if not boxes:
        return boxes
    left, right = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    for w in words:
        if w["text"].strip() and not w.get("upright", True) and w["x0"] >= left and w["x1"] <= right:
            boxes.append(Box(w["x0"], w["top"], w["x1"], w["bottom"], w["text"]))
    return boxes


def group_lines(boxes: list[Box]) -> list[list[Box]]:
    """Words on one baseline, left to right."""
    lines: list[list[Box]] = []
    spans: list[tuple[float, float]] = []
    for box in sorted(boxes, key=lambda b: (b.top, b.x0)):
        for i in range(len(lines) - 1, max(-1, len(lines) - 4), -1):
            top, bottom = spans[i]
            overlap = min(bottom, box.bottom) - max(top, box.top)
            # Half the smaller height in common: superscripts join their line, the next line does not.
            joins = overlap > 0 and overlap >= 0.5 * min(bottom - top, box.height)
            if joins and not box.block and not lines[i][0].block:
                lines[i].append(box)
                spans[i] = (min(top, box.top), max(bottom, box.bottom))
                break
        else:
            lines.append([box])
            spans.append((box.top, box.bottom))
    for line in lines:
        line.sort(key=lambda b: b.x0)
    return lines


def line_key(text: str) -> str:
    """Running headers differ only in their page numbers (left on even pages, right on odd ones) and
    dates: compare them without digits."""
    return " ".join(re.sub(r"\d+", " ", text.lower()).split())


def margin_lines(boxes: list[Box], page_height: float) -> list[tuple[str, list[Box]]]:
    """The first and last two full-width lines of a page, when they sit in the margin bands."""
    lines = group_lines([b for b in boxes if not b.block])
    picked = []
    for line in lines[:2]:
        if line[0].top < page_height * MARGIN_BAND * 1.5:
            picked.append(line)
    for line in lines[-2:]:
        if line[-1].bottom > page_height * (1 - MARGIN_BAND) and line not in picked:
            picked.append(line)
    return [(" ".join(b.text for b in line), line) for line in picked]


def repeated_margin_keys(pages: list[list[tuple[str, list[Box]]]]) -> set[str]:
    """Keys of margin lines found on at least half the pages (and on two at least)."""
    if len(pages) < 2:
        return set()
    counts = Counter(key for page in pages for key in {line_key(text) for text, _ in page})
    needed = max(2, (len(pages) + 1) // 2)
    return {key for key, count in counts.items() if count >= needed}


def strip_margins(
    boxes: list[Box], margins: list[tuple[str, list[Box]]], repeated: set[str], page_count: int
) -> list[Box]:
    drop: set[int] = set()
    for text, line in margins:
        if line_key(text) in repeated or (page_count > 1 and _PAGE_NUMBER.match(text)):
            drop.update(id(box) for box in line)
    return [box for box in boxes if id(box) not in drop]


def _merged_spans(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _ruled(rules: list[Rule], left: float, right: float, top: float, bottom: float) -> bool:
    """A rule inside the gap that runs along most of the region's height."""
    height = bottom - top
    return any(
        left <= rule.x <= right and min(bottom, rule.bottom) - max(top, rule.top) >= 0.5 * height
        for rule in rules
    )


def _table_gutter(left: list[Box], right: list[Box]) -> bool:
    """A gap between the columns of one table, not between two columns of text: most lines on either
    side have a partner on the same baseline across the gap, and one side holds cells (a word or two a
    line: dates, amounts) rather than running text. Reading such a table column by column would tear
    every row (a ledger line: date, description, amount) apart."""
    left_lines, right_lines = group_lines(left), group_lines(right)
    fewer, more = sorted((left_lines, right_lines), key=len)
    spans = [(min(b.top for b in line), max(b.bottom for b in line)) for line in more]
    paired = 0
    for line in fewer:
        top, bottom = min(b.top for b in line), max(b.bottom for b in line)
        if any(min(bottom, b) - max(top, t) > 0.5 * (bottom - top) for t, b in spans):
            paired += 1
    if paired < 0.8 * len(fewer) or len(fewer) < 0.6 * len(more):
        return False
    return any(statistics.median(len(line) for line in side) <= 2 for side in (left_lines, right_lines))


def _min_gutter(boxes: list[Box]) -> float:
    """A gutter is wider than the space between words: in a typewriter font (a court transcript in
    Courier) word spaces are 7 points and line up from line to line, so a fixed minimum would cut
    every line at a word space."""
    gaps = [
        right.x0 - left.x1
        for line in group_lines([b for b in boxes if not b.block])
        for left, right in pairwise(line)
        if right.x0 > left.x1
    ]
    if len(gaps) < 4:
        return MIN_GUTTER
    # The lower quartile: most gaps on a line are word spaces, but a table's rows also hold the wide
    # gaps between its columns.
    word_space = statistics.quantiles(gaps, n=4)[0]
    return max(MIN_GUTTER, WORD_GAPS_PER_GUTTER * word_space)


def _crosses(left: list[Box], right: list[Box]) -> bool:
    """A line runs across the gap: a line on one side has a partner on the other at the same top and
    bottom, so the two are pieces of one line parted by a word space."""
    ends = {(round(b.top), round(b.bottom)) for b in right}
    return any(
        abs(box.top - top) <= ALIGNED and abs(box.bottom - bottom) <= ALIGNED
        for box in left
        for top, bottom in ends
    )


def _vertical_cut(boxes: list[Box], page_width: float, rules: list[Rule]) -> float | None:
    """The widest gutter that leaves real columns on both sides; a gutter with a rule in it wins."""
    spans = _merged_spans([(b.x0, b.x1) for b in boxes])
    top, bottom = min(b.top for b in boxes), max(b.bottom for b in boxes)
    best: tuple[bool, float, float] | None = None
    min_width = max(page_width * MIN_COLUMN_SHARE, 40.0)
    min_gutter = None
    for (_, left_end), (right_start, _) in pairwise(spans):
        gap = right_start - left_end
        if gap < NARROW_GUTTER:
            continue
        if min_gutter is None:
            min_gutter = _min_gutter(boxes)
        narrow = gap < min_gutter
        cut = (left_end + right_start) / 2
        left = [b for b in boxes if b.x1 <= cut]
        right = [b for b in boxes if b.x0 >= cut]
        if (
            min(b.x0 for b in left) + min_width > left_end
            or max(b.x1 for b in right) - min_width < right_start
            or len(group_lines(left)) < MIN_COLUMN_LINES
            or len(group_lines(right)) < MIN_COLUMN_LINES
        ):
            continue
        ruled = _ruled(rules, left_end, right_start, top, bottom)
        if narrow and not ruled and _crosses(left, right):
            continue
        if not ruled and _table_gutter(left, right):
            continue
        candidate = (ruled, gap, cut)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    return best[2] if best else None


def _horizontal_cut(boxes: list[Box]) -> float | None:
    spans = _merged_spans([(b.top, b.bottom) for b in boxes])
    heights = [b.height for b in boxes if not b.block] or [10.0]
    threshold = 0.5 * statistics.median(heights)
    best: tuple[float, float] | None = None
    for (_, upper_end), (lower_start, _) in pairwise(spans):
        gap = lower_start - upper_end
        if gap >= threshold and (best is None or gap > best[0]):
            best = (gap, (upper_end + lower_start) / 2)
    return best[1] if best else None


def xy_cut(boxes: list[Box], page_width: float, rules: list[Rule], depth: int = 0) -> list[list[Box]]:
    """Regions in reading order; each is read line by line."""
    if len(boxes) < 2 or depth > 40:
        return [boxes]
    cut = _vertical_cut(boxes, page_width, rules)
    if cut is not None:
        left = [b for b in boxes if b.x1 <= cut]
        right = [b for b in boxes if b.x0 >= cut]
        return xy_cut(left, page_width, rules, depth + 1) + xy_cut(right, page_width, rules, depth + 1)
    cut = _horizontal_cut(boxes)
    if cut is not None:
        upper = [b for b in boxes if b.bottom <= cut]
        lower = [b for b in boxes if b.top >= cut]
        return xy_cut(upper, page_width, rules, depth + 1) + xy_cut(lower, page_width, rules, depth + 1)
    parts = _partial_columns(boxes, page_width, rules)
    if parts is not None:
        return [region for part in parts for region in xy_cut(part, page_width, rules, depth + 1)]
    return [boxes]


def _partial_columns(boxes: list[Box], page_width: float, rules: list[Rule]) -> tuple[list[Box], ...] | None:
    """Text that runs the full width and then goes on beside a picture, with no blank line between: no
    gutter runs the region's full height and no gap crosses its width, yet below some line (or above it)
    the text stands in two columns. Without this, each line of the picture's caption is read into the
    body line beside it. Returns (upper, lower), split at the line nearest the full-width text where the
    columns begin (or end), or None."""
    min_width = max(page_width * MIN_COLUMN_SHARE, 40.0)
    for from_bottom in (True, False):
        # Boxes in the order the part below (or above) an edge takes them in: part = ordered[:n].
        ordered = sorted(boxes, key=lambda b: -b.top if from_bottom else b.bottom)
        found = 0
        for n in range(2 * MIN_COLUMN_LINES, len(ordered)):
            edge = ordered[n - 1].top if from_bottom else ordered[n - 1].bottom
            following = ordered[n].top if from_bottom else ordered[n].bottom
            if following == edge:
                continue  # the edge runs between lines: every box at it is in the part
            part, rest = ordered[:n], ordered[n:]
            # The split runs between lines, never through one: a box left out reaches across the edge
            # by less than half its height.
            if any((b.bottom - edge if from_bottom else edge - b.top) >= 0.5 * b.height for b in rest):
                continue
            spans = _merged_spans([(b.x0, b.x1) for b in part])
            left, right = spans[0][0], spans[-1][1]
            if not any(
                start - end >= NARROW_GUTTER and end - left >= min_width and right - start >= min_width
                for (_, end), (start, _) in pairwise(spans)
            ):
                continue
            if _vertical_cut(part, page_width, rules) is not None:
                found = n
        if found:
            part, rest = ordered[:found], ordered[found:]
            return (rest, part) if from_bottom else (part, rest)
    return None


def _join_lines(lines: list[str]) -> str:
    """Lines of one paragraph; a word hyphenated across a line break is put back together."""
    text = ""
    for line in lines:
        if text and _HYPHENATED.search(text) and line[:1].islower():
            text = text[:-1] + line
        elif text:
            text += "\n" + line
        else:
            text = line
    return text


def region_text(boxes: list[Box]) -> str:
    paragraphs: list[list[str]] = []
    lines = group_lines(boxes)
    heights = [b.height for line in lines for b in line if not b.block] or [10.0]
    typical = statistics.median(heights)
    previous_bottom: float | None = None
    for line in lines:
        top = min(b.top for b in line)
        if line[0].block:
            paragraphs.append([line[0].text])
            paragraphs.append([])
            previous_bottom = None
            continue
        # A gap of most of a line's height between two lines marks a new paragraph.
        if not paragraphs or previous_bottom is None or top - previous_bottom > 0.7 * typical:
            paragraphs.append([])
        paragraphs[-1].append(" ".join(b.text for b in line))
        previous_bottom = max(b.bottom for b in line)
    return "\n\n".join(_join_lines(p) for p in paragraphs if p)


def page_text(boxes: list[Box], page_width: float, rules: list[Rule] | None = None) -> str:
    regions = xy_cut(boxes, page_width, rules or [])
    return "\n\n".join(text for text in (region_text(region) for region in regions) if text.strip())
