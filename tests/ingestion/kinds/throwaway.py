"""A kind that exists only in the tests: questions and answers, one document per pair. It is registered by
tests/ingestion/kinds/test_registry.py with one line, to prove that a kind is one module plus that line."""

from __future__ import annotations

import hashlib

from pydantic import Field

from ingestion.kinds.base import SourceKind
from ingestion.kinds.config import KindConfig
from sources.models import Document, Source


class Pair(KindConfig):
    question: str = Field(min_length=3)
    answer: str = Field(min_length=1)


class FaqConfig(KindConfig):
    pairs: list[Pair] = Field(min_length=1, max_length=100)


class FaqKind(SourceKind):
    name = "faq"
    label = "FAQ"
    unit = ("question", "questions")
    config_model = FaqConfig
    add_label = "FAQ"
    add_help = "Questions and their answers."

    def settings_of(self, config: FaqConfig) -> dict:
        return {}

    def create(self, *, source: Source, config: FaqConfig) -> None:
        for pair in config.pairs:
            text = f"{pair.question}\n{pair.answer}"
            Document.objects.create(
                source=source,
                title=pair.question,
                text=text,
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
            )
