"""Words from a PDF page's positioned characters, built the way pdfplumber's `extract_words` builds them:
characters clustered into lines by their top, split at spaces and at gaps wider than X_TOLERANCE, so the
reading-order code in `pdf_layout` sees the boxes it was tuned on. A character is (x0, top, x1, bottom,
text, direction): upright lines run left to right, turned ones (direction 1 or 3) top to bottom, and
slanted glyphs are read in the order they were drawn.
"""

from __future__ import annotations

# How a glyph runs to the page as it reads, in quarter turns anticlockwise.
RUNS_UP, UPSIDE_DOWN, RUNS_DOWN = 1, 2, 3
# pdfplumber's extract_words(x_tolerance=1.5, y_tolerance=3), which the layout code was tuned with.
X_TOLERANCE = 1.5
Y_TOLERANCE = 3.0
# Across a space, the next word of a turned line is at most this far on.
TURNED_WORD_GAP = 10.0
# A glyph set at a slant (a label at 45 degrees): read in the order it was drawn, not grouped by its top,
# which steps with every letter and spelled "R o t a t i o n" one letter a line.
SLANTED = -1


def _cluster_tops(chars: list[tuple]) -> list[list[tuple]]:
    chained: list[list[tuple]] = []
    last_top: float | None = None
    for char in sorted(chars, key=lambda c: c[1]):
        if last_top is None or char[1] - last_top > Y_TOLERANCE:
            chained.append([])
        chained[-1].append(char)
        last_top = char[1]
    lines: list[list[tuple]] = []
    for cluster in chained:
        if cluster[-1][1] - cluster[0][1] <= Y_TOLERANCE:
            lines.append(cluster)
            continue
        # Tops chained further than one line (two lines of small print a few points apart, with other
        # text at tops between them): a character joins the line of the first character it shares half
        # its height with, so the two lines' characters are not sorted into one by x and interleaved.
        anchor: tuple | None = None
        for char in cluster:
            if anchor is None or min(anchor[3], char[3]) - char[1] < 0.5 * min(
                anchor[3] - anchor[1], char[3] - char[1]
            ):
                lines.append([])
                anchor = char
            lines[-1].append(char)
    return lines


def _word(chars: list[tuple], upright: bool) -> dict:
    return {
        "x0": min(c[0] for c in chars),
        "top": min(c[1] for c in chars),
        "x1": max(c[2] for c in chars),
        "bottom": max(c[3] for c in chars),
        "text": "".join(c[4] for c in chars),
        "upright": upright,
    }


def words_from_chars(chars: list[tuple]) -> list[dict]:
    """Upright characters grouped into lines by their top and split at spaces and gaps; turned
    characters (rotated stamps, turned table headers) become one word per column of text, read up the
    page or down it as they run."""
    words = []
    upright = [c for c in chars if c[5] == 0]
    for line in _cluster_tops(upright):
        current: list[tuple] = []
        for char in sorted(line, key=lambda c: c[0]):
            if char[4] == " ":
                if current:
                    words.append(_word(current, True))
                current = []
                continue
            # Lines chained into one cluster by close tops (small print, tight leading) part again here.
            if current and (
                char[0] - current[-1][2] > X_TOLERANCE or abs(char[1] - current[-1][1]) > Y_TOLERANCE
            ):
                words.append(_word(current, True))
                current = []
            current.append(char)
        if current:
            words.append(_word(current, True))
    for direction in (RUNS_UP, RUNS_DOWN):
        up = direction == RUNS_UP
        turned = sorted(
            (c for c in chars if c[5] == direction), key=lambda c: (round(c[0]), -c[3] if up else c[1])
        )
        # A turned line stays one word, spaces and all ("Number of characteristics" up a chart's axis):
        # the layout places each turned word on its own, and would scatter the words of a label.
        column: list[tuple] = []
        spaced = False
        for char in turned:
            if char[4] == " ":
                spaced = bool(column)
                continue
            gap = (column[-1][1] - char[3] if up else char[1] - column[-1][3]) if column else 0.0
            if column and (
                abs(char[0] - column[-1][0]) > Y_TOLERANCE
                or gap > (TURNED_WORD_GAP if spaced else X_TOLERANCE)
            ):
                words.append(_word(column, False))
                column = []
            elif column and spaced:
                column.append((*char[:4], " ", char[5]))
            spaced = False
            column.append(char)
        if column:
            words.append(_word(column, False))
    return words + _slanted_words(chars)


def _slanted_words(chars: list[tuple]) -> list[dict]:
    """Slanted characters in the order they were drawn, a run of them one word, spaces and all (as a
    turned line is): a new word where the run stops or jumps away."""
    words: list[dict] = []
    run: list[tuple] = []
    spaced = False
    for char in chars:
        if char[5] != SLANTED or (run and _apart(run[-1], char)):
            if run:
                words.append(_word(run, False))
            run, spaced = [], False
            if char[5] != SLANTED:
                continue
        if char[4] == " ":
            spaced = bool(run)
            continue
        if run and spaced:
            run.append((*char[:4], " ", SLANTED))
        spaced = False
        run.append(char)
    if run:
        words.append(_word(run, False))
    return words


def _apart(before: tuple, char: tuple) -> bool:
    across = max(char[0] - before[2], before[0] - char[2])
    down = max(char[1] - before[3], before[1] - char[3])
    return max(across, down) > TURNED_WORD_GAP
