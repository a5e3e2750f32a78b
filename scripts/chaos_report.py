"""The fault harness's report: each fault's run compared with the clean run, page by page, and the table
that docs/RELIABILITY.md records."""

from __future__ import annotations


def compare(row: dict, clean: dict) -> dict:
    """Chunks duplicated or lost against the clean run, page by page; pages failed beyond the clean run's,
    by class."""
    duplicated = lost = 0
    extra_failed: dict[str, int] = {}
    names: list[str] = []
    for key, (status, failure, chunks) in row["pages"].items():
        expected = clean["pages"].get(_same_page(key, clean))
        if expected is None:
            continue
        if status == "done" and expected[0] == "done":
            duplicated += max(0, chunks - expected[2])
            lost += max(0, expected[2] - chunks)
        elif status == "failed" and expected[0] == "done":
            extra_failed[failure or "?"] = extra_failed.get(failure or "?", 0) + 1
            names.append(key.rsplit("/", 1)[-1])
    done = sum(1 for s, _, _ in row["pages"].values() if s == "done")
    failed = sum(1 for s, _, _ in row["pages"].values() if s == "failed")
    return {
        "done": done,
        "failed": failed,
        "extra_failed": extra_failed,
        "extra_failed_pages": names,
        "duplicated_chunks": duplicated + row["doubled_positions"],
        "lost_chunks": lost,
    }


def _same_page(key: str, clean: dict) -> str:
    # The site keeps its port for the whole run, so page URLs match; uploads match by file and title.
    return key


def table(rows: list[dict]) -> str:
    head = (
        "| fault | pages done / failed (beyond the clean run's: class) | dup. chunks | lost chunks | orphans"
        " | recovery (s) | total (s), vs clean | put back | mechanism |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    clean_total = rows[0]["total_s"]
    for r in rows:
        extra = ", ".join(f"{n} {c}" for c, n in sorted(r["extra_failed"].items())) or "none"
        if r["worker_restarts"]:
            extra += f"; exited, restarted: {', '.join(r['worker_restarts'])}"
        if r["failed_before_retry"]:
            failed = ", ".join(f"{n} {c}" for c, n in sorted(r["failed_before_retry"].items()))
            extra += f"; failed before Retry failed: {failed}"
        again = f"{r['recrawled_pages']} page(s) crawled again"
        if r["resumed_sources"]:
            again += f", {r['resumed_sources']} source(s) queued again"
        settled = (
            "" if r["settled"] and not r["in_flight"] and not r["unclassed_failures"] else " NOT SETTLED"
        )
        recovery = "-" if r["recovery_s"] is None else f"{r['recovery_s']}"
        lines.append(
            f"| {r['scenario']}{settled} | {r['done']} / {r['failed']} ({extra}) | {r['duplicated_chunks']} |"
            f" {r['lost_chunks']} | {'n/a' if r['orphans'] is None else r['orphans']} | {recovery} |"
            f" {r['total_s']}, {r['total_s'] - clean_total:+.1f} | {again} | {r['mechanism']} |"
        )
    return "\n".join(lines)
