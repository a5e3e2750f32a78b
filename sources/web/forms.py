"""What the admin UI's forms submit, turned into lifecycle calls: the "Add source" dialog (one form carrying
every kind's inputs, of which the chosen kind's fields are used) and the "Discover pages" list."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from agents.models import Agent
from checked_http.errors import FetchError
from ingestion import chunk_settings, labels, lifecycle
from ingestion.crawl.discover import discover
from ingestion.crawl.fetch import fetch_policy
from ingestion.kinds.config import SEPARATOR_ESCAPES, KindError
from ingestion.kinds.registry import addable_kinds, get_kind
from ingestion.kinds.upload import UploadTooLarge
from ingestion.kinds.url import UrlKind
from sources.models import Source, Workspace
from sources.quotas import QuotaExceeded


def source_add(
    *, workspace: Workspace, agent: Agent, form: dict[str, Any], files: list, content_length: int
) -> list[Source]:
    """Raises KindError (field -> messages), UploadTooLarge or QuotaExceeded, like the lifecycle calls it
    makes."""
    offered = {k.name: k for k in addable_kinds()}
    kind = offered.get(str(form.get("kind", "")))
    title = str(form.get("title", ""))
    if kind is None:
        names = ", ".join((k.add_label or "").lower() for k in offered.values())  # addable: all have one
        raise KindError({"kind": [f"Choose what to add: {names}."]})
    if "file" in kind.form_fields:
        ceiling = settings.UPLOAD_MAX_FILE_BYTES * settings.UPLOAD_MAX_FILES_PER_REQUEST + 1_000_000
        if content_length > ceiling:  # refused before anything is stored
            raise UploadTooLarge("The upload is larger than we accept.")
        return lifecycle.upload_create(
            workspace=workspace, agent_id=agent.id, files=files, title=title, labels=form_labels(form)
        )
    payload: dict[str, Any] = dict(chunk_settings.validated(form_chunking(form) or {}))
    for field in kind.form_fields:
        value = str(form.get(field, "") or "")
        if value.strip() or (
            field in kind.config_model.model_fields and kind.config_model.model_fields[field].is_required()
        ):
            payload[field] = value
    schedule = (str(form.get("schedule") or "") or None) if kind.resyncable else None
    return [
        lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind=kind.name,
            title=title,
            payload=payload,
            schedule=schedule,
            labels=form_labels(form),
        )
    ]


def source_settings(*, source: Source, form: dict[str, Any]) -> Source:
    """The source's settings form: title, schedule (for kinds that sync again), pause, hidden while paused,
    keep short pages (web pages), audiences, metadata and chunking (a change of those three indexes it again,
    once). Unticked boxes are absent from a form post, so the switches are read as present-or-not."""
    kind = get_kind(source.kind)
    schedule = str(form.get("schedule") or "") if kind.resyncable else None
    keeps_short = "keep_short_pages" in kind.config_model.model_fields
    new_labels = form_labels(form, empty_is_public=True)
    chunking = form_chunking(form)
    if chunking is not None:
        chunk_settings.validated(chunking)  # checked before anything is written
    source = lifecycle.source_update(
        source=source,
        title=str(form.get("title", source.title)),
        schedule=schedule or None,
        paused=_ticked(form.get("paused")),
        hidden_while_paused=_ticked(form.get("hidden_while_paused")),
        keep_short_pages=_ticked(form.get("keep_short_pages")) if keeps_short else None,
    )
    lifecycle.settings_then_labels(
        source=source,
        chunking=chunking,
        set_labels=lambda: (
            bool(new_labels)
            and lifecycle.source_set_labels(
                source=source, audiences=new_labels.get("audience"), metadata=new_labels.get("metadata")
            )
        ),
    )
    return source


def form_chunking(form: dict[str, Any]) -> dict[str, Any] | None:
    """The chunk size, overlap and record separator as typed (empty: the deployment's default), or None
    when the form has none of them (a post from a page without the chunking fields)."""
    if not any(name in form for name in chunk_settings.FIELDS):
        return None
    typed = {name: str(form.get(name) or "") for name in chunk_settings.FIELDS}
    for name in ("chunk_size", "chunk_overlap"):
        value = typed[name].strip()
        if value and not value.isdigit():
            raise KindError({name: ["A whole number of characters, or empty for the default."]})
    return typed


def chunking_text(source: Source) -> dict[str, str]:
    """A source's chunking as the settings form shows it: the separator with its escapes (\\n) typed."""
    shown = {name: source.config.get(name) for name in chunk_settings.FIELDS}
    separator = shown["record_separator"] or ""
    for typed, meant in SEPARATOR_ESCAPES.items():
        separator = separator.replace(meant, typed)
    return {
        "chunk_size": "" if shown["chunk_size"] is None else str(shown["chunk_size"]),
        "chunk_overlap": "" if shown["chunk_overlap"] is None else str(shown["chunk_overlap"]),
        "record_separator": separator,
    }


def form_labels(form: dict[str, Any], *, empty_is_public: bool = False) -> dict[str, Any]:
    """Audiences (comma-separated) and metadata (`key: value` lines, or a JSON object) as typed in the add
    and settings forms, validated as Source.config entries. Raises KindError by field."""
    audiences: Any = None
    if "audiences" in form and (str(form["audiences"]).strip() or empty_is_public):
        audiences = [a for a in str(form["audiences"]).split(",")]
    metadata: Any = None
    if "metadata" in form and (str(form["metadata"]).strip() or empty_is_public):
        metadata = _metadata_lines(str(form["metadata"]))
    return labels.labels_config(audiences=audiences, metadata=metadata)


def _metadata_lines(text: str) -> Any:
    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise KindError({"metadata": [f"Not valid JSON: {exc}."]}) from exc
    metadata: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise KindError(
                {"metadata": [f"Write one `key: value` per line; {line.strip()!r} has no colon."]}
            )
        metadata[key.strip()] = _typed(value.strip())
    return metadata


def _typed(value: str) -> Any:
    """`3`, `true` and `["a", "b"]` keep their type (as labels_text shows them); anything else is text."""
    if value[:1] in "[-0123456789" or value in ("true", "false"):
        try:
            return json.loads(value)
        except ValueError:
            pass
    return value


def labels_text(source: Source) -> tuple[str, str]:
    """A source's audiences and metadata as the forms show them."""
    audiences, metadata = labels.source_labels(source)
    shown = "" if audiences == [labels.PUBLIC] else ", ".join(audiences)
    lines = "\n".join(
        f"{key}: {json.dumps(value) if not isinstance(value, str) else value}"
        for key, value in metadata.items()
    )
    return shown, lines


def _ticked(value: Any) -> bool:
    return str(value).lower() in ("on", "true", "1", "yes")


def url_sources_create(*, workspace: Workspace, agent: Agent, pages: list[dict]) -> tuple[list[Source], dict]:
    """One web-page source per picked page; pages that fail validation are reported by address, the others
    are still added."""
    created: list[Source] = []
    errors: dict[str, list[str]] = {}
    for page in pages[: settings.CRAWL_MAX_PAGES_PER_SOURCE]:
        url = str(page.get("url") or "").strip()
        title = str(page.get("title") or "").strip()[:300]
        try:
            created.append(
                lifecycle.source_create(
                    workspace=workspace,
                    agent_id=agent.id,
                    kind=UrlKind.name,
                    title=title,
                    payload={"url": url},
                )
            )
        except KindError as exc:
            errors[url or "url"] = [m for messages in exc.errors.values() for m in messages]
        except QuotaExceeded as exc:
            errors[url or "url"] = [exc.message]  # the rest would be refused the same way
            break
    return created, errors


def discover_pages(domain: str) -> list[dict[str, Any]]:
    """The pages found on a domain, for the "Discover" list; a fetch problem becomes a field error."""
    domain = domain.strip()
    if not domain:
        raise KindError({"domain": ["Type a domain, like example.com."]})
    if len(domain) > 300:
        raise KindError({"domain": ["A domain is at most 300 characters."]})
    try:
        pages = discover(domain, fetch_policy())
    except FetchError as exc:
        raise KindError({"domain": [exc.message]}) from exc
    return [{"url": p.url, "title": p.title or "", "found_by": p.found_by} for p in pages]
