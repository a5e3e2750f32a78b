"""One PDF page read with pypdfium2: positioned words, drawn rules, images, and how trustworthy its text is.

PDFium reads a page's text, every character's box included, far faster than pdfplumber (pdfminer) even
opens the pages (docs/BENCHMARKS.md), so every page goes through here; only pages with drawn table lines
are opened again with pdfplumber, whose table finder is worth its cost there. Words are built the way
pdfplumber's `extract_words` builds them (pdf_words.py), so the reading-order code in `pdf_layout` sees
the same boxes it was tuned on. A page whose text runs up, down or upside down (a landscape page drawn
sideways and shown upright through /Rotate) is read in a frame turned back by the direction most of its
glyphs run, so its lines read like any other page's.
"""

from __future__ import annotations

import ctypes
import math
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ingestion.parsers.pdf_layout import Rule
from ingestion.parsers.pdf_words import SLANTED, UPSIDE_DOWN, words_from_chars

# A stroke thinner than this is a line, not a filled shape.
THIN = 2.0
# Vertical rules shorter than this are cell borders or underlines, not column separators.
MIN_RULE_HEIGHT = 30.0
# A text layer is garbage when at least this share of its visible characters cannot be mapped to Unicode
# (a font without a ToUnicode map) or are private-use, control or unassigned code points, and there are
# a few of them at least: a short page (a title, a label) of such glyphs is garbage too.
GARBAGE_SHARE = 0.3
MIN_GARBLED = 3
# A page whose images cover this much of it and whose text is a few words at most is a scan or a figure.
IMAGE_PAGE_COVER = 0.3


@dataclass
class PageReading:
    words: list[dict]
    rules: list[Rule]
    width: float
    height: float
    horizontals: list[tuple[float, float, float]] = field(default_factory=list)
    verticals: list[tuple[float, float, float]] = field(default_factory=list)
    drawn: bool = False
    image_cover: float = 0.0
    char_count: int = 0
    unmapped: int = 0  # glyphs PDFium could not map to Unicode, or mapped to control or unassigned points
    private_use: int = 0  # glyphs mapped to private-use code points (symbol fonts, broken subsets)
    # Why PDFium's words cannot be used on this page (glyphs it could not read, right-to-left text whose
    # glyph order it reverses), so pdfminer reads it; empty when they can.
    needs_pdfminer: str = ""
    # Quarter turns the page is read turned back by (its text runs up, down or upside down the page);
    # pdfplumber's words and tables would be in the unturned page, so it is not asked about such a page.
    turn: int = 0

    @property
    def may_have_ruled_table(self) -> bool:
        """Drawn lines that close at least one cell (two horizontal lines crossing the same two vertical
        ones): only then can pdfplumber's table finder find a table, so only then is it worth its cost."""
        return self.turn == 0 and ruled_cell(self.horizontals, self.verticals)

    @property
    def garbage_share(self) -> float:
        return (self.unmapped + self.private_use) / self.char_count if self.char_count else 0.0

    @property
    def glyph_problem(self) -> str | None:
        """Why the page's glyphs cannot be trusted as text, or None."""
        if self.unmapped + self.private_use < MIN_GARBLED or self.garbage_share < GARBAGE_SHARE:
            return None
        if self.private_use > self.unmapped:
            return "private-use characters"
        return "glyphs without a Unicode map"


# Past this many pairs of edges a page is a big grid or a drawing; counting crossings would cost more than
# letting pdfplumber look.
MAX_EDGE_PAIRS = 1_000_000


