"""A source's audiences and metadata: who may retrieve its passages, and what search can filter them on.

They are kept in Source.config (`audience`, `metadata`) beside the kind's own settings, and copied onto every
chunk by ingestion.indexing._build_chunks. The rules are those of a pushed document's (ingestion.push.inputs):
metadata keys are identifiers that Grounded does not set itself, values a string, number, boolean or a list of
them; audiences are 1 to 50 short names, ["public"] when none are given. One key differs: a source may say
its `lang` (its documents' detected language is used otherwise). Changing them indexes the source again, so it
is a write of ingestion.lifecycle (source_set_labels).
"""

from __future__ import annotations

from typing import Any

from ingestion.kinds.config import KindError
from ingestion.push.inputs import (
    MAX_AUDIENCES,
    MAX_LIST_ITEMS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    RESERVED_METADATA,
)
from retrieval.stores.base import FILTER_KEY
from sources.models import Source

PUBLIC = "public"
#: Keys Grounded sets on chunks that a source may state instead: its language, when detection is wrong.
SOURCE_MAY_SET = frozenset({"lang"})
SCALARS = (str, int, float, bool)


def clean_audiences(value: Any) -> list[str]:
    """Raises KindError({"audiences": ...}); an empty list means public."""
    message = f"Give up to {MAX_AUDIENCES} audiences of 1 to 100 characters, such as staff or customers:gold."
    if not isinstance(value, list) or any(not isinstance(a, str) for a in value):
        raise KindError({"audiences": [message]})
    cleaned = list(dict.fromkeys(a.strip() for a in value if a.strip()))
    if len(cleaned) > MAX_AUDIENCES or any(len(a) > 100 for a in cleaned):
        raise KindError({"audiences": [message]})
    return cleaned or [PUBLIC]


def clean_metadata(value: Any) -> dict[str, Any]:
    """Raises KindError({"metadata": ...})."""
    if not isinstance(value, dict):
        raise KindError({"metadata": ['A JSON object, such as {"product": "billing", "lang": "de"}.']})
    if len(value) > MAX_METADATA_KEYS:
        raise KindError({"metadata": [f"At most {MAX_METADATA_KEYS} metadata keys."]})
    problems = []
    for key, item in value.items():
        items = item if isinstance(item, list) else [item]
        if not isinstance(key, str) or not FILTER_KEY.match(key):
            problems.append(f"{key!r}: a key is letters, digits and underscores, not starting with a digit.")
        elif key in RESERVED_METADATA - SOURCE_MAY_SET:
            problems.append(f"{key!r} is set by Grounded; use another key (audiences go in `audiences`).")
        elif not all(isinstance(v, SCALARS) for v in items) or len(items) > MAX_LIST_ITEMS:
            problems.append(f"{key!r}: a string, number or boolean, or a list of up to {MAX_LIST_ITEMS}.")
        elif any(isinstance(v, str) and len(v) > MAX_METADATA_VALUE_CHARS for v in items):
            problems.append(f"{key!r}: values are at most {MAX_METADATA_VALUE_CHARS} characters.")
    if problems:
        raise KindError({"metadata": problems})
    return value


def labels_config(*, audiences: Any = None, metadata: Any = None) -> dict[str, Any]:
    """What goes into Source.config for these labels (validated); nothing for what was not given."""
    config: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name, value, clean in (
        ("audience", audiences, clean_audiences),
        ("metadata", metadata, clean_metadata),
    ):
        if value is None:
            continue
        try:
            config[name] = clean(value)
        except KindError as exc:
            errors.update(exc.errors)
    if errors:
        raise KindError(errors)
    return config


def source_labels(source: Source) -> tuple[list[str], dict[str, Any]]:
    return list(source.config.get("audience") or [PUBLIC]), dict(source.config.get("metadata") or {})
