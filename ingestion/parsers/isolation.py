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
import os
import pickle
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ingestion.parsers.base import ParseError, ParseOptions, Segment

MEGABYTE = 1024 * 1024
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
    **kwargs: Any,
) -> Any:
    """Call `module:function` in a child and return its result, or raise ParseError for a bad outcome."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "PYTHONPATH": str(REPO_ROOT)}
    # Tesseract's OpenMP threads each reserve address space and fight over two cores for nothing.
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
        stdout, _ = process.communicate(pickle.dumps((target, args, kwargs)), timeout=timeout_s)
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


def parse_file_isolated(
    path: Path,
    filename: str,
    *,
    timeout_s: float = 300.0,
    memory_mb: int | None = 2048,
    options: ParseOptions | None = None,
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
    )


if __name__ == "__main__":
    _child_main()
