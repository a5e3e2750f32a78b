"""CPU seconds of process trees, read from /proc (Linux): what each part of a benchmark took from the CPU."""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(root: int) -> float:
    """CPU seconds of a process and every descendant, alive or reaped (Chromium's processes, once its crawl
    process has waited for them, count in that process's cutime): what the crawl takes from the embedder."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(x) for x in fields[11:15]) / _TICKS  # utime stime cutime cstime
    tree, grown = {root}, True
    while grown:  # a child's pid is not always above its parent's: add children until none is left
        grown = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grown = True
    return sum(times.get(pid, 0.0) for pid in tree)


def postmaster() -> int | None:
    """The PostgreSQL server's main process, if it runs on this machine: its tree's CPU is the database's."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[0].endswith(
                b"/postgres"
            ):
                return int(entry.name)
        except OSError:
            continue
    return None
