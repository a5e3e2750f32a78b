"""What every source kind is: a config model (what the user may set) and the few decisions that differ
from one kind to another. Everything else (storing, queueing, indexing, status) is shared, in
ingestion/lifecycle.py and ingestion/indexing.py, and asks the kind when it must.

A kind is one module with one subclass of SourceKind, plus one line in ingestion/kinds/registry.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from sources.models import Source


class KindError(ValueError):
    """Something a person should correct, by field: nothing was written."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


class KindConfig(BaseModel):
    """What a user may set for a source of a kind, validated before anything is stored."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class NoConfig(KindConfig):
    pass


@dataclass(frozen=True)
class Expansion:
    """The addresses a fetching source lists now, and anything the admin should know about the listing."""

    urls: list[str]
    notice: str = ""


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
    # Resync (the "recrawl" verb) fetches the source again from where it came from; unchanged documents
    # are not re-embedded.
    resyncs: ClassVar[bool] = False
    # Citations link to the document's address.
    cites_urls: ClassVar[bool] = False
    # The Celery task (by name in ingestion/tasks.py, or a dotted path for kinds above ingestion) that
    # turns a pending source into documents and chunks, and the one that indexes it again from what is kept.
    ingest_task: ClassVar[str] = "index_source"
    reindex_task: ClassVar[str] = "index_source"

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

    def index(self, *, source: Source) -> None:
        """What the ingest/reindex task runs for a claimed-or-pending source: index its pending documents."""
        from ingestion.indexing import source_index

        source_index(source=source)

    def prepare_reindex(self, *, source: Source) -> None:
        """Before a reindex: documents whose kept text is indexed again become pending."""
        from sources.models import Document, Status

        Document.objects.filter(source_id=source.id).exclude(text="").update(status=Status.PENDING)

    def settle(self, *, source_id: int, update: dict[str, Any]) -> dict[str, Any]:
        """The status, counters and error its documents give a source (ingestion.indexing), as this kind
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
    resyncs = True
    cites_urls = True
    ingest_task = "crawl_source"
    form_fields = ("url",)

    def default_title(self, config: KindConfig) -> str:
        return str(getattr(config, "url", ""))[:300]  # a page is named by its address until crawled
