"""Extraction beside today's (tests/bench/extract_baseline.py, the extractor as it was before issue #16),
page by page on the shared Flask docs and a generated site of realistic pages, in the same run: time a page,
the drop decisions, which pages' kept text changed, and how many pages each rule would send to Chromium.

Printed as one JSON line per site; docs/BENCHMARKS.md ("Extraction and drop decisions") records them.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path

import pytest

from ingestion.crawl import strategies
from ingestion.crawl.extract import DroppedPage, extract_page
from tests.bench import extract_baseline
from tests.bench.generated_site import generate
from tests.ingestion.crawl.servers import FLASK_DOCS

pytestmark = pytest.mark.bench
# The rule before issue #16: every short or empty page went to the browser too.
BASELINE_RETRYABLE = {"needs_javascript", "too_short", "empty"}


def _run(extract, pages: dict[str, bytes]) -> tuple[dict[str, str | int], dict[str, str], list[float]]:
    outcome: dict[str, str | int] = {}
    texts: dict[str, str] = {}
    seconds = []
    for name, body in pages.items():
        started = time.perf_counter()
        try:
            page = extract(body, f"http://127.0.0.1/{name}")
            outcome[name], texts[name] = len(page.text), page.text
        except (DroppedPage, extract_baseline.DroppedPage) as exc:
            outcome[name] = exc.reason
        seconds.append(time.perf_counter() - started)
    return outcome, texts, seconds


def _compare(site: str, pages: dict[str, bytes]) -> dict:
    _run(extract_page, dict(list(pages.items())[:3]))  # imports and lazy set-up, untimed
    _run(extract_baseline.extract_page, dict(list(pages.items())[:3]))
    before, before_texts, before_s = _run(extract_baseline.extract_page, pages)
    after, after_texts, after_s = _run(extract_page, pages)
    changed_drops = {
        name: [before[name], after[name]]
        for name in pages
        if isinstance(before[name], str) or isinstance(after[name], str)
        if before[name] != after[name]
    }
    text_changed = [n for n in before_texts if n in after_texts and before_texts[n] != after_texts[n]]
    return {
        "benchmark": "extract",
        "site": site,
        "pages": len(pages),
        "median_ms": round(statistics.median(after_s) * 1000, 1),
        "baseline_median_ms": round(statistics.median(before_s) * 1000, 1),
        "mean_ms": round(statistics.mean(after_s) * 1000, 1),
        "baseline_mean_ms": round(statistics.mean(before_s) * 1000, 1),
        "drops": dict(Counter(v for v in after.values() if isinstance(v, str))),
        "baseline_drops": dict(Counter(v for v in before.values() if isinstance(v, str))),
        "browser_pages": sum(1 for v in after.values() if v in strategies.RETRYABLE_DROPS),
        "baseline_browser_pages": sum(1 for v in before.values() if v in BASELINE_RETRYABLE),
        "kept_chars": sum(len(t) for t in after_texts.values()),
        "baseline_kept_chars": sum(len(t) for t in before_texts.values()),
        "decisions_changed": changed_drops,
        "kept_text_changed": len(text_changed),
    }


def test_extraction_beside_todays_on_the_flask_docs():
    pages = {p.relative_to(FLASK_DOCS).as_posix(): p.read_bytes() for p in sorted(FLASK_DOCS.rglob("*.html"))}
    result = _compare("flask-docs", pages)
    print(json.dumps(result))
    assert result["pages"] == 77 and result["drops"].get("not_found") == 1


def test_extraction_beside_todays_on_a_generated_site(tmp_path: Path):
    names = generate(tmp_path, count=300)
    result = _compare("generated-300", {name: (tmp_path / name).read_bytes() for name in names})
    print(json.dumps(result))
    assert result["pages"] == 300 and result["kept_chars"] > 0
