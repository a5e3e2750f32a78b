"""What every source kind is: a config model (what the user may set) and the few decisions that differ
from one kind to another. Everything else (storing, queueing, indexing, status) is shared, in
ingestion/lifecycle.py, ingestion/indexing.py and ingestion/status.py, and asks the kind when it must.

A kind is one module with one subclass of SourceKind, plus one line in ingestion/kinds/registry.py. What a
user may set (KindConfig) and the error by field (KindError) are in ingestion/kinds/config.py, a leaf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings

from ingestion.indexing import source_index
from ingestion.kinds.config import KindConfig, NoConfig
from sources.models import Document, Source, Status

if TYPE_CHECKING:
    from ingestion.crawl.base import FetchedPage


@dataclass(frozen=True)
class Expansion:
    """The addresses a fetching source lists now, and anything the admin should know about the listing."""

    urls: list[str]
    notice: str = ""
    # A sitemap's <lastmod> by URL: the same value as at the last sync means "unchanged, don't fetch".
    lastmod: Mapping[str, str] = field(default_factory=dict)
    # The listing is whole (no part failed, nothing cut by a limit): a page left out of it is evidence
    # that the page is gone. A partial listing is no evidence of anything.
    complete: bool = False
    # Pages no longer listed are fetched again (conditionally), so that only a page that is really gone
    # is removed: a feed's old items leave the feed but stay on the site.
    recheck_unlisted: bool = False
    # Listed pages that robots.txt disallows, already left out of `urls` (and of any page cap).
    skipped_by_robots: int = 0


class SourceKind:
    name: ClassVar[str]
    label: ClassVar[str]  # how a source of this kind is named in lists: "Web page"
    icon: ClassVar[str] = "dot"  # an icon of templates/app/_icon.html
    unit: ClassVar[tuple[str, str]] = ("document", "documents")  # one, many: what its documents are
    config_model: ClassVar[type[KindConfig]] = NoConfig
    # The "Add source" dialog: the tab's label (None: not offered), a line of help, and the form fields
    # that make this kind's payload (besides the title).
    add_label: ClassVar[str | None] = None
    add_help: ClassVar[str] = ""
    form_fields: ClassVar[tuple[str, ...]] = ()
    # Documents are fetched from their addresses, one page job each (expand, then crawl).
    fetches_pages: ClassVar[bool] = False
    # There is something to sync again (a site, a feed, a connector): Resync (the "recrawl" verb) fetches it
    # again from where it came from, unchanged documents are not re-embedded, and it is offered a schedule
    # (daily by default). Pasted text and uploaded files are what they are: no schedule, none offered.
    resyncable: ClassVar[bool] = False
    # Citations link to the document's address.
    cites_urls: ClassVar[bool] = False
    # The Celery task (by name in ingestion/tasks.py, or a dotted path for kinds above ingestion) that
    # turns a pending source into documents and chunks, and the one that indexes it again from what is kept.
    ingest_task: ClassVar[str] = "index_source"
    reindex_task: ClassVar[str] = "index_source"

    @property
    def page_task(self) -> str | None:
        """The task that fetches one of its documents, published a wave at a time from its source's backlog
        (lifecycle.pump_pages): a web page's crawl; a connector names its own. None: no documents to fetch."""
        return "crawl_page" if self.fetches_pages else None

    # --- creating -------------------------------------------------------------------------------------

    def validate(self, payload: dict[str, Any]) -> KindConfig:
        return self.config_model.model_validate(payload)

    def default_title(self, config: KindConfig) -> str:
        """The title when the user gave none; empty means a title is required."""
        return ""

    def settings_of(self, config: KindConfig) -> dict[str, Any]:
        """What is kept in Source.config: the user's validated settings."""
        return config.model_dump(exclude_none=True)

    def create(self, *, source: Source, config: KindConfig) -> None:
        """Rows made with the source, in the same transaction (e.g. pasted text's one document)."""

    # --- ingesting ------------------------------------------------------------------------------------

    def expand(self, *, source: Source) -> Expansion:
        """The addresses of a fetching source's documents (sitemaps, feeds); FetchError when it can't."""
        raise NotImplementedError(f"{self.name} sources are not expanded into pages")

    def follow_links(self, *, source: Source, document: Document, page: FetchedPage) -> list[int]:
        """The links of a crawled page that this kind adds as documents of the source (a site walked by its
        links: ingestion/kinds/site.py); returns their ids, for the page job to queue."""
        return []

    def index(self, *, source: Source, inline: bool = False) -> list[int]:
        """What the ingest/reindex task runs for a pending source: index its pending documents. Returns the
        ids of documents left for one job each (a big source), none when `inline` (in-process callers)."""
        return source_index(source=source, inline_up_to=None if inline else settings.INDEX_FAN_OUT_AT)

    def prepare_reindex(self, *, source: Source) -> None:
        """Before a reindex: documents whose kept text is indexed again become pending."""
        Document.objects.filter(source_id=source.id).exclude(text="").update(status=Status.PENDING)

    def settle(self, *, source_id: int, update: dict[str, Any]) -> dict[str, Any]:
        """The status, counters and error its documents give a source (ingestion.status), as this kind
        sees them: e.g. a connected source whose account needs reconnecting keeps saying so."""
        return update

    # --- showing --------------------------------------------------------------------------------------

    def address(self, source: Source) -> str:
        """What the sources list shows under the title: an address, a file name."""
        return str(source.config.get("url", ""))


class FetchedKind(SourceKind):
    """Kinds whose documents are web pages fetched from their addresses."""

    icon = "link"
    unit = ("page", "pages")
    fetches_pages = True
    cites_urls = True
    resyncable = True
    ingest_task = "crawl_source"
    form_fields: ClassVar[tuple[str, ...]] = ("url", "keep_short_pages")  # as declared above: kinds add more

    def default_title(self, config: KindConfig) -> str:
        return str(getattr(config, "url", ""))[:300]  # a page is named by its address until crawled
