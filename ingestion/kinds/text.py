"""Pasted text: one document, kept word for word."""

from __future__ import annotations

import hashlib
from typing import cast

from django.conf import settings
from pydantic import field_validator

from ingestion.kinds.base import SourceKind
from ingestion.kinds.config import KindConfig
from sources.models import Document, Source

TITLE_FROM_TEXT_CHARS = 80


class TextConfig(KindConfig):
    content: str

    @field_validator("content")
    @classmethod
    def within_limit(cls, value: str) -> str:
        limit = settings.TEXT_SOURCE_MAX_CHARS
        if len(value) > limit:
            raise ValueError(f"Text is {len(value):,} characters; the limit is {limit:,}.")
        if not value.strip():
            raise ValueError("This is empty: paste the text to add.")
        return value


class TextKind(SourceKind):
    name = "text"
    label = "Text"
    icon = "lines"
    unit = ("text", "texts")
    config_model = TextConfig
    add_label = "Text"
    add_help = "Paste an answer, a policy, release notes: anything the agent should know word for word."
    form_fields = ("content",)

    # The registry validates a kind's config with its config_model, so the KindConfig is a TextConfig.

    def settings_of(self, config: KindConfig) -> dict:
        # the text itself is the document; only how it is cut is kept
        return cast(TextConfig, config).chunking()

    def default_title(self, config: KindConfig) -> str:
        """Pasted text without a title is named by its first non-empty line, as a note app would,
        cut at a word boundary so the sources list stays readable."""
        content = cast(TextConfig, config).content
        first = next((line.strip() for line in content.splitlines() if line.strip()), "")
        first = first.lstrip("#").strip()
        if len(first) <= TITLE_FROM_TEXT_CHARS:
            return first
        cut = first[:TITLE_FROM_TEXT_CHARS].rsplit(" ", 1)[0] or first[:TITLE_FROM_TEXT_CHARS]
        return cut.rstrip(" ,.;:") + "\u2026"

    def create(self, *, source: Source, config: KindConfig) -> None:
        content = cast(TextConfig, config).content
        Document.objects.create(
            source=source,
            title=source.title,
            text=content,
            content_hash=hashlib.sha256(content.encode()).hexdigest(),
        )
        Source.objects.filter(id=source.id).update(pages_total=1, state={"chars": len(content)})
