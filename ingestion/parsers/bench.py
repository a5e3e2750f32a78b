"""Parse every shared document in-process and print throughput as one JSON line.

    .venv/bin/python -m ingestion.parsers.bench [DOCUMENTS_DIR]

Pages per second are given separately for PDFs with a text layer and for pages that went through OCR,
since the two differ by two orders of magnitude; sheet rows per second cover XLSX, XLS, ODS and CSV.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

from ingestion.parsers.base import ParseError
from ingestion.parsers.registry import detect_type, parse_file

DEFAULT_DOCUMENTS = (
    Path(
        os.environ.get("GROUNDED_SHARED_DATA")
        or Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    )
    / "documents"
)
SHEET_TYPES = ("spreadsheetml", "ms-excel", "opendocument.spreadsheet", "text/csv", "tab-separated")


def _pdf_pages(path: Path) -> int:
    from pypdf import PdfReader

    try:
        return len(PdfReader(path).pages)
    except Exception:
        # An encrypted or broken file counts no pages.
        return 0


def run(documents: Path) -> dict:
    totals: defaultdict[str, float] = defaultdict(int)  # counts and seconds; 0 for what never happened
    failures: dict[str, str] = {}
    started = time.perf_counter()
    for path in sorted(p for p in documents.rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"):
        kind = detect_type(path, path.name)
        began = time.perf_counter()
        try:
            segments = parse_file(path, path.name)
        except ParseError as exc:
            failures[str(path.relative_to(documents))] = exc.reason
            segments = []
        elapsed = time.perf_counter() - began
        totals["files"] += 1
        if kind == "application/pdf":
            pages = _pdf_pages(path)
            bucket = "ocr" if any(segment.meta.get("ocr") for segment in segments) else "text"
            totals[f"pdf_{bucket}_pages"] += pages
            totals[f"pdf_{bucket}_seconds"] += elapsed
        elif any(marker in kind for marker in SHEET_TYPES):
            totals["sheet_rows"] += len(segments)
            totals["sheet_seconds"] += elapsed
        else:
            totals["other_seconds"] += elapsed

    def rate(count: str, seconds: str) -> float:
        return round(totals[count] / totals[seconds], 1) if totals[seconds] else 0.0

    return {
        "files": totals["files"],
        "pdf_text_pages": totals["pdf_text_pages"],
        "pdf_text_pages_per_s": rate("pdf_text_pages", "pdf_text_seconds"),
        "pdf_ocr_pages": totals["pdf_ocr_pages"],
        "pdf_ocr_pages_per_s": rate("pdf_ocr_pages", "pdf_ocr_seconds"),
        "sheet_rows": totals["sheet_rows"],
        "sheet_rows_per_s": rate("sheet_rows", "sheet_seconds"),
        "other_seconds": round(totals["other_seconds"], 2),
        "total_seconds": round(time.perf_counter() - started, 2),
        "failed": failures,
    }


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    documents = Path(args[0]) if args else DEFAULT_DOCUMENTS
    print(json.dumps(run(documents), sort_keys=True))


if __name__ == "__main__":
    main()
