"""One web page, fetched and extracted; fetched again on recrawl (unchanged pages are not re-embedded)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from checked_http.errors import FetchError
from ingestion.crawl.fetch import check_address
from ingestion.kinds.base import Expansion, FetchedKind
from ingestion.kinds.config import KindConfig
from sources.models import Source


def checked_url(value: str) -> str:
    try:
        return check_address(value)
    except FetchError as exc:
        raise ValueError(exc.message) from exc


class UrlConfig(KindConfig):
    url: str
    # Crawl strategies for this source, in order of preference; settings.CRAWL_STRATEGIES when absent.
    strategies: list[Literal["http", "browser"]] | None = Field(default=None, min_length=1)
    # Page fetches follow redirects only within the page's site (www. or not) unless this is set.
    offsite_redirects: bool = False
    # Index pages however little text they have (a one-line answer, a table of contents) instead of skipping
    # them: the admin's "index it anyway" for every page of the source (one page: Document.keep_short).
    keep_short_pages: bool = False

    @field_validator("url")
    @classmethod
    def checked(cls, value: str) -> str:
        return checked_url(value)


class UrlKind(FetchedKind):
    name = "url"
    label = "Web page"
    config_model = UrlConfig
    add_label: ClassVar[str | None] = "Web page"  # as SourceKind declares it: AutoKind has none
    add_help = "One page. Grounded fetches it, keeps its main text, and fetches it again when you recrawl."

    def expand(self, *, source: Source) -> Expansion:
        return Expansion([source.config["url"]], complete=True)
