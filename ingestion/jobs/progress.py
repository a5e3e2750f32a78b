"""Where a long job on one source has got to, for the sources page ("Reading page 3 of 15")."""

from __future__ import annotations

import time
from typing import Any

from django.db.models import F, Func, JSONField, TextField, Value

from sources.models import Source


class Progress:
    """Writes where a long job on one source has got to into Source.state["progress"] (the sources page
    shows "Reading page 3 of 15"): one small UPDATE a second at most, whatever the file's size.
    Merged into the state in SQL, so it never overwrites what another writer put there meanwhile."""

    def __init__(self, source_id: int, *, every_s: float = 1.0) -> None:
        self.source_id = source_id
        self.every_s = every_s
        self.last = (-every_s, "")

    def __call__(self, stage: str, done: int = 0, total: int = 0) -> None:
        # A new stage and a stage's last step are always written (a handful per job), the rest once a second.
        now = time.monotonic()
        if stage == self.last[1] and done != total and now - self.last[0] < self.every_s:
            return
        self.last = (now, stage)
        report = Value({"progress": {"stage": stage, "done": int(done), "total": int(total)}}, JSONField())
        Source.objects.filter(id=self.source_id).update(state=_jsonb(F("state"), report, operator="||"))

    def reported(self, report: dict) -> None:
        """What the isolated parser reported (ingestion.parsers.base.report_progress)."""
        self(str(report.get("stage", "")), int(report.get("done") or 0), int(report.get("total") or 0))

    def clear(self) -> None:
        key = Value("progress", TextField())
        Source.objects.filter(id=self.source_id).update(state=_jsonb(F("state"), key, operator="-"))


def _jsonb(left: Any, right: Any, *, operator: str) -> Func:
    """`left || right` (merge) or `left - right` (drop a key) on a jsonb column, in SQL."""
    joiner = f" {operator} "
    return Func(left, right, template="(%(expressions)s)", arg_joiner=joiner, output_field=JSONField())
