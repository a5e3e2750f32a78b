"""Source kinds by name, each a class in its own module, imported when first used.

Adding a kind is one module (a SourceKind subclass) plus one line here; nothing else branches on a kind's
name (tests/ingestion/kinds/test_registry.py checks that).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ingestion.kinds.config import KindConfig, KindError

if TYPE_CHECKING:
    # Only the kinds' modules import SourceKind (through _load): what asks a kind for its status or its
    # settings (ingestion.status, the forms) then does not import what indexes a source.
    from ingestion.kinds.base import SourceKind

KINDS: dict[str, str] = {
    "text": "ingestion.kinds.text.TextKind",
    "url": "ingestion.kinds.url.UrlKind",
    "sitemap": "ingestion.kinds.sitemap.SitemapKind",
    "site": "ingestion.kinds.site.SiteKind",
    "feed": "ingestion.kinds.feed.FeedKind",
    "auto": "ingestion.kinds.auto.AutoKind",
    "upload": "ingestion.kinds.upload.UploadKind",
    "push": "ingestion.kinds.push.PushKind",
    "notion": "integrations.notion.kind.NotionKind",
    "gdoc": "integrations.google.kind.GoogleDocsKind",
}


@cache
def _load(dotted: str) -> SourceKind:
    module_name, class_name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)()


def get_kind(name: str) -> SourceKind:
    """The kind of that name; KindError for a name no registered kind has."""
    dotted = KINDS.get(name)
    if dotted is None:
        known = ", ".join(sorted(KINDS))
        raise KindError({"kind": [f"Unknown source kind {name!r}; known kinds: {known}."]})
    return _load(dotted)


def all_kinds() -> list[SourceKind]:
    return [_load(dotted) for dotted in KINDS.values()]


def addable_kinds() -> list[SourceKind]:
    """What the "Add source" dialog offers, in registry order."""
    return [kind for kind in all_kinds() if kind.add_label]


def fetching_kind_names() -> list[str]:
    return [kind.name for kind in all_kinds() if kind.fetches_pages]


def validate_config(kind_name: str, payload: dict[str, Any]) -> KindConfig:
    """The kind's validated config, or KindError with each problem under its field."""
    kind = get_kind(kind_name)
    try:
        return kind.validate(payload)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            field_name = ".".join(str(p) for p in error["loc"]) or "non_field_errors"
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "missing":
                message = "This field is required."
            errors.setdefault(field_name, []).append(message)
        raise KindError(errors) from exc