def ruled_cell(
    horizontals: list[tuple[float, float, float]], verticals: list[tuple[float, float, float]]
) -> bool:
    """True when drawn lines close a grid of two rows by two columns, the least a table keeps (a single
    framed box, or a bar under a running header, is not one). horizontals are (x0, x1, y), verticals
    (x, y0, y1), in points, with a point of slack where lines meet."""
    if len(horizontals) < 3 or len(verticals) < 3:
        return False
    if len(horizontals) * len(verticals) > MAX_EDGE_PAIRS:
        return True
    horizontals = _joined(horizontals, horizontal=True)
    verticals = _joined(verticals, horizontal=False)
    crossed = []
    for x0, x1, y in horizontals:
        hits = frozenset(
            i for i, (x, y0, y1) in enumerate(verticals) if x0 - 1 <= x <= x1 + 1 and y0 - 1 <= y <= y1 + 1
        )
        if len(hits) >= 3:
            crossed.append((y, hits))
    for y, hits in crossed:
        rows = {
            round(other_y) for other_y, other in crossed if len(hits & other) >= 3 and abs(other_y - y) >= 4
        }
        if len(rows) >= 2:
            return True
    return False


def _joined(edges: list[tuple[float, float, float]], *, horizontal: bool) -> list[tuple[float, float, float]]:
    """Collinear pieces that touch, as one edge: Word draws a table's lines cell by cell."""
    keyed = sorted((e[2], e[0], e[1]) if horizontal else e for e in edges)
    joined: list[list[float]] = []
    for line, start, end in keyed:
        if joined and abs(line - joined[-1][0]) <= 1 and start <= joined[-1][2] + 3:
            joined[-1][2] = max(joined[-1][2], end)
        else:
            joined.append([line, start, end])
    return [(start, end, line) if horizontal else (line, start, end) for line, start, end in joined]


