"""A source's audiences and metadata: who may retrieve its passages, and what search can filter them on.

They are kept in Source.config (`audience`, `metadata`) beside the kind's own settings, and copied onto every
chunk by ingestion.indexing._build_chunks. The rules are those of a pushed document's (ingestion.push.inputs):
metadata keys are identifiers that Grounded does not set itself, values a string, number, boolean or a list of
them; audiences are 1 to 50 short names, ["public"] when none are given. One key differs: a source may say
its `lang` (its documents' detected language is used otherwise).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ingestion.kinds.base import KindError
from ingestion.push.inputs import (
    MAX_AUDIENCES,
    MAX_LIST_ITEMS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    RESERVED_METADATA,
)
from retrieval import cache as semantic_cache
from retrieval.stores.base import FILTER_KEY
from sources.models import ACTIVE_STATUSES, Source
from sources.tenancy import workspace_scope

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


def source_set_labels(*, source: Source, audiences: Any = None, metadata: Any = None) -> bool:
    """Give a source new audiences and/or metadata, and index it again so every chunk carries them (the
    vectors and keyword postings of both stores are rewritten with the chunks). Returns whether anything
    changed. A source being processed is refused: its chunks would carry old and new labels mixed."""
    from ingestion.lifecycle import source_reindex

    changes = labels_config(audiences=audiences, metadata=metadata)
    current_audiences, current_metadata = source_labels(source)
    changed = {
        name: value
        for name, value in changes.items()
        if value != (current_audiences if name == "audience" else current_metadata)
    }
    if not changed:
        return False
    with workspace_scope(source.workspace_id), transaction.atomic():
        locked = Source.objects.select_for_update().get(id=source.id)
        if locked.status in ACTIVE_STATUSES:
            field = "audiences" if "audience" in changed else "metadata"
            raise KindError({field: ["This source is being processed; change it once it has finished."]})
        locked.config = {**locked.config, **changed}
        Source.objects.filter(id=source.id).update(config=locked.config)
        source.config = locked.config
        if locked.chunks_count or locked.documents.exists():
            source_reindex(source=locked)
    semantic_cache.invalidate(workspace_id=source.workspace_id, agent_id=source.agent_id)
    return True
