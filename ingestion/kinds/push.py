"""Documents the customer pushes to us (the documents API, `manage.py ingest`), each under their own id.

An agent has at most one source of this kind, made with its first pushed document and removed with its
last (ingestion/push/documents.py). Its documents are written by that service, never by a payload of
`POST /sources`; indexing, reindex, preview and delete are the shared ones: the kept text is indexed again.
"""

from __future__ import annotations

from typing import Any

from ingestion.kinds.base import SourceKind
from ingestion.kinds.config import KindConfig, KindError
from sources.models import Source


class PushKind(SourceKind):
    name = "push"
    label = "Pushed documents"
    icon = "cloud-upload"
    unit = ("document", "documents")
    # Pushed documents carry the customer's own link (a docs page, a help-centre article).
    cites_urls = True

    def validate(self, payload: dict[str, Any]) -> KindConfig:
        raise KindError(
            {"kind": ["Pushed documents are sent to /api/v1/agents/{agent}/documents/{external_id}."]}
        )

    def address(self, source: Source) -> str:
        return "Sent through the documents API"
