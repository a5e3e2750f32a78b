"""Misbehaving "parsers" for the isolation tests; they run inside the child process."""

from __future__ import annotations

import os
import time


def hang() -> None:
    time.sleep(600)


def allocate(megabytes: int) -> int:
    hoard = bytearray(megabytes * 1024 * 1024)
    return len(hoard)


def crash() -> None:
    os.abort()


def pid() -> int:
    return os.getpid()


def slow_pages(pages: int, seconds_each: float) -> int:
    """A parser that reads `pages` pages slowly and says where it is, as the PDF parser does."""
    from ingestion.parsers.base import report_progress

    for page in range(1, pages + 1):
        report_progress("parsing", page, pages)
        time.sleep(seconds_each)
    return pages
