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
