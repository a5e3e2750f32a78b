"""API keys' rows kept by each web process, so an API request sends no query to learn its key.

A key's row and its workspace's change rarely (a key revoked, a workspace's settings or plan changed), and
every such change is a write to one of two tables. A trigger on each (migration sources/0017) sends
`NOTIFY grounded_api_keys` when the write commits, from any code path: the ORM, a queryset `update()`,
the Django admin, plain SQL. Each process listens on a connection of its own and forgets every row it
keeps when a notification comes. It fails closed:

- rows are kept only while the listener is connected; a process that is not listening (starting,
  reconnecting, or `API_KEY_CACHE` off) reads every key from the database, as it did before;
- a row read before a notification is not kept after it (an epoch: `KeyRows.keep` compares it);
- a row is kept at most `API_KEY_CACHE_SECONDS` even if a notification were lost with its connection;
- the process that makes a change forgets at once too (`forget_all` after the commit), so its own next
  request never sees the old row, whatever the listener's delay.

Other processes forget within the notification's delivery (milliseconds on one host). The rows are plain
column values; each request builds its own model instances from them, so no request sees another's.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import psycopg
import structlog
from django.conf import settings
from django.db import connection

CHANNEL = "grounded_api_keys"
#: how long the listener waits for a notification before checking its connection is alive
PING_SECONDS = 30.0
#: after the listener lost its connection, how long before a request tries to start it again
RETRY_SECONDS = 5.0
#: rows kept at most: a process serves a bounded number of keys; beyond it, keys are read every time
MAX_ROWS = 10_000
#: connection parameters of Django's that psycopg.connect does not take as they are
_NOT_FOR_LISTENING = {"cursor_factory", "context", "prepare_threshold"}

log = structlog.get_logger(__name__)


@dataclass
class _Kept:
    row: tuple
    kept_at: float
    #: when this process last wrote the key's last_used_at (the kept row has the value read then)
    last_used_at: object


class KeyRows:
    """The rows of one process. Thread-safe: the web server's threads share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, _Kept] = {}
        self._epoch = 0
        self._listening = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._next_start = 0.0
        self._stop = threading.Event()

    # -- what authentication asks --------------------------------------------------------------------

    def get(self, prefix: str) -> _Kept | None:
        """The kept row for this key prefix, if the process is listening and keeps one still fresh."""
        if not self._ready():
            return None
        with self._lock:
            kept = self._rows.get(prefix)
            if kept is not None and time.monotonic() - kept.kept_at > settings.API_KEY_CACHE_SECONDS:
                del self._rows[prefix]
                return None
            return kept

    def epoch(self) -> int | None:
        """Read before a key's row is read from the database and given back to keep(); None when the
        process is not listening (then nothing is kept)."""
        if not self._ready():
            return None
        with self._lock:
            return self._epoch if self._listening else None

    def keep(self, prefix: str, row: tuple, last_used_at: object, epoch: int | None) -> None:
        """Keep a row read after epoch() gave `epoch`, unless something changed since."""
        if epoch is None:
            return
        with self._lock:
            room = prefix in self._rows or len(self._rows) < MAX_ROWS
            if self._listening and self._epoch == epoch and room:
                self._rows[prefix] = _Kept(row, time.monotonic(), last_used_at)

    def used(self, prefix: str, at: object) -> None:
        """This process wrote the key's last_used_at (a column the trigger ignores)."""
        with self._lock:
            kept = self._rows.get(prefix)
            if kept is not None:
                kept.last_used_at = at

    def forget_all(self) -> None:
        with self._lock:
            self._epoch += 1
            self._rows.clear()

    @property
    def listening(self) -> bool:
        return self._listening

    # -- the listener ---------------------------------------------------------------------------------

    def _ready(self) -> bool:
        if not settings.API_KEY_CACHE:
            return False
        if self._pid != os.getpid():  # a forked child: the parent's thread and rows are not ours
            self.__init__()  # type: ignore[misc]
        if not self._listening and (self._thread is None or not self._thread.is_alive()):
            now = time.monotonic()
            with self._lock:
                if now >= self._next_start and (self._thread is None or not self._thread.is_alive()):
                    self._next_start = now + RETRY_SECONDS
                    self._stop.clear()
                    self._thread = threading.Thread(
                        target=self._listen, args=(_listen_params(),), name="api-key-listener", daemon=True
                    )
                    self._thread.start()
        return self._listening

    def _listen(self, params: dict) -> None:
        try:
            with psycopg.connect(**params, autocommit=True) as listener:
                listener.execute(f"LISTEN {CHANNEL}")
                with self._lock:
                    self._epoch += 1
                    self._rows.clear()
                    self._listening = True
                while not self._stop.is_set():
                    for _notice in listener.notifies(timeout=PING_SECONDS, stop_after=1):
                        self.forget_all()
                    listener.execute("SELECT 1")  # a dead connection raises here, not silently
        except Exception as exc:  # whatever it was, the process reads keys from the database meanwhile
            log.warning("api key listener stopped", error=str(exc))
        finally:
            with self._lock:
                self._listening = False
                self._epoch += 1
                self._rows.clear()

    def stop(self) -> None:
        """Stop listening and wait for the thread to end (tests: a test database cannot be dropped while
        the listener holds a connection to it). A notification wakes the thread from its wait."""
        self._stop.set()
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        with psycopg.connect(**_listen_params(), autocommit=True) as waker:
            waker.execute("SELECT pg_notify(%s, 'stop')", [CHANNEL])
        thread.join(timeout=PING_SECONDS + 5)

    def wait_until_listening(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._ready():
                return True
            time.sleep(0.01)
        return False


def _listen_params() -> dict:
    params = connection.get_connection_params()
    return {
        **{k: v for k, v in params.items() if k not in _NOT_FOR_LISTENING},
        "application_name": "grounded-api-key-listener",
    }


rows = KeyRows()
