"""Parse a file in a throwaway child process, so a hang, a crash or a memory blow-up costs one file only.

The child is a fresh interpreter started with subprocess (`python -m ingestion.parsers.isolation`), not
multiprocessing: Celery's prefork workers are daemonic processes, which multiprocessing refuses to give
children, and forking a Celery or gunicorn worker would copy its threads and locks. The child caps its
own address space with RLIMIT_AS and leads its own process group, so a timeout also ends the Tesseract
or antiword processes it started. Call and outcome travel as pickles over stdin/stdout.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import pickle
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ingestion.parsers.base import PROGRESS_ENV, ParseError, ParseOptions, Segment

log = logging.getLogger(__name__)

MEGABYTE = 1024 * 1024
PROGRESS_POLL_S = 1.0  # how often the parent looks at the child's progress file
REPO_ROOT = Path(__file__).resolve().parents[2]


def _limits(memory_mb: int | None) -> None:
    """Runs in the child between fork and exec."""
    os.setsid()
    if memory_mb:
        limit = memory_mb * MEGABYTE
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _child_main() -> None:
    target, args, kwargs = pickle.load(sys.stdin.buffer)  # noqa: S301 - sent by our own parent
    try:
        module_name, function_name = target.split(":")
        function = getattr(importlib.import_module(module_name), function_name)
        outcome: tuple[str, Any] = ("ok", function(*args, **kwargs))
    except ParseError as exc:
        outcome = ("error", exc)
    except MemoryError:
        outcome = ("memory", "MemoryError in the parser")
    except BaseException as exc:
        # Anything at all (SystemExit from a C library included) must reach the parent as an outcome.
        outcome = ("crash", f"{type(exc).__name__}: {exc}")
    try:
        payload = pickle.dumps(outcome)
    except MemoryError:
        payload = pickle.dumps(("memory", "MemoryError while sending the result"))
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


def _end(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)


def run_isolated(
    target: str,
    *args: Any,
    timeout_s: float,
    memory_mb: int | None,
    on_progress: Callable[[dict], None] | None = None,
    **kwargs: Any,
) -> Any:
    """Call `module:function` in a child and return its result, or raise ParseError for a bad outcome.
    `on_progress` gets what the child reports with report_progress(), checked once a second."""
    # Tesseract's OpenMP threads each reserve address space and fight over two cores for nothing.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "PYTHONPATH": str(REPO_ROOT)}
    with tempfile.TemporaryDirectory() as workdir:
        progress_file = Path(workdir) / "progress.json" if on_progress else None
        if progress_file:
            env[PROGRESS_ENV] = str(progress_file)
        return _run_child(target, args, kwargs, env, timeout_s, memory_mb, progress_file, on_progress)


def _run_child(
    target: str,
    args: tuple,
    kwargs: dict,
    env: dict,
    timeout_s: float,
    memory_mb: int | None,
    progress_file: Path | None,
    on_progress: Callable[[dict], None] | None,
) -> Any:
    process = subprocess.Popen(
        [sys.executable, "-m", "ingestion.parsers.isolation"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env=env,
        preexec_fn=lambda: _limits(memory_mb),
    )
    outcome: tuple[str, Any] | None = None
    timed_out = False
    try:
        call = pickle.dumps((target, args, kwargs))
        stdout = _communicate(process, call, timeout_s, progress_file, on_progress)
        if stdout:
            with contextlib.suppress(pickle.UnpicklingError, EOFError, ValueError):
                outcome = pickle.loads(stdout)  # noqa: S301 - our own child's answer
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _end(process)
    if timed_out:
        raise ParseError(
            "Parsing took too long and was stopped. The file may be very large or damaged; try splitting it.",
            f"timeout after {timeout_s}s running {target}",
            reason="timeout",
            final=True,
        )
    if outcome is None:
        if memory_mb and process.returncode not in (0, None):
            # An interpreter that cannot even allocate its startup memory dies before reporting.
            detail = f"child exited with code {process.returncode} under {memory_mb} MB running {target}"
        else:
            detail = f"child exited with code {process.returncode} running {target}"
        raise ParseError(
            "The file could not be read: the parser stopped unexpectedly. It may be damaged.",
            detail,
            reason="crash",
            final=True,
        )
    kind, value = outcome
    if kind == "ok":
        return value
    if kind == "error":
        raise value
    if kind == "memory":
        raise ParseError(
            "The file needs too much memory to parse. Split it into smaller files.",
            f"{value}; limit {memory_mb} MB address space running {target}",
            reason="memory",
            final=True,
        )
    raise ParseError(
        "The file could not be read: the parser failed on it. It may be damaged.",
        f"{value} running {target}",
        reason="crash",
        final=True,
    )


def _communicate(
    process: subprocess.Popen,
    payload: bytes,
    timeout_s: float,
    progress_file: Path | None,
    on_progress: Callable[[dict], None] | None,
) -> bytes:
    """The child's stdout; with a progress file, waits a second at a time and passes on what changed
    (communicate() may be called again after its timeout without losing output)."""
    if progress_file is None or on_progress is None:
        return process.communicate(payload, timeout=timeout_s)[0]
    deadline = time.monotonic() + timeout_s
    sent: bytes | None = payload
    seen = b""
    while True:
        try:
            wait = max(0.01, min(PROGRESS_POLL_S, deadline - time.monotonic()))
            return process.communicate(sent, timeout=wait)[0]
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
        sent = None  # already on its way
        with contextlib.suppress(OSError):
            report = progress_file.read_bytes()
            if report and report != seen:
                seen = report
                try:
                    on_progress(json.loads(report))
                except Exception:  # progress is a courtesy: it never stops a parse
                    log.warning("passing on parse progress failed", exc_info=True)


def parse_file_isolated(
    path: Path,
    filename: str,
    *,
    timeout_s: float = 300.0,
    memory_mb: int | None = 2048,
    options: ParseOptions | None = None,
    on_progress: Callable[[dict], None] | None = None,
) -> list[Segment]:
    """`parse_file` in a child process with a time limit and an address-space limit.

    `memory_mb` caps virtual address space, which counts the interpreter and the parser libraries
    (about 250 MB measured here) as well as the data, so leave that much headroom.
    """
    return run_isolated(
        "ingestion.parsers.registry:parse_file",
        Path(path),
        filename,
        options=options,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        on_progress=on_progress,
    )


if __name__ == "__main__":
    _child_main()
