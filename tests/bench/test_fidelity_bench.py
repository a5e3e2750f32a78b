"""How much of each shared documentation site reaches the index (issue #52), beside the extraction before
#52 in the same run: trafilatura choosing the main content element by element (the baseline) against the
main content found as a whole and rendered block by block (ingestion/crawl/main_text.py). Both run under
today's skip rules, so the difference is the content selection alone. The measure is
tests/ingestion/crawl/fidelity.py (reference text from the HTML, no labels).

GROUNDED_BENCH_FIDELITY=full runs every site (~3 min on 2 cores); otherwise two small sites (make test).
Printed as one JSON line per site and extractor; docs/BENCHMARKS.md ("Fidelity on the shared sites")
records them.
"""

from __future__ import annotations

import json
import os
import time
from unittest import mock

import pytest

from ingestion.crawl import extract
from tests.factories import SHARED_DATA
from tests.ingestion.crawl.fidelity import measure_site

pytestmark = pytest.mark.bench
SITES = SHARED_DATA / "sites"
FULL = os.environ.get("GROUNDED_BENCH_FIDELITY") == "full"
SMALL = ["maint-guide", "requests-docs"]


def _sites() -> list[str]:
    if not SITES.is_dir():
        return []
    return sorted(p.name for p in SITES.iterdir()) if FULL else SMALL


@pytest.mark.skipif(not SITES.is_dir(), reason=f"no shared sites at {SITES}")
@pytest.mark.parametrize("site", _sites())
def test_fidelity(site: str) -> None:
    results = {}
    for name in ("trafilatura", "main_text"):
        started = time.monotonic()
        if name == "trafilatura":
            with mock.patch.object(extract, "main_text", lambda tree, **_: None):
                result = measure_site(SITES / site)
        else:
            result = measure_site(SITES / site)
        summary = result.summary()
        summary.update(benchmark="fidelity", extractor=name, seconds=round(time.monotonic() - started, 1))
        print(json.dumps(summary))
        results[name] = result
    after = results["main_text"]
    assert not after.lost, [p.path for p in after.lost]
    assert after.sentence_share >= 0.98 and after.paragraph_share >= 0.98, after.summary()
    assert not after.repeated_lines() and not after.nav_pages, after.summary()
