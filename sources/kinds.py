"""One validated configuration per source kind.

A kind is registered with the pydantic model that validates what the API accepts for it. Only kinds
whose ingestion is built are registered; anything else is refused as an unknown kind.
"""

from __future__ import annotations

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class KindConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class TextConfig(KindConfig):
    content: str = Field(min_length=1)

    @field_validator("content")
    @classmethod
    def within_limit(cls, value: str) -> str:
        limit = settings.TEXT_SOURCE_MAX_CHARS
        if len(value) > limit:
            raise ValueError(f"Text is {len(value):,} characters; the limit is {limit:,}.")
        if not value.strip():
            raise ValueError("Text is empty.")
        return value


KINDS: dict[str, type[KindConfig]] = {
    "text": TextConfig,
}


class KindError(ValueError):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def validate_config(kind: str, payload: dict) -> KindConfig:
    config_class = KINDS.get(kind)
    if config_class is None:
        known = ", ".join(sorted(KINDS))
        raise KindError({"kind": [f"Unknown source kind {kind!r}; known kinds: {known}."]})
    try:
        return config_class.model_validate(payload)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            field_name = ".".join(str(p) for p in error["loc"]) or "non_field_errors"
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "missing":
                message = "This field is required."
            errors.setdefault(field_name, []).append(message)
        raise KindError(errors) from exc
