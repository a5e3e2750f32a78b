"""Where a Notion page sits, and which pages lie below a source's picks.

Notion's documented parents (developers.notion.com/reference/parent-object): a page sits in a page
(`page_id`), a database (`database_id`; from API version 2025-09-03 a `data_source_id`, which names its
database too), a block (`block_id`: a toggle, a column, a synced block, a callout, a list item ...), or
at the top of the workspace (`workspace`). A page in a block belongs to the page or database holding that
block: its block is retrieved (GET /v1/blocks/{id}), then the block's parent, until one is not a block.

Bounded: MAX_DEPTH levels up through blocks or down through pages, and MAX_BLOCK_LOOKUPS block
retrievals per listing (one lookup serves every page in the same block). Past them a page's place is
unknown (None): it is not added, and a page the source already holds is kept (no evidence against it).
"""

from __future__ import annotations

import logging

from integrations.errors import ObjectGone, ProviderError, ProviderTransient, ReconnectNeeded
from integrations.notion.client import NotionClient

log = logging.getLogger(__name__)

MAX_DEPTH = 64
MAX_BLOCK_LOOKUPS = 1000


def is_gone(obj: dict) -> bool:
    return bool(obj.get("archived") or obj.get("in_trash"))


class Places:
    """The page or database each object sits in, its blocks retrieved once per listing."""

    def __init__(self, client: NotionClient, objects: list[dict]) -> None:
        self.client = client
        self.objects = {obj["id"]: obj for obj in objects}  # what search listed, by id
        self.block_owners: dict[str, str | None] = {}
        self.databases: set[str] = {obj["id"] for obj in objects if obj.get("object") == "database"}
        self.lookups = 0

    def owner(self, obj: dict) -> str | None:
        """The id of the page or database `obj` sits in: "" at the top of the workspace or in something
        not shared with us; None when the bounds left it unknown."""
        return self._owner_of(obj.get("parent") or {})

    def _owner_of(self, parent: dict) -> str | None:
        kind = parent.get("type", "")
        if kind == "page_id":
            return str(parent.get(kind) or "")
        if kind in ("database_id", "data_source_id"):
            # From API version 2025-09-03 a row sits in a data source, which names its database too.
            database_id = str(parent.get("database_id") or parent.get(kind) or "")
            self.databases.add(database_id)
            return database_id
        if kind == "block_id":
            return self._owner_of_block(str(parent.get("block_id") or ""))
        return ""  # the workspace, or a parent we don't sync from (an agent's instructions)

    def below(self, obj: dict, reached: set[str], *, through_pages: bool) -> bool:
        """Whether `obj` sits in something `reached`: its owner, or (`through_pages`) any ancestor, those
        search did not list retrieved directly. Unknown (the bounds) counts as below when `through_pages`:
        no evidence that it left."""
        current = obj
        for _ in range(MAX_DEPTH):
            owner = self.owner(current)
            if owner is None:
                return through_pages
            if owner in reached:
                return True
            if not owner or not through_pages:
                return False
            found = self._retrieve(owner)
            if found is None:
                return False
            current = found
        return through_pages

    def _retrieve(self, object_id: str) -> dict | None:
        if object_id not in self.objects:
            try:
                if object_id in self.databases:
                    found = self.client.database(object_id)
                else:
                    found = self.client.page(object_id)
            except ObjectGone:
                return None
            self.objects[object_id] = found
        return self.objects[object_id]

    def _owner_of_block(self, block_id: str) -> str | None:
        path: list[str] = []
        current = block_id
        owner: str | None = None  # deeper than MAX_DEPTH (or a cycle): unknown
        for _ in range(MAX_DEPTH):
            if current in self.block_owners:
                owner = self.block_owners[current]
                break
            if current in path:
                break  # a cycle: no workspace has one, but the walk must end
            if self.lookups >= MAX_BLOCK_LOOKUPS:
                log.warning("Notion listing: over %s block lookups; places left unknown", MAX_BLOCK_LOOKUPS)
                break
            self.lookups += 1
            path.append(current)
            try:
                block = self.client.block(current)
            except ObjectGone:
                owner = ""  # deleted, or in a page not shared with us
                break
            except (ProviderTransient, ReconnectNeeded):
                raise
            except ProviderError as exc:  # a refusal we can't act on: no evidence either way
                log.warning("Notion listing: block %s refused: %s", current, exc.detail)
                break
            parent = block.get("parent") or {}
            if parent.get("type") != "block_id":
                owner = self._owner_of(parent)
                break
            current = str(parent.get("block_id") or "")
        for visited in path:
            self.block_owners[visited] = owner
        return owner


def descendants(roots: set[str], places: Places) -> tuple[list[dict], set[str]]:
    """The pages below the roots (child pages at any depth, in any block; child databases' rows) among
    what search listed, and the ids of everything reached (roots, pages, databases)."""
    children: dict[str, list[dict]] = {}
    for obj in list(places.objects.values()):
        owner = places.owner(obj)
        if owner:
            children.setdefault(owner, []).append(obj)
    found: list[dict] = []
    reached = set(roots)
    frontier = [(root, 0) for root in roots]
    while frontier:
        object_id, depth = frontier.pop()
        if depth >= MAX_DEPTH:
            continue
        for child in children.get(object_id, []):
            if child["id"] in reached:
                continue
            reached.add(child["id"])
            frontier.append((child["id"], depth + 1))
            if child.get("object") == "page":
                found.append(child)
    return found, reached
