"""No shared site loses a page with prose (issue #52): every page of the eight real documentation sites in
../shared/data/sites is either indexed or holds less than LOST_PAGE_CHARS of reference prose (a redirect
stub, a search page, a table of contents skipped as a list of links). The full figures (sentences and
paragraphs reaching the index) are `make bench`'s (tests/bench/test_fidelity_bench.py)."""

from __future__ import annotations

import pytest

from ingestion.crawl.extract import DroppedPage, extract_page
from tests.factories import SHARED_DATA
from tests.ingestion.crawl.fidelity import LOST_PAGE_CHARS, reference, site_pages

SITES = SHARED_DATA / "sites"
pytestmark = pytest.mark.skipif(not SITES.is_dir(), reason=f"no shared sites at {SITES}")


@pytest.mark.parametrize("site", sorted(p.name for p in SITES.iterdir()) if SITES.is_dir() else [])
def test_no_page_with_prose_is_lost(site: str) -> None:
    lost = []
    for page in site_pages(SITES / site):
        html = page.read_bytes()
        try:
            extract_page(html, f"http://127.0.0.1/{page.name}")
        except DroppedPage as exc:
            prose = reference(html).prose_chars
            if prose >= LOST_PAGE_CHARS:
                lost.append(f"{page.relative_to(SITES / site)}: {prose} characters of prose, {exc.detail}")
    assert not lost, "\n".join(lost)
