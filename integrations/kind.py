"""What Notion and Google Docs sources share: a connection (by id, in this workspace), a set of picked
objects, documents synced by integrations.sync, citations that link to the provider."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator

from ingestion.kinds.base import SourceKind
from ingestion.kinds.config import KindConfig
from integrations.connections import reconnect_message
from integrations.models import Connection
from integrations.sync import Fetched, Item
from sources.models import Source, Status


class PickedItem(KindConfig):
    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$")
    type: str = Field(default="page", max_length=20)
    title: str = Field(default="", max_length=300)


class ConnectedConfig(KindConfig):
    connection: int
    items: list[PickedItem] = Field(min_length=1, max_length=500)

    @field_validator("connection")
    @classmethod
    def in_this_workspace(cls, value: int, info: Any) -> int:
        # Validated inside the workspace scope (ingestion.lifecycle.source_create): another workspace's
        # connection is not found, like a missing one.
        connection = Connection.objects.filter(id=value).first()
        if connection is None or connection.provider != cls.provider:
            raise ValueError("No such connection in your workspace; connect the account first.")
        if not connection.active:
            raise ValueError(f"Reconnect {connection.get_provider_display()} before adding sources from it.")
        return value

    provider: ClassVar[str] = ""


class ConnectedKind(SourceKind):
    provider: ClassVar[str]
    cites_urls = True
    resyncable = True
    ingest_task = "integrations.tasks.sync_source"
    page_task = "integrations.tasks.sync_document"  # a wave at a time, like a crawl's pages

    def default_title(self, config: KindConfig) -> str:
        items = getattr(config, "items", [])
        first = items[0].title or items[0].id if items else ""
        more = f" and {len(items) - 1} more" if len(items) > 1 else ""
        return f"{first}{more}"[:300]

    def address(self, source: Source) -> str:
        count = len(source.config.get("items", []))
        return f"{count} picked from {self.label}" if count != 1 else f"1 picked from {self.label}"

    def settle(self, *, source_id: int, update: dict[str, Any]) -> dict[str, Any]:
        # Its documents may all be done (they stay searchable), but nothing syncs until a reconnect.
        config = Source.objects.filter(id=source_id).values_list("config", flat=True).first() or {}
        connection_id = config.get("connection")
        connection = (
            Connection.objects.filter(id=connection_id).first() if connection_id is not None else None
        )
        if connection is not None and connection.active:
            return update
        message = (
            reconnect_message(connection) if connection else "Connect the account again to sync this source."
        )
        detail = (
            f"connection {connection.id} is {connection.status}" if connection else "the connection is gone"
        )
        return {**update, "status": Status.FAILED, "error": message, "error_detail": detail}

    def pickable(
        self, *, connection: Connection, query: str, cursor: str | None
    ) -> tuple[list[dict], str | None]:
        """One page of what the picker offers ([{id, type, title, url, edited}]) and the next cursor."""
        raise NotImplementedError

    def listing(self, *, source: Source, connection: Connection, known: list[str]) -> list[Item]:
        raise NotImplementedError

    def fetch(self, *, source: Source, connection: Connection, object_id: str) -> Fetched:
        raise NotImplementedError
