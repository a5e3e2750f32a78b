"""Crawl strategies by name, imported only when first used, tried in order of preference.

Plain HTTP comes first: it is fast and enough for most pages. When its markup says scripts build the page (an
empty app root, an "enable JavaScript" notice, a framework's state blob, with little prose beside them), the
browser renders it instead. A page that is merely short or empty is not sent to the browser: Chromium would
find the same text at a hundred times the cost. A strategy that can't run here (no Chromium) hands over to the
next one.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ingestion.crawl.base import CrawlStrategy, FetchedPage, StrategyUnavailable
from ingestion.crawl.extract import DroppedPage, ExtractedPage, extract_page
from ingestion.crawl.fetch import FetchPolicy

log = logging.getLogger(__name__)

STRATEGIES: dict[str, str] = {
    "http": "ingestion.crawl.http.HttpStrategy",
    "browser": "ingestion.crawl.browser.BrowserStrategy",
}
DEFAULT_ORDER: tuple[str, ...] = ("http", "browser")
# Drop reasons another strategy can fix; a "not found" page, a bot wall or a short page stays what it is.
RETRYABLE_DROPS = frozenset({"needs_javascript"})


def strategy_class(name: str) -> type[CrawlStrategy]:
    try:
        dotted = STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown crawl strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
    module_name, class_name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)


def create_strategy(name: str, **options: object) -> CrawlStrategy:
    return strategy_class(name)(**options)


@dataclass(frozen=True)
class CrawledPage:
    page: FetchedPage
    extracted: ExtractedPage | None  # None for a 304 or a body that isn't HTML (PDF, ...): parse it elsewhere


def fetch_and_extract(
    url: str,
    policy: FetchPolicy,
    *,
    order: Sequence[str] = DEFAULT_ORDER,
    strategies: Mapping[str, CrawlStrategy] | None = None,
    headers: Mapping[str, str] | None = None,
    keep_short: bool = False,
) -> CrawledPage:
    """Fetch and extract one page with the first strategy that gives usable text. FetchErrors propagate (a 404
    is a 404 in any browser); DroppedPage is raised when no strategy got past it. `keep_short` is the admin's
    "index it anyway", passed to extract_page."""
    last_drop: DroppedPage | None = None
    timings: dict[str, float] = {}
    try:
        for name in order:
            owned = strategies is None or name not in strategies
            started = time.perf_counter()
            try:
                strategy = create_strategy(name) if owned else strategies[name]  # type: ignore[index]
            except StrategyUnavailable as exc:
                log.info("crawl strategy %s unavailable: %s", name, exc)
                continue
            try:
                page = strategy.fetch_page(url, policy, headers=headers)
            except StrategyUnavailable as exc:
                log.info("crawl strategy %s unavailable: %s", name, exc)
                continue
            finally:
                if owned:
                    strategy.close()
                timings[f"{name}_s"] = time.perf_counter() - started
            if page.not_modified or not page.is_html:
                return CrawledPage(page, None)
            started = time.perf_counter()
            try:
                return CrawledPage(page, extract_page(page.html, page.final_url, keep_short=keep_short))
            except DroppedPage as exc:
                if exc.reason not in RETRYABLE_DROPS:
                    raise
                last_drop = exc
            finally:
                timings["extract_s"] = timings.get("extract_s", 0.0) + time.perf_counter() - started
    finally:
        # One line a page: where a crawl's time goes (the ingestion benchmark reads these from worker logs).
        log.info("crawl timings %s", json.dumps({k: round(v, 4) for k, v in timings.items()}))
    if last_drop is not None:
        raise last_drop
    raise StrategyUnavailable(f"no crawl strategy could run: {', '.join(order)}")
