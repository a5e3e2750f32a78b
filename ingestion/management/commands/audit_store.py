"""Compare the database with the vector store and file storage, and repair on request.

    manage.py audit_store [--workspace 3] [--repair] [--json]

Prints one row per inconsistency found (class, workspace, how many, how many repaired, a sample) and, last,
a JSON summary on one line (with --json, only that). The classes are in ingestion/audit.py; run it at rest
(a workspace with sources in flight is reported as busy and its store classes are not repaired).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from ingestion.audit import CLASSES, audit, table


class Command(BaseCommand):
    help = "Compare the database with the vector store and file storage; --repair fixes what it finds."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--workspace", type=int, help="one workspace id (default: every workspace)")
        parser.add_argument("--repair", action="store_true", help="fix each inconsistency found")
        parser.add_argument("--json", action="store_true", help="print only the JSON summary")

    def handle(self, *args: Any, **options: Any) -> None:
        report = audit(workspace_id=options["workspace"], repair=options["repair"])
        summary = report.summary()
        if not options["json"]:
            self.stdout.write(table(report))
            self.stdout.write("")
            for kind, description in CLASSES.items():
                totals = summary["totals"][kind]
                self.stdout.write(
                    f"  {kind}: {totals['found']} found, {totals['repaired']} repaired ({description})"
                )
        self.stdout.write(json.dumps(summary, sort_keys=True))
