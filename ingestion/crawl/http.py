"""The plain-HTTP strategy: one safe fetch, no scripts run. Fast, and enough for most sites."""

from __future__ import annotations

from collections.abc import Mapping

from ingestion.crawl.base import FetchedPage
from ingestion.crawl.fetch import FetchPolicy, fetch

HTML_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"


class HttpStrategy:
    name = "http"

    def fetch_page(
        self, url: str, policy: FetchPolicy, *, headers: Mapping[str, str] | None = None
    ) -> FetchedPage:
        result = fetch(url, policy, headers={"Accept": HTML_ACCEPT, **(headers or {})})
        return FetchedPage(
            url=url,
            final_url=result.final_url,
            status=result.status,
            content_type=result.content_type,
            body=result.body,
            encoding=result.encoding,
            strategy=self.name,
            headers=result.headers,
            not_modified=result.not_modified,
        )

    def close(self) -> None:
        pass
