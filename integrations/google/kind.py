"""Google Docs, picked from what the connected account can read: single documents, or every Doc in a
folder. Each Doc is a document with its title and webViewLink (citations link to Google Docs). A
shortcut (in a folder, or picked) stands for its target Doc; a Doc reached twice (two picked folders, a
shortcut and the Doc) is one document, so a Doc moved between picked folders stays as it was. Re-sync is
incremental by Drive's `version` (falling back to modifiedTime). A Doc leaves, with its chunks, on
evidence only: `trashed: true`, a 404/403 for it, or files.get showing it in none of the picked folders;
restored from the trash, it comes back with the next sync."""

from __future__ import annotations

from pydantic import Field

from integrations.errors import ObjectGone
from integrations.google.client import DOC_MIME, FOLDER_MIME, SHORTCUT_MIME, DriveClient, quoted
from integrations.google.render import doc_text
from integrations.kind import ConnectedConfig, ConnectedKind, PickedItem
from integrations.models import Connection, Provider
from integrations.sync import Fetched, Item
from sources.models import Source


class GooglePick(PickedItem):
    type: str = Field(default="document", pattern=r"^(document|folder)$")


class GoogleDocsConfig(ConnectedConfig):
    provider = Provider.GOOGLE
    # Narrower items than the base's, which pydantic validates as GooglePick: the point of the override,
    # though mypy holds a list field invariant.
    items: list[GooglePick] = Field(min_length=1, max_length=500)  # type: ignore[assignment]


def _item(found: dict) -> Item:
    return Item(
        object_id=found["id"],
        title=found.get("name", "") or "Untitled",
        url=found.get("webViewLink", ""),
        version=str(found.get("version") or found.get("modifiedTime", "")),
    )


def _docs_in(folder_id: str) -> str:
    """The files.list query for a folder's Docs and shortcuts (to Docs, we hope), not trashed."""
    kinds = f"(mimeType = {quoted(DOC_MIME)} or mimeType = {quoted(SHORTCUT_MIME)})"
    return " and ".join([f"{quoted(folder_id)} in parents", kinds, "trashed = false"])


def _doc_of(client: DriveClient, listed: dict) -> dict | None:
    """The Doc a listed file is: itself, or a shortcut's target Doc (None: a shortcut to something else,
    or to a Doc that is trashed or not shared)."""
    if listed.get("mimeType") == DOC_MIME:
        return listed
    if (listed.get("shortcutDetails") or {}).get("targetMimeType") != DOC_MIME:
        return None
    try:
        return client.target(listed)
    except ObjectGone:
        return None


class GoogleDocsKind(ConnectedKind):
    name = "gdoc"
    label = "Google Docs"
    icon = "file"
    provider = Provider.GOOGLE
    config_model = GoogleDocsConfig

    def pickable(
        self, *, connection: Connection, query: str, cursor: str | None
    ) -> tuple[list[dict], str | None]:
        kinds = " or ".join(f"mimeType = {quoted(mime)}" for mime in (DOC_MIME, FOLDER_MIME, SHORTCUT_MIME))
        terms = [f"({kinds})", "trashed = false"] + ([f"name contains {quoted(query)}"] if query else [])
        answer = DriveClient(connection).list_files(query=" and ".join(terms), cursor=cursor)
        offered = []
        for found in answer.get("files", []):
            # A shortcut is offered as what it points to (its listing follows it).
            mime = (found.get("shortcutDetails") or {}).get("targetMimeType") or found.get("mimeType")
            if mime not in (DOC_MIME, FOLDER_MIME):
                continue
            offered.append(
                {
                    "id": found["id"],
                    "type": "folder" if mime == FOLDER_MIME else "document",
                    "title": found.get("name", "") or "Untitled",
                    "url": found.get("webViewLink", ""),
                    "edited": found.get("modifiedTime", ""),
                }
            )
        return offered, answer.get("nextPageToken")

    def listing(self, *, source: Source, connection: Connection, known: list[str]) -> list[Item]:
        client = DriveClient(connection)
        items: dict[str, Item] = {}
        folders: set[str] = set()
        for pick in source.config["items"]:
            try:
                # A picked shortcut stands for its target; a Doc is one document however it was reached.
                found = client.target(client.file(pick["id"]))
                if found.get("mimeType") == FOLDER_MIME:
                    folders.add(found["id"])
                    for listed in client.list_all(query=_docs_in(found["id"])):
                        doc = _doc_of(client, listed)
                        if doc is not None:
                            items[doc["id"]] = _item(doc)
                elif found.get("mimeType") == DOC_MIME:
                    items[found["id"]] = _item(found)
            except ObjectGone:
                continue  # trashed, deleted or unshared: its documents leave with the listing
        # A known Doc the listings left out leaves on evidence only: files.get says it is trashed, gone
        # (404/403), or in none of the picked folders (moved out, its shortcut removed). One still in a
        # picked folder stays.
        for object_id in set(known) - set(items):
            try:
                found = client.file(object_id)
            except ObjectGone:
                continue
            if found.get("mimeType") == DOC_MIME and folders & set(found.get("parents") or []):
                items[object_id] = _item(found)
        return list(items.values())

    def fetch(self, *, source: Source, connection: Connection, object_id: str) -> Fetched:
        client = DriveClient(connection)
        found = client.file(object_id)
        item = _item(found)
        return Fetched(
            title=item.title,
            url=item.url,
            text=doc_text(item.title, client.export_text(object_id)),
            version=item.version,
        )
