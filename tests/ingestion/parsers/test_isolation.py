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


def test_the_child_reports_where_it_has_got_to_while_it_parses(monkeypatch) -> None:
    from ingestion.parsers import isolation

    monkeypatch.setattr(isolation, "PROGRESS_POLL_S", 0.2)
    heard: list[dict] = []
    assert run_isolated(
        f"{TARGETS}:slow_pages", 8, 0.3, timeout_s=60, memory_mb=None, on_progress=heard.append
    )
    assert heard, "no progress reached the parent in ~2.4 s of parsing"
    assert {report["stage"] for report in heard} == {"parsing"} and {r["total"] for r in heard} == {8}
    done = [report["done"] for report in heard]
    assert done == sorted(done) and len(set(done)) == len(done)  # passed on only when it changed
    assert done[-1] == 8  # a stage's last page is always reported, whatever the throttle
    # Throttled in the child: the first page, one a second, the last; not every page.
    assert len(done) < 8


def test_a_parse_that_reports_progress_still_stops_at_the_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(ParseError) as caught:
        run_isolated(f"{TARGETS}:hang", timeout_s=1.5, memory_mb=None, on_progress=lambda report: None)
    assert caught.value.reason == "timeout"
    assert time.monotonic() - started < 10


def test_progress_is_written_for_the_first_and_last_page_and_once_a_second_between(tmp_path, monkeypatch):
    import json

    from ingestion.parsers import base

    target = tmp_path / "progress.json"
    monkeypatch.setenv(base.PROGRESS_ENV, str(target))
    monkeypatch.setattr(base, "_last_report", (-base.PROGRESS_EVERY_S, ""))
    base.report_progress("parsing", 1, 500)
    for page in range(2, 500):
        base.report_progress("parsing", page, 500)  # all within a second: none written
    assert json.loads(target.read_text()) == {"stage": "parsing", "done": 1, "total": 500}
    base.report_progress("parsing", 500, 500)
    assert json.loads(target.read_text())["done"] == 500
    base.report_progress("ocr", 1, 3)  # a new stage is written at once
    assert json.loads(target.read_text()) == {"stage": "ocr", "done": 1, "total": 3}
    monkeypatch.delenv(base.PROGRESS_ENV)
    base.report_progress("ocr", 3, 3)  # no one asked: nothing written
    assert json.loads(target.read_text())["done"] == 1
