"""Reading order on positioned words (ingestion.parsers.pdf_layout), on pages drawn here box by box."""

from __future__ import annotations

from ingestion.parsers.pdf_layout import Box, page_text

PAGE_WIDTH = 432.0


def line(text: str, x0: float, top: float, height: float, *, space: float = 4.0, size: float = 5.0) -> list:
    """One line of words, each `size` points wide a character, `space` apart."""
    boxes = []
    for word in text.split():
        x1 = x0 + size * len(word)
        boxes.append(Box(x0, top, x1, top + height, word))
        x0 = x1 + space
    return boxes


BODY = [
    "There is a flag waving",
    "from it defiantly and",
    "a proud day it will be",
    "when we haul it down",
    "and raise in its stead",
    "the stars and stripes",
    "never to be displaced",
    "again by any hand",
]
CAPTION = [
    "Cannister shot is a tin",
    "cylinder with iron heads",
    "filled with balls packed",
    "with saw dust inside",
    "and turned down over",
]


def test_a_caption_beside_a_picture_is_read_apart_from_the_body_text_it_has_no_gap_to() -> None:
    """Class (#52, the "Vicksburg" scan): text runs the full width, then goes on to the right of a picture
    with no blank line between; the picture's caption, in smaller type whose lines overlap and fall
    between the body's, stands 4 points from the body, less than a word space. Read as one region, each
    caption line was read into the body line beside it ("Cannister iron heads, shot filled is a tin")."""
    boxes = line("I have a great curiosity to see the court house at Vicksburg today", 60, 60, 12.4)
    boxes += line("It stands on a hill and seems to be the target for many cannon", 60, 72.6, 12.4)
    for n, words in enumerate(BODY):
        boxes += line(words, 206, 85.2 + 12.6 * n, 12.4, size=6.0)
    for n, words in enumerate(CAPTION):
        caption = line(words, 60, 120.1 + 6.5 * n, 9.0, size=4.0)
        # The caption's lines end flush 4 points short of the body's left edge.
        shift = 202 - caption[-1].x1
        boxes += [Box(b.x0 + shift, b.top, b.x1 + shift, b.bottom, b.text) for b in caption]
    text = page_text(boxes, PAGE_WIDTH)
    assert "I have a great curiosity to see the court house at Vicksburg today\nIt stands on a hill" in text
    assert "\n".join(CAPTION) in text
    assert "\n".join(BODY) in text


def test_a_narrow_gap_that_every_line_crosses_is_a_word_space() -> None:
    """The other side: spaces of 4 points that line up down a typewritten page part each line's words,
    not two columns; both sides share every line's top and bottom."""
    boxes, expected = [], []
    for n in range(6):
        left = line(f"Line{n} of the left", 60, 60 + 12 * n, 10)
        right = line(f"and the right part {n}", left[-1].x1 + 4.0, 60 + 12 * n, 10)
        boxes += left + right
        expected.append(f"Line{n} of the left and the right part {n}")
    assert page_text(boxes, PAGE_WIDTH).splitlines() == expected
