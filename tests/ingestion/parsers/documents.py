"""The shared real documents and a cache of their parses, so each file is parsed once per test run."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from ingestion.parsers.base import ParseError, Segment
from ingestion.parsers.registry import parse_file

# tests/ingestion/parsers/ -> the repository -> its sibling shared/ folder, unless GROUNDED_SHARED_DATA
# names it (a git worktree sits one folder deeper than the main checkout).
SHARED_DATA = Path(
    os.environ.get("GROUNDED_SHARED_DATA") or Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
)
DOCUMENTS = SHARED_DATA / "documents"


def document(relative: str) -> Path:
    return DOCUMENTS / relative


@cache
def _outcome(relative: str) -> tuple[Segment, ...] | ParseError:
    path = document(relative)
    try:
        return tuple(parse_file(path, path.name))
    except ParseError as exc:
        return exc


def outcome(relative: str) -> tuple[Segment, ...] | ParseError:
    """The file's segments, or the ParseError it was refused with (parsed once per test run)."""
    return _outcome(relative)


def segments(relative: str) -> tuple[Segment, ...]:
    outcome = _outcome(relative)
    if isinstance(outcome, ParseError):
        raise AssertionError(f"{relative} failed: {outcome.message} ({outcome.detail})")
    return outcome


def text(relative: str) -> str:
    return "\n\n".join(segment.text for segment in segments(relative))


def failure(relative: str) -> ParseError:
    outcome = _outcome(relative)
    assert isinstance(outcome, ParseError), f"{relative} parsed, but a failure was expected"
    return outcome
