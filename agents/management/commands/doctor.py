"""`manage.py doctor [--agent ID] [--json]`: what is wrong with the deployment (and an agent), and what to do.

Exits 1 when any finding is an error, so a deploy script or a cron job can act on it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import doctor
from agents.models import Agent

MARKS = {doctor.ERROR: "ERROR", doctor.WARNING: "WARN ", doctor.INFO: "INFO "}


class Command(BaseCommand):
    help = "Check the embedder, vector store, Redis, broker and workers, and with --agent that agent's setup."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", type=int, help="Also check this agent (its id).")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = None
        if options["agent"] is not None:
            # An operator's command: any workspace's agent, by id.
            agent = Agent.unscoped.filter(id=options["agent"]).first()
            if agent is None:
                raise CommandError(f"No agent with id {options['agent']}.")
        report = doctor.diagnose(agent=agent, operator=True)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self._print(report, agent)
        if report["status"] == doctor.ERROR:
            raise SystemExit(1)

    def _print(self, report: dict, agent: Agent | None) -> None:
        about = f"agent #{agent.id} {agent.name!r} and the deployment" if agent else "the deployment"
        self.stdout.write(f"Checked {about}: {', '.join(report['checks'])}")
        if not report["findings"]:
            self.stdout.write(self.style.SUCCESS("No problems found."))
            return
        for finding in report["findings"]:
            mark = MARKS[finding["severity"]]
            style = self.style.ERROR if finding["severity"] == doctor.ERROR else self.style.WARNING
            self.stdout.write(style(f"{mark} [{finding['check']}] {finding['problem']}"))
            if finding["action"]:
                self.stdout.write(f"      To do: {finding['action']}")
            if finding["detail"] and finding["detail"] not in finding["problem"]:
                self.stdout.write(f"      Detail: {finding['detail'][:500]}")
