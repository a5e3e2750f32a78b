"""What every parser shares: the segments it returns, the error it raises, and the base class it extends.

A parser is a small class that says how well it handles a sniffed file type (`score`) and turns a file into
segments (`parse`). The registry asks every parser for its score and tries the best ones first.
"""

from __future__ import annotations

import os
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
