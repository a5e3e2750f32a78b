"""Every shared document read right or refused with a specific reason (issue #52): for each of the files in
../shared/data/documents, the text our parser registry gives beside the text a plain reader gives (pypdfium2's
text page or pdftotext, python-docx, openpyxl, the csv module, the raw file, lxml), measured by
tests/ingestion/parsers/fidelity.py: the share of the plain reader's lines (prose) or cell tokens (tables)
found in ours, the share of its words found in any order, and our reason where we refuse a file.

Prints one line per file and a JSON summary; docs/BENCHMARKS.md ("Document fidelity (#52)") records them.
The parses are the ones tests/ingestion/parsers/documents.py caches, so in a full run (make test) this
costs only the plain readers. The assertion checks the work was done; the bar is held by
tests/ingestion/parsers/test_document_fidelity.py.
"""

from __future__ import annotations

import json
import time

import pytest

from ingestion.parsers.base import ParseError
from tests.ingestion.parsers import fidelity
from tests.ingestion.parsers.documents import DOCUMENTS, outcome

pytestmark = pytest.mark.bench


@pytest.mark.skipif(not DOCUMENTS.is_dir(), reason=f"no shared documents at {DOCUMENTS}")
def test_document_fidelity() -> None:
    started = time.monotonic()
    results = []
    for relative in fidelity.documents(DOCUMENTS):
        ours = outcome(relative)
        text = ours if isinstance(ours, ParseError) else fidelity.our_text(list(ours))
        results.append(fidelity.compare(relative, DOCUMENTS / relative, text))
        print(results[-1].line())
    summary = fidelity.summary(results)
    summary.update(benchmark="document_fidelity", seconds=round(time.monotonic() - started, 1))
    print(json.dumps(summary))
    assert summary["files"] == len(results) > 40 and summary["measured"] > 25
