"""Every shared document read right or refused with a specific reason (issue #52).

For each file in ../shared/data/documents whose plain-reader text is good (fidelity.py: enough text, and
it reads as words), 95 % of the plain reader's lines (prose) or cell tokens (tables) must be found in our
text, and 95 % of its words in any order; a refusal must give a specific reason, and only a file the plain
reader cannot read well either may be refused. The figures for every file are `make bench`'s
(tests/bench/test_document_fidelity_bench.py). Parses are shared with test_documents.py (documents.py).
"""

from __future__ import annotations

import pytest

from ingestion.parsers.base import ParseError
from tests.ingestion.parsers import fidelity
from tests.ingestion.parsers.documents import DOCUMENTS, outcome

pytestmark = pytest.mark.skipif(not DOCUMENTS.is_dir(), reason=f"no shared documents at {DOCUMENTS}")

BAR = 0.95
UNSPECIFIC_REASONS = {"unreadable", "corrupt", "unsupported"}
# Files whose plain-reader lines are not lines of the page as it reads, so only their words (found in
# any order) are held to the bar.
LINES_NOT_READING_ORDER = {
    "pdf/la-precinct-bulletin-2014-p1.pdf": "PDFium's text page runs each baseline across the result columns",
    "pdf/nics-background-checks-2015-11.pdf": (
        "the text page runs the two-line header across the table and joins cells ('0 00 0'); we keep the "
        "table as a Markdown table"
    ),
    "pdf/cn-annual-report-scan-ocr.pdf": "a noisy OCR layer whose lines are scattered fragments of the scan",
    "pdf/pdffill-demo-form.pdf": (
        "shape names laid out in a grid, which the text page reads across the grid; the navigation buttons "
        "on every page, which we leave out as running footers and the text page joins to the line above"
    ),
}
# Words we leave out on purpose, and the share the file is held to instead. None now: the form's
# navigation buttons, running footers to us (4 % of its words), leave it at 96 % since its turned
# "Rotation" labels are read as words.
WORDS_LEFT_OUT: dict[str, tuple[float, str]] = {}


def _relatives() -> list[str]:
    return fidelity.documents(DOCUMENTS) if DOCUMENTS.is_dir() else []


@pytest.mark.parametrize("relative", _relatives())
def test_shared_document_is_read_right_or_refused_with_a_specific_reason(relative: str) -> None:
    ours = outcome(relative)
    text = ours if isinstance(ours, ParseError) else fidelity.our_text(list(ours))
    result = fidelity.compare(relative, DOCUMENTS / relative, text)
    if isinstance(ours, ParseError):
        assert ours.reason not in UNSPECIFIC_REASONS, f"{relative}: refused as {ours.reason} ({ours.detail})"
        assert result.share is None, f"{relative}: refused ({ours.reason}) though the plain reader reads it"
        return
    if result.share is None:
        return  # the plain reader has nothing good to compare with (a scan, a tiny file)
    floor = WORDS_LEFT_OUT.get(relative, (BAR, ""))[0]
    assert result.word_share is not None and result.word_share >= floor, result.line()
    if relative not in LINES_NOT_READING_ORDER:
        assert result.share >= BAR, f"{result.line()}\nmissing: {result.missing}"


def test_exceptions_name_files_that_exist() -> None:
    names = set(_relatives())
    if names:
        assert set(LINES_NOT_READING_ORDER) | set(WORDS_LEFT_OUT) <= names
