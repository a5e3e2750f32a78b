"""CPU seconds of process trees, read from /proc (Linux): what each part of a benchmark took from the CPU."""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stats() -> dict[int, list[str]]:
    """Every process's /proc/<pid>/stat fields after its name."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
    return stats


def process_tree(root: int, stats: dict[int, list[str]] | None = None) -> set[int]:
    """A process and every descendant alive now."""
    parents = {pid: int(fields[1]) for pid, fields in (stats or _stats()).items()}
    tree, grown = {root}, True
    while grown:  # a child's pid is not always above its parent's: add children until none is left
        grown = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grown = True
    return tree


def cpu_seconds(root: int) -> float:
    """CPU seconds of a process and every descendant, alive or reaped (Chromium's processes, once its crawl
    process has waited for them, count in that process's cutime): what the crawl takes from the embedder."""
    stats = _stats()
    # utime stime cutime cstime
    return sum(
        sum(int(x) for x in stats[pid][11:15]) / _TICKS for pid in process_tree(root, stats) if pid in stats
    )


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
