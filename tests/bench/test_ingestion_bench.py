"""Ingestion benchmarks, each printed beside a plain-library baseline measured in the same run.

`make bench` prints the JSON lines; docs/BENCHMARKS.md records them. The assertions only check that
the work was done, never how fast (timings belong in benchmarks, not in pass/fail tests).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from ingestion.crawl.extract import DroppedPage
from ingestion.crawl.fetch import FetchPolicy
from ingestion.crawl.strategies import fetch_and_extract
from ingestion.parsers.bench import run as parse_bench
from tests.factories import SHARED_DATA
from tests.ingestion.conftest import flask_page_paths, flask_url
from tests.ingestion.crawl.servers import FLASK_DOCS, serving

pytestmark = pytest.mark.bench


def test_crawl_and_extract_throughput_against_raw_fetching():
    with serving(root=FLASK_DOCS) as site:
        urls = [flask_url(site, path) for path in flask_page_paths()]
        with httpx.Client() as client:
            started = time.perf_counter()
            raw_ok = sum(client.get(url).status_code == 200 for url in urls)
            raw_seconds = time.perf_counter() - started
        policy = FetchPolicy(allowed_networks=("127.0.0.1/32",))
        started = time.perf_counter()
        extracted = 0
        for url in urls:
            try:
                extracted += bool(fetch_and_extract(url, policy, order=("http",)).extracted)
            except DroppedPage:  # a soft 404 or a script shell: crawled, not extracted
                continue
        crawl_seconds = time.perf_counter() - started
    result = {
        "benchmark": "crawl_extract",
        "pages": len(urls),
        "extracted": extracted,
        "raw_http_pages_per_s": round(len(urls) / raw_seconds, 1),
        "crawl_extract_pages_per_s": round(len(urls) / crawl_seconds, 1),
        "ratio_to_raw": round(raw_seconds / crawl_seconds, 3),
    }
    print(json.dumps(result))
    assert raw_ok == len(urls) and extracted >= len(urls) - 4


def test_parse_throughput_against_plain_libraries():
    documents = SHARED_DATA / "documents"
    ours = parse_bench(documents)
    # Baseline: pypdf's plain extract_text over the same text-layer PDFs, and openpyxl's plain row
    # iteration over the same XLSX files (no layout, tables, header detection or formatting).
    from zipfile import BadZipFile

    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    pages, started = 0, time.perf_counter()
    for path in sorted((documents / "pdf").glob("*.pdf")):
        reader = PdfReader(path)
        if reader.is_encrypted:
            continue  # the baseline skips what it cannot open
        try:
            for page in reader.pages:
                page.extract_text()
                pages += 1
        except PdfReadError:
            continue  # a corrupt file: the baseline counts the pages it got
    pdf_seconds = time.perf_counter() - started
    rows, started = 0, time.perf_counter()
    for path in sorted((documents / "xlsx").glob("*.xlsx")):
        try:
            workbook = load_workbook(path, read_only=True, data_only=True)
        except (InvalidFileException, BadZipFile):
            continue  # the password-protected workbook is not a zip
        for sheet in workbook.worksheets:
            rows += sum(1 for _ in sheet.iter_rows(values_only=True))
        workbook.close()
    sheet_seconds = time.perf_counter() - started
    result = {
        "benchmark": "parse",
        **{k: v for k, v in ours.items() if k != "failed"},
        "baseline_pypdf_pages_per_s": round(pages / pdf_seconds, 1),
        "baseline_openpyxl_rows_per_s": round(rows / sheet_seconds, 1),
    }
    print(json.dumps(result))
    assert ours["files"] >= 50 and ours["pdf_text_pages"] > 0 and ours["sheet_rows"] > 0
