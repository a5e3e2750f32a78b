"""The fault harness's short version (what CI runs; `make chaos` runs every fault): a clean crawl, then a
pool process killed and a whole worker killed mid-crawl, on a worker set, PostgreSQL and Redis the script
starts itself. Every page must settle with no chunk duplicated or lost and no orphan."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.factories import ROOT

pytestmark = pytest.mark.worker


@pytest.mark.skipif(
    not (shutil.which("redis-server") and shutil.which("pg_config")),
    reason="needs redis-server and PostgreSQL",
)
def test_killed_pool_processes_and_workers_lose_and_duplicate_nothing(tmp_path):
    out = tmp_path / "rows.json"
    run = subprocess.run(
        [sys.executable, "scripts/chaos.py", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {row["scenario"]: row for row in json.loads(out.read_text())}
    assert list(rows) == ["clean", "pool_kill", "worker_kill"]
    clean = rows["clean"]
    assert clean["done"] > 70  # the Flask docs and three files
    for row in rows.values():
        assert row["settled"] and row["in_flight"] == 0 and row["unclassed_failures"] == 0
        assert row["duplicated_chunks"] == 0 and row["lost_chunks"] == 0 and row["orphans"] == 0
        assert row["done"] + row["failed"] == clean["done"] + clean["failed"]
        # No page the clean run indexed may fail: a page failed `interrupted` is a page lost to the fault
        # (how the batch holds of a killed index worker showed, until the sweeper released them).
        assert row["extra_failed"] == {}, row["extra_failed_pages"]
    # A dead worker's messages come back after the (harness's 60 s) visibility timeout, not an hour. Alone it
    # recovers in 56 to 104 s; once, at the end of the whole suite, it took 329 s (cause not established, see
    # docs/RELIABILITY.md), so the bound is eight visibility timeouts: it still fails the hour-long stall.
    assert rows["worker_kill"]["recovery_s"] < 480