def _unmapped(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cn", "Cs") or (category == "Cc" and char not in "\t\n\r") or char == "\ufffd"


QUARTER = math.pi / 2
# A glyph whose direction is within this of a quarter turn runs along that quarter.
ANGLE_SLACK = 0.05


def _quarter(pdfium_angle: float) -> int | None:
    """The quarter turn (counterclockwise in PDF space) a glyph runs along, or None for a slanted glyph or
    none reported. PDFium measures a glyph's angle clockwise, so text running up the page reads 3/2 pi."""
    if pdfium_angle < 0:
        return None
    turns = ((2 * math.pi - pdfium_angle) % (2 * math.pi)) / QUARTER
    nearest = round(turns)
    return nearest % 4 if abs(turns - nearest) * QUARTER < ANGLE_SLACK else None


def _direction(pdfium_angle: float) -> int | None:
    """_quarter, or SLANTED for a glyph PDFium gives an angle for that is no quarter turn."""
    quarter = _quarter(pdfium_angle)
    return SLANTED if quarter is None and pdfium_angle >= 0 else quarter


def text_turn(quarters: list[int | None], rotation: int) -> int:
    """The quarter turn most of the page's glyphs run along: the page is read turned back by it, so a
    landscape page drawn sideways (and shown upright through /Rotate) reads line by line like any other.
    The page's /Rotate breaks a tie: a page turned a quarter clockwise is drawn a quarter anticlockwise."""
    counts = Counter(quarter for quarter in quarters if quarter is not None)
    if not counts:
        return 0
    shown = (rotation // 90) % 4
    return max(counts, key=lambda quarter: (counts[quarter], quarter == shown, quarter == 0))


@dataclass(frozen=True)
class Frame:
    """PDF space turned back by `turn` quarters, with the origin at the top left, as the page is read:
    boxes come out as (x0, top, x1, bottom), pdfplumber's convention, which the layout code was tuned on."""

    turn: int
    left: float
    top: float
    width: float
    height: float

    @classmethod
    def of(cls, mediabox: tuple[float, float, float, float], turn: int) -> Frame:
        x0, y0, x1, y1 = _turned(mediabox, turn)
        return cls(turn, x0, y1, x1 - x0, y1 - y0)

    def box(self, rect: tuple[float, float, float, float], min_height: float = 0.0) -> tuple[float, ...]:
        x0, y0, x1, y1 = _turned(rect, self.turn)
        # pdfminer makes a character as tall as its font size; PDFium's loose box (the font's ascent to
        # descent) can be shorter, which would read the leading between lines as paragraph breaks.
        y1 = max(y1, y0 + min_height)
        return (x0 - self.left, self.top - y1, x1 - self.left, self.top - y0)


def _turned(rect: tuple[float, float, float, float], turn: int) -> tuple[float, float, float, float]:
    """A rectangle of PDF space turned clockwise by `turn` quarters."""
    x0, y0, x1, y1 = rect
    if turn == 1:
        x0, y0, x1, y1 = y0, -x1, y1, -x0
    elif turn == 2:
        x0, y0, x1, y1 = -x1, -y1, -x0, -y0
    elif turn == 3:
        x0, y0, x1, y1 = -y1, x0, -y0, x1
    return x0, y0, x1, y1


def _chars(textpage: Any, mediabox: tuple[float, float, float, float], rotation: int) -> tuple:
    """(x0, top, x1, bottom, text, turned) per visible glyph in the page's reading frame (turned: the
    quarter turns anticlockwise it runs at to the frame: 0, or RUNS_UP, RUNS_DOWN), counts of
    visible, unmapped and private-use characters, and the frame.

    Characters PDFium could not map to Unicode are counted and left out. A ligature (one glyph, several
    characters) arrives as characters sharing one box: they stay one glyph, so sorting by position
    cannot scatter them, and an Arabic or Hebrew one is turned back from visual into logical order."""
    import pypdfium2.raw as raw

    glyphs: list[tuple] = []
    visible = unmapped = private_use = 0
    raw_page = textpage.raw
    matrix = raw.FS_MATRIX()
    matrix_ref = ctypes.byref(matrix)
    for index in range(textpage.count_chars()):
        if raw.FPDFText_IsGenerated(raw_page, index):
            continue
        point = raw.FPDFText_GetUnicode(raw_page, index)
        char = chr(point) if 0 <= point < 0x110000 else "\ufffd"
        if raw.FPDFText_IsHyphen(raw_page, index) == 1:
            char = "-"  # PDFium reports a hyphen at a line end as a control character
        rect = textpage.get_charbox(index, loose=True)
        if char.isspace():
            # A space keeps its direction: it ends a word in a turned column as in a line.
            glyphs.append((rect, " ", _direction(raw.FPDFText_GetCharAngle(raw_page, index)), 0.0))
            continue
        visible += 1
        if raw.FPDFText_HasUnicodeMapError(raw_page, index) == 1 or _unmapped(char):
            unmapped += 1
            continue
        if unicodedata.category(char) == "Co":
            private_use += 1
            continue
        quarter = _direction(raw.FPDFText_GetCharAngle(raw_page, index))
        glyphs.append((rect, char, quarter, _font_size(raw, raw_page, index, matrix, matrix_ref)))
    quarters = [None if g[2] == SLANTED else g[2] for g in glyphs if g[1] != " "]
    frame = Frame.of(mediabox, text_turn(quarters, rotation))
    chars: list[tuple] = []
    for rect, char, quarter, size in glyphs:
        turned = SLANTED if quarter == SLANTED else 0 if quarter is None else (quarter - frame.turn) % 4
        # A turned glyph's font size lies across the page's lines, not down them: no stretch.
        box = frame.box(rect, 0.0 if turned else size)
        if turned == UPSIDE_DOWN:
            # Glyphs upside down to the page as it reads are a stamp or a fold-over label: left out,
            # since grouping them into lines or columns would only spell them backwards.
            continue
        if char != " " and chars and chars[-1][4] != " " and chars[-1][:4] == box:
            chars[-1] = (*box, chars[-1][4] + char, chars[-1][5])
        else:
            chars.append((*box, char, turned))
    chars = [(*c[:4], _logical(c[4]), c[5]) if len(c[4]) > 1 else c for c in chars]
    return chars, (visible, unmapped, private_use), frame


def _font_size(raw: Any, raw_page: Any, index: int, matrix: Any, matrix_ref: Any) -> float:
    """The glyph's font size as drawn on the page: the size set in the text (Tf) scaled by the text and
    page matrices, as pdfminer gives it. The size alone is wrong both ways: 1 for a text set at 1 and
    scaled up 8 times (Word's output), 8.9 for a UML diagram's labels drawn at half size in a form."""
    size = raw.FPDFText_GetFontSize(raw_page, index)
    if raw.FPDFText_GetMatrix(raw_page, index, matrix_ref):
        size *= math.hypot(matrix.c, matrix.d)
    return size


def _logical(text: str) -> str:
    right_to_left = all(unicodedata.bidirectional(char) in ("R", "AL", "NSM") for char in text)
    return text[::-1] if right_to_left else text


def _page_bounds(obj: Any) -> tuple[float, float, float, float]:
    """An object's box on the page: objects inside a form XObject report it in the form's space."""
    bounds = obj.get_bounds()
    container = obj.container
    while container is not None:
        bounds = container.get_matrix().on_rect(*bounds)
        container = container.container
    return bounds


def _drawings(page: Any, frame: Frame, reading: PageReading) -> None:
    """Rules, edge counts and image cover from the page's path and image objects (in forms too)."""
    import pypdfium2.raw as raw

    area = max(reading.width * reading.height, 1.0)
    image_area = 0.0
    for obj in page.get_objects(filter=(raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_IMAGE)):
        x0, top_y, x1, bottom_y = frame.box(_page_bounds(obj))
        width, tall = x1 - x0, bottom_y - top_y
        reading.drawn = True
        if obj.type == raw.FPDF_PAGEOBJ_IMAGE:
            visible_w = max(0.0, min(x1, reading.width) - max(x0, 0.0))
            visible_h = max(0.0, min(bottom_y, reading.height) - max(top_y, 0.0))
            image_area += visible_w * visible_h
            continue
        if tall <= THIN and width > THIN:
            reading.horizontals.append((x0, x1, (top_y + bottom_y) / 2))
        elif width <= THIN and tall > THIN:
            reading.verticals.append(((x0 + x1) / 2, top_y, bottom_y))
            if tall > MIN_RULE_HEIGHT:
                reading.rules.append(Rule((x0 + x1) / 2, top_y, bottom_y))
        elif width > THIN and tall > THIN and raw.FPDFPath_CountSegments(obj.raw) <= 6:
            # A rectangle: pdfplumber counts its four sides as edges, and so do we.
            reading.horizontals.extend([(x0, x1, top_y), (x0, x1, bottom_y)])
            reading.verticals.extend([(x0, top_y, bottom_y), (x1, top_y, bottom_y)])
            if tall > MIN_RULE_HEIGHT:
                reading.rules.extend([Rule(x0, top_y, bottom_y), Rule(x1, top_y, bottom_y)])
    reading.image_cover = min(1.0, image_area / area)


def read_page(page: Any) -> PageReading:
    textpage = page.get_textpage()
    try:
        chars, (visible, unmapped, private_use), frame = _chars(
            textpage, page.get_mediabox(), page.get_rotation()
        )
        reading = PageReading(words_from_chars(chars), [], frame.width, frame.height, turn=frame.turn)
        reading.char_count, reading.unmapped, reading.private_use = visible, unmapped, private_use
        if frame.turn:
            pass  # pdfminer's words would be those of the unturned page
        elif any(unicodedata.bidirectional(c[4][0]) in ("R", "AL") for c in chars):
            reading.needs_pdfminer = "right-to-left text"
        elif _lost_glyphs(page, visible):
            reading.needs_pdfminer = "glyphs PDFium could not map"
    finally:
        textpage.close()
    _drawings(page, frame, reading)
    return reading


def _lost_glyphs(page: Any, visible_chars: int) -> bool:
    """True when the page has fewer characters than text objects: every text object draws one glyph at
    least, so PDFium dropped glyphs of a font it cannot map at all (a CJK font that is not embedded,
    say). Measured on the shared PDFs: 0.05 to 0.33 characters per object on such pages, 2 or more on
    every other page."""
    import pypdfium2.raw as raw

    objects = sum(1 for _ in page.get_objects(filter=(raw.FPDF_PAGEOBJ_TEXT,), max_depth=2))
    return objects >= 10 and visible_chars < objects
