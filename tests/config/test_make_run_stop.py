"""`make run` stopped by a SIGTERM to its process group (what `kill -- -PGID`, a terminal closing or a
supervisor sends) stops everything it started: its web server and workers, and the PostgreSQL and Redis it
started, even when a second signal arrives while it is stopping them (issue #56: 7 of 11 such stops left
PostgreSQL and Redis running).

The real script runs on a copy of the tree (its own .local/, so its own servers) on spare ports, with this
checkout's virtualenv; no servers of this test session are touched."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.factories import ROOT

# Not copied: history, the virtualenv (linked), servers' data, and what the script never reads.
SKIP = {".git", ".venv", ".local", "docs", "tests", "node_modules", "__pycache__", ".pytest_cache"}


def spare_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing parenthesis
            if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
                members.append(int(entry.name))
    return members


def wait_for(condition, seconds: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


@pytest.fixture
def tree():
    """A copy of the checkout the postgres user can reach (its data directory lives under .local/)."""
    copy = Path(tempfile.mkdtemp(prefix="grounded-run-"))
    copy.chmod(0o755)
    for item in ROOT.iterdir():
        if item.name in SKIP:
            continue
        if item.is_dir():
            shutil.copytree(item, copy / item.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(item, copy / item.name)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    yield copy
    shutil.rmtree(copy, ignore_errors=True)


def test_a_sigterm_to_the_group_stops_every_process_and_server_it_started(tree):
    ports = {"pg": spare_port(), "redis": spare_port(), "web": spare_port()}
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "GROUNDED_PG_PORT": str(ports["pg"]),
        "GROUNDED_REDIS_PORT": str(ports["redis"]),
        "PORT": str(ports["web"]),
        "WEB_CONCURRENCY": "1",
    }
    log = tree / "run.log"
    # Its output goes through a pipe whose reader is in the group too (as under `make run | tee run.log`):
    # the reader dies with the first signal, and what the script says while stopping hits a closed pipe.
    run = subprocess.Popen(
        ["bash", "-c", "bash scripts/run.sh 2>&1 | cat > run.log"], cwd=tree, env=env, start_new_session=True
    )
    pgid = run.pid
    try:
        # Serving: the web server and the workers run in the background, the demo seed in the foreground.
        up = wait_for(lambda: listening(ports["web"]) or run.poll() is not None, 150)
        assert up and run.poll() is None, log.read_text()[-3000:]
        assert listening(ports["pg"]) and listening(ports["redis"])
        os.killpg(pgid, signal.SIGTERM)
        time.sleep(0.5)  # a second signal while it stops: a supervisor or an impatient person repeating it
        os.killpg(pgid, signal.SIGTERM)
        run.wait(timeout=90)
        assert wait_for(lambda: not group_members(pgid), 60), log.read_text()[-3000:]
        text = log.read_text()
        for name, port in ports.items():
            assert not listening(port), f"{name} still listening on {port}\n{text[-3000:]}"
    finally:
        _stop_leftovers(tree, pgid, ports)


def _stop_leftovers(tree: Path, pgid: int, ports: dict[str, int]) -> None:
    """Whatever a failed stop left behind, so a failing test does not leave servers running."""
    for pid in group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if listening(ports["redis"]):
        subprocess.run(["redis-cli", "-p", str(ports["redis"]), "shutdown", "nosave"], check=False)
    pgdata = (tree / ".local" / "pg").resolve()
    if listening(ports["pg"]) and pgdata.exists():
        subprocess.run(
            ["su", "postgres", "-s", "/bin/sh", "-c",
             f"/usr/lib/postgresql/15/bin/pg_ctl -D '{pgdata}' -m immediate stop"],
            check=False, capture_output=True,
        )  # fmt: skip
    if pgdata.exists() and pgdata != tree / ".local" / "pg":  # setup.sh's fallback outside the tree
        shutil.rmtree(pgdata.parent, ignore_errors=True)
