"""Google Docs, picked from what the connected account can read: single documents, or every Doc in a
folder. Each Doc is a document with its title and webViewLink (citations link to Google Docs). Re-sync is
incremental by Drive's `version` (falling back to modifiedTime); a trashed Doc, a 404/403 for it, or its
absence from a folder's complete listing removes it with its chunks."""

from __future__ import annotations

from pydantic import Field

from integrations.errors import ObjectGone
from integrations.google.client import DOC_MIME, FOLDER_MIME, DriveClient, quoted
from integrations.google.render import doc_text
from integrations.kind import ConnectedConfig, ConnectedKind, PickedItem
from integrations.models import Connection, Provider
from integrations.sync import Fetched, Item
from sources.models import Source


class GooglePick(PickedItem):
    type: str = Field(default="document", pattern=r"^(document|folder)$")


class GoogleDocsConfig(ConnectedConfig):
    provider = Provider.GOOGLE
    items: list[GooglePick] = Field(min_length=1, max_length=500)


def _item(found: dict) -> Item:
    return Item(
        object_id=found["id"],
        title=found.get("name", "") or "Untitled",
        url=found.get("webViewLink", ""),
        version=str(found.get("version") or found.get("modifiedTime", "")),
    )


class GoogleDocsKind(ConnectedKind):
    name = "gdoc"
    label = "Google Docs"
    icon = "file"
    provider = Provider.GOOGLE
    config_model = GoogleDocsConfig

    def pickable(
        self, *, connection: Connection, query: str, cursor: str | None
    ) -> tuple[list[dict], str | None]:
        kinds = f"(mimeType = {quoted(DOC_MIME)} or mimeType = {quoted(FOLDER_MIME)})"
        terms = [kinds, "trashed = false"] + ([f"name contains {quoted(query)}"] if query else [])
        answer = DriveClient(connection).list_files(query=" and ".join(terms), cursor=cursor)
        offered = [
            {
                "id": found["id"],
                "type": "folder" if found.get("mimeType") == FOLDER_MIME else "document",
                "title": found.get("name", "") or "Untitled",
                "url": found.get("webViewLink", ""),
                "edited": found.get("modifiedTime", ""),
            }
            for found in answer.get("files", [])
        ]
        return offered, answer.get("nextPageToken")

    def listing(self, *, source: Source, connection: Connection, known: list[str]) -> list[Item]:
        client = DriveClient(connection)
        items: dict[str, Item] = {}
        for pick in source.config["items"]:
            try:
                if pick.get("type") == "folder":
                    client.file(pick["id"])
                    query = " and ".join(
                        [
                            f"{quoted(pick['id'])} in parents",
                            f"mimeType = {quoted(DOC_MIME)}",
                            "trashed = false",
                        ]
                    )
                    for found in client.list_all(query=query):
                        items[found["id"]] = _item(found)
                else:
                    items[pick["id"]] = _item(client.file(pick["id"]))
            except ObjectGone:
                continue
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
