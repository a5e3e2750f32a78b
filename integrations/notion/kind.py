"""Notion pages and databases, picked from what the integration can see.

A picked page is a document; with "include child pages", so is every page below it, at any depth and in
any block (a toggle, a column, a synced block: integrations/notion/tree.py). A picked database
is one document per row (its properties as `name: value` lines before the row's body). Documents keep
the page's title and notion.so address, so citations link to Notion. Re-sync is incremental by
`last_edited_time` (minute precision: see EDIT_TIME_PRECISION); a page that is archived, deleted or no
longer shared (404/403) leaves with its chunks.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import Field

from integrations.errors import ObjectGone
from integrations.kind import ConnectedConfig, ConnectedKind, PickedItem
from integrations.models import Connection, Provider
from integrations.notion.client import NotionClient
from integrations.notion.render import page_text, page_title
from integrations.notion.tree import Places, descendants, is_gone
from integrations.sync import Fetched, Item
from sources.models import Source


class NotionPick(PickedItem):
    type: str = Field(default="page", pattern=r"^(page|database)$")


class NotionConfig(ConnectedConfig):
    provider = Provider.NOTION
    # Narrower items than the base's, which pydantic validates as NotionPick: the point of the override,
    # though mypy holds a list field invariant.
    items: list[NotionPick] = Field(min_length=1, max_length=500)  # type: ignore[assignment]
    include_children: bool = True


# Notion rounds last_edited_time down to the minute, so every edit made in the minute of a copy's
# last_edited_time shares it: the same timestamp proves "unchanged" only for a copy fetched after that
# minute ended. A copy fetched within it (or within the clock skew between Notion and us) is "maybe
# changed": it is fetched again, and its content hash decides whether anything is embedded again.
EDIT_TIME_PRECISION = timedelta(minutes=1)
CLOCK_SKEW = timedelta(seconds=30)


def _trusted_from(last_edited_time: str) -> datetime | None:
    try:
        edited = datetime.fromisoformat(last_edited_time)
    except ValueError:
        return None
    if edited.tzinfo is None:
        edited = edited.replace(tzinfo=UTC)
    return edited + EDIT_TIME_PRECISION + CLOCK_SKEW


def _item(page: dict) -> Item:
    edited = page.get("last_edited_time", "")
    return Item(
        object_id=page["id"],
        title=page_title(page) or "Untitled",
        url=page.get("url", ""),
        version=edited,
        trusted_from=_trusted_from(edited),
    )


class NotionKind(ConnectedKind):
    name = "notion"
    label = "Notion"
    icon = "book"
    provider = Provider.NOTION
    config_model = NotionConfig

    def pickable(
        self, *, connection: Connection, query: str, cursor: str | None
    ) -> tuple[list[dict], str | None]:
        answer = NotionClient(connection).search(query=query, cursor=cursor)
        offered = [
            {
                "id": obj["id"],
                "type": obj.get("object", "page"),
                "title": page_title(obj) or "Untitled",
                "url": obj.get("url", ""),
                "edited": obj.get("last_edited_time", ""),
                "row": (obj.get("parent") or {}).get("type") in ("database_id", "data_source_id"),
            }
            for obj in answer.get("results", [])
            if not is_gone(obj)
        ]
        # Database rows come with their database; they are not offered one by one.
        offered = [o for o in offered if not o.pop("row")]
        return offered, answer.get("next_cursor") if answer.get("has_more") else None

    def listing(self, *, source: Source, connection: Connection, known: list[str]) -> list[Item]:
        client = NotionClient(connection)
        items: dict[str, Item] = {}
        roots: list[str] = []
        databases: set[str] = set()
        for pick in source.config["items"]:
            try:
                if pick.get("type") == "database":
                    client.database(pick["id"])
                    databases.add(pick["id"])
                    for row in client.database_rows(pick["id"]):
                        if not is_gone(row):
                            items[row["id"]] = _item(row)
                else:
                    items[pick["id"]] = _item(client.page(pick["id"]))
            except ObjectGone:
                continue  # deleted or unshared: its documents leave with the listing
            roots.append(pick["id"])
        with_children = bool(source.config.get("include_children"))
        objects = [o for o in client.search_all() if not is_gone(o)] if with_children and roots else []
        places = Places(client, objects)
        # What a page may sit in and belong to this source: a picked database; with child pages, any page
        # or database reached below a pick, through pages, databases and blocks.
        reached = set(databases) | (set(roots) | set(items) if with_children else set())
        if objects:
            pages, below = descendants(set(roots) | set(items), places)
            reached |= below
            for page in pages:
                items.setdefault(page["id"], _item(page))
        # Search can lag behind Notion's edits: a known page missing from it is asked for directly, and kept
        # while it sits below this source's picks (or where the bounds of Places left its place unknown).
        for object_id in set(known) - set(items):
            try:
                page = client.page(object_id)
            except ObjectGone:
                continue
            if places.below(page, reached, through_pages=with_children):
                items[object_id] = _item(page)
        return list(items.values())

    def fetch(self, *, source: Source, connection: Connection, object_id: str) -> Fetched:
        client = NotionClient(connection)
        page = client.page(object_id)
        item = _item(page)
        return Fetched(
            title=item.title, url=item.url, text=page_text(page, client.block_children), version=item.version
        )
