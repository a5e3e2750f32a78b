"""What every crawl strategy gives back, so the code after it doesn't care how a page was fetched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ingestion.crawl.fetch import FetchPolicy


class StrategyUnavailable(RuntimeError):
    """The strategy can't run on this machine (e.g. no Chromium); the next one should be tried."""


@dataclass(frozen=True)
class FetchedPage:
    url: str
    final_url: str
    status: int
    content_type: str  # without parameters, lower case
    body: bytes
    encoding: str | None
    strategy: str
    headers: Mapping[str, str] = field(default_factory=dict)
    not_modified: bool = False
    blocked_requests: tuple[str, ...] = ()  # sub-requests the browser was not allowed to make

    @property
    def is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml") or (
            not self.content_type and self.body.lstrip()[:1] == b"<"
        )

    @property
    def html(self) -> str | bytes:
        """The page as text when its encoding is known; otherwise the bytes, for the extractor to sniff."""
        if self.encoding:
            try:
                return self.body.decode(self.encoding, errors="replace")
            except LookupError:
                pass
        return self.body


class CrawlStrategy(Protocol):
    name: str

    def fetch_page(
        self, url: str, policy: FetchPolicy, *, headers: Mapping[str, str] | None = None
    ) -> FetchedPage: ...

    def close(self) -> None: ...
