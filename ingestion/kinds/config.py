"""What a user may set for a source, shared by every kind: the config model each kind's own extends, and
the error that says, by field, what to correct.

A leaf: it imports nothing of the project, so the registry, chunking settings, the forms and the API can
validate a kind's settings without pulling in what indexes a source (a contract in pyproject.toml says so).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator


class KindError(ValueError):
    """Something a person should correct, by field: nothing was written."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


#: Escapes a person may type for a record separator in a one-line field.
SEPARATOR_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r"}
#: Whitespace is the separator itself here ("\n" for JSON Lines), so it is not stripped.
Separator = Annotated[str, StringConstraints(strip_whitespace=False, min_length=1, max_length=20)]


class KindConfig(BaseModel):
    """What a user may set for a source of a kind, validated before anything is stored.

    Every kind also accepts how its text is cut into passages (ingestion/indexing.py): a chunk size and
    overlap in characters (empty: the deployment's CHUNK_* settings), and a record separator, for text
    made of records (JSON Lines, FAQ dumps separated by `---`, CSV-like rows): records are packed whole,
    as many as fit a chunk, empty ones dropped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    chunk_size: int | None = Field(default=None, ge=200, le=8000)
    chunk_overlap: int | None = Field(default=None, ge=0, le=2000)
    record_separator: Separator | None = None

    @field_validator("record_separator", mode="before")
    @classmethod
    def _unescape(cls, value: Any) -> Any:
        if isinstance(value, str):
            for typed, meant in SEPARATOR_ESCAPES.items():
                value = value.replace(typed, meant)
            return value or None
        return value

    @model_validator(mode="after")
    def _overlap_fits(self) -> KindConfig:
        size, overlap = self.chunk_size, self.chunk_overlap
        if size is not None and overlap is not None and overlap * 4 > size:
            raise ValueError("The overlap may be at most a quarter of the chunk size.")
        return self

    def chunking(self) -> dict[str, Any]:
        """The chunking settings that were set, as Source.config keeps them."""
        return self.model_dump(include={"chunk_size", "chunk_overlap", "record_separator"}, exclude_none=True)


class NoConfig(KindConfig):
    pass
