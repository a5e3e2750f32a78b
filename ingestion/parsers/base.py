"""What every parser shares: the segments it returns, the error it raises, and the base class it extends.

A parser is a small class that says how well it handles a sniffed file type (`score`) and turns a file into
segments (`parse`). The registry asks every parser for its score and tries the best ones first.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar


@dataclass
class Segment:
    """A piece of a document that keeps its meaning on its own: a page, a section, a sheet row."""

    text: str
    title: str = ""
    meta: dict = field(default_factory=dict)


class ParseError(Exception):
    """A file that cannot be turned into text.

    `message` is written for the person who uploaded the file (what happened, what to do); `detail` is for
    operators (library, exception, limits). `reason` is a short stable code for the UI and for tests.
    `final` says that no other parser can do better (a password, a zip bomb), so the registry stops there.
    """

    def __init__(
        self, message: str, detail: str = "", *, reason: str = "unreadable", final: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message
        self.reason = reason
        self.final = final

    def __reduce__(self) -> tuple:
        # Keyword-only fields survive the trip back from the isolated child process.
        return (_rebuild_parse_error, (self.message, self.detail, self.reason, self.final))


def _rebuild_parse_error(message: str, detail: str, reason: str, final: bool) -> ParseError:
    return ParseError(message, detail, reason=reason, final=final)


def corrupt(detail: str) -> ParseError:
    return ParseError(
        "The file is truncated or corrupt. Download or export it again and upload the new copy.",
        detail,
        reason="corrupt",
    )


def password_protected(detail: str) -> ParseError:
    return ParseError(
        "The file is password protected. Remove the password (save an unprotected copy) and upload it again.",
        detail,
        reason="password_protected",
        final=True,
    )


def no_text(detail: str) -> ParseError:
    return ParseError(
        "No text was found in the file: it is empty or holds only images.",
        detail,
        reason="no_text",
    )


@dataclass(frozen=True)
class ParseOptions:
    """Deployment choices for parsing. Picklable, so the isolated child gets the same ones."""

    # Tesseract language codes joined with '+', e.g. "eng+deu"; each needs its tesseract-ocr-LANG package.
    ocr_languages: str = field(default_factory=lambda: os.environ.get("GROUNDED_OCR_LANGUAGES", "eng"))
    ocr_enabled: bool = True
    tesseract_cmd: str = "tesseract"
    ocr_dpi: int = 200
    # OCR costs seconds per page; a 500-page scan is better refused than left to run for an hour.
    ocr_max_pages: int = 50
    soffice_cmd: str = "soffice"
    soffice_timeout_s: float = 120.0


class Parser:
    """Turns one family of files into segments. Subclasses set `name` and implement both methods."""

    name: ClassVar[str] = "parser"

    def score(self, sniffed_type: str, filename: str) -> int:
        """How well this parser handles the file: 0 = not at all, 100 = made for it."""
        raise NotImplementedError

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        raise NotImplementedError


def extension(filename: str) -> str:
    """The lower-case extension without the dot; the name is only a hint, never a path."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


# Where a long parse has got to ("page 3 of 15"), for the sources page. The isolated child writes it to the
# file its parent names in this variable; the parent passes it on (ingestion.parsers.isolation). One small
# file write a second at most, besides the first and last page of each stage; nothing at all when no one
# asked for it (parsing in-process, tests).
PROGRESS_ENV = "GROUNDED_PARSE_PROGRESS"
PROGRESS_EVERY_S = 1.0
_last_report: tuple[float, str] = (-PROGRESS_EVERY_S, "")


def report_progress(stage: str, done: int = 0, total: int = 0) -> None:
    global _last_report
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    now = time.monotonic()
    last_at, last_stage = _last_report
    if stage == last_stage and done != total and now - last_at < PROGRESS_EVERY_S:
        return
    _last_report = (now, stage)
    partial = f"{path}.part"
    with open(partial, "w") as out:
        json.dump({"stage": stage, "done": done, "total": total}, out)
    os.replace(partial, path)  # the parent never reads half a file
