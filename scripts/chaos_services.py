"""The processes the fault harness (scripts/chaos.py) owns: its own PostgreSQL cluster and Redis server on
free loopback ports, in a directory of its own, and the Celery workers and beat it starts and kills. It never
touches the development servers (54329, 63799) or any process it did not start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]


T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(check: Callable[[], T], timeout: float, what: str, step: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception:
            value = None
        if value:
            return value
        time.sleep(step)
    raise TimeoutError(f"{what} did not happen within {timeout:.0f}s")


class Redis:
    """A redis-server with an append-only file (as a broker must have: a restart then loses at most the
    last second of writes, see docs/RELIABILITY.md)."""

    def __init__(self, base: Path) -> None:
        self.dir = base / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--logfile",
             str(self.dir / "redis.log")],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self.ping, 10, "redis-server answering")

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())

    def kill(self, *, wipe: bool = False) -> None:
        """kill -9; with wipe, its data goes too (a Redis without persistence that restarted)."""
        if self.process is None:
            return
        self.process.kill()
        self.process.wait()
        self.process = None
        if wipe:
            for path in self.dir.iterdir():
                if path.name != "redis.log":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()

    def stop(self) -> None:
        self.kill()


class Postgres:
    """A throwaway cluster (initdb in our directory, pg_ctl as the postgres user when we are root, as
    scripts/setup.sh does), so restarting it disturbs nobody."""

    def __init__(self, base: Path) -> None:
        self.data = base / "pg"
        self.port = free_port()
        self.bin = Path(subprocess.check_output(["pg_config", "--bindir"], text=True).strip())
        if not (self.bin / "initdb").exists():
            versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
            self.bin = versions[-1].parent

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/grounded"

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{a}'" for a in command)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def init(self) -> None:
        self.data.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.data.parent, "postgres", "postgres")
            shutil.chown(self.data, "postgres", "postgres")
        self.data.chmod(0o700)
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"
        )
        self.start()
        subprocess.run(
            [
                str(self.bin / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "grounded",
            ],
            check=True,
        )

    def _options(self) -> str:
        return (
            f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        )

    def start(self) -> None:
        log = str(self.data / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-w", "-o", self._options(), "start")

    def restart(self) -> None:
        """An immediate shutdown (what a crash looks like to clients: every connection cut), then start."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.start()

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


class Worker:
    """One Celery worker (main process and its pool) on some queues, or beat."""

    def __init__(self, name: str, queues: str, env: dict[str, str], logs: Path, concurrency: int = 2) -> None:
        self.name, self.queues, self.env, self.logs, self.concurrency = name, queues, env, logs, concurrency
        self.process: subprocess.Popen | None = None
        self.generation = 0
        self.lock = threading.RLock()  # the supervisor's restarts and our kills never interleave

    def start(self) -> None:
        self.generation += 1
        log = (self.logs / f"{self.name}-{self.generation}.log").open("w")
        if self.queues == "beat":
            args = ["beat", "-s", str(self.logs / "beat-schedule"), "--loglevel", "INFO"]
        else:
            args = ["worker", "-Q", self.queues, "--concurrency", str(self.concurrency),
                    "-n", f"{self.name}-{self.generation}@%h",
                    "--without-gossip", "--without-mingle", "--loglevel", "INFO"]  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if self.queues != "beat":
            wait_until(lambda: len(self.pool()) >= self.concurrency, 60, f"worker {self.name} ready")

    def exited(self) -> bool:
        """The process ended on its own (we did not kill or stop it)."""
        return self.process is not None and self.process.poll() is not None

    def pool(self) -> list[int]:
        if self.process is None:
            return []
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
        return [int(p) for p in found.split()]

    def kill_pool_process(self) -> int:
        """kill -9 one pool process; the main process starts another and the task is redelivered."""
        victim = self.pool()[0]
        os.kill(victim, signal.SIGKILL)
        return victim

    def kill(self) -> None:
        """kill -9 the main process and every pool process at once: nothing is acknowledged or given back."""
        with self.lock:
            self._kill()

    def _kill(self) -> None:
        if self.process is None:
            return
        for pid in [self.process.pid, *self.pool()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        with self.lock:
            if self.process is None:
                return
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._kill()
            self.process = None


class Supervisor:
    """What the deployment's process manager does (docker-compose.yml: `restart: unless-stopped`): a worker
    that exits on its own is started again. Counts the restarts, so a row can say it needed one."""

    def __init__(self, workers: dict[str, Worker]) -> None:
        self.workers = workers
        self.restarts: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            for name, worker in list(self.workers.items()):
                with worker.lock:
                    if worker.exited():
                        self.restarts.append(name)
                        worker.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
