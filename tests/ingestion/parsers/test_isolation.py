"""A parse in a child process: a hang, a memory blow-up or a crash fails that file and nothing else."""

from __future__ import annotations

import os
import time

import pytest

from ingestion.parsers.base import ParseError
from ingestion.parsers.isolation import run_isolated
from ingestion.parsers.registry import parse_file_isolated
from tests.ingestion.parsers.documents import document

TARGETS = "tests.ingestion.parsers.isolation_targets"


def test_isolated_parse_returns_the_same_segments_as_in_process() -> None:
    parsed = parse_file_isolated(document("csv/utf8-bom.csv"), "data.csv", timeout_s=60, memory_mb=2048)
    assert [segment.text for segment in parsed] == ["foo: 1 | bar: 2 | baz: 3", "foo: 4 | bar: 5 | baz: ʤ"]


def test_parse_errors_cross_the_process_boundary_intact() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file_isolated(
            document("xlsx/password-protected.xlsx"), "book.xlsx", timeout_s=60, memory_mb=2048
        )
    assert caught.value.reason == "password_protected"
    assert caught.value.final is True


def test_a_hanging_parser_is_stopped_at_the_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(ParseError) as caught:
        run_isolated(f"{TARGETS}:hang", timeout_s=1.0, memory_mb=None)
    assert caught.value.reason == "timeout"
    assert "took too long" in caught.value.message
    assert time.monotonic() - started < 10


def test_a_memory_blow_up_fails_with_a_memory_error() -> None:
    with pytest.raises(ParseError) as caught:
        run_isolated(f"{TARGETS}:allocate", 4096, timeout_s=30, memory_mb=1024)
    assert caught.value.reason == "memory"
    assert "needs too much memory" in caught.value.message


def test_a_crashing_parser_leaves_the_caller_alive() -> None:
    with pytest.raises(ParseError) as caught:
        run_isolated(f"{TARGETS}:crash", timeout_s=30, memory_mb=None)
    assert caught.value.reason == "crash"
    assert run_isolated(f"{TARGETS}:pid", timeout_s=30, memory_mb=None) != os.getpid()
