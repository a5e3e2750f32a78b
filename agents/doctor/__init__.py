"""The doctor: why an agent answers badly, in findings a person can act on.

Each check is a small function returning findings (severity, what is wrong, what to do); no finding means the
check passed. Deployment checks (embedder, vector store, PostgreSQL, Redis, broker, workers) reuse the
readiness checks of config/health.py, so /readyz and the doctor never disagree. Agent checks read the agent's
own settings and sources and must run inside its workspace's scope (diagnose() opens it).

findings.py holds what a check returns, deployment.py and agent.py the checks; this module runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from agents.doctor.agent import (
    check_agent_embedder,
    check_embeddings,
    check_gate,
    check_knowledge,
    check_model,
    check_origins,
    check_sources,
)
from agents.doctor.deployment import check_embedder, check_services
from agents.doctor.findings import ERROR, INFO, SEVERITY_ORDER, WARNING, Finding
from agents.models import Agent
from config import health
from sources.tenancy import workspace_scope

__all__ = [
    "AGENT_CHECKS",
    "DEPLOYMENT_CHECKS",
    "ERROR",
    "INFO",
    "WARNING",
    "Finding",
    "check_agent_embedder",
    "check_embedder",
    "check_embeddings",
    "check_gate",
    "check_knowledge",
    "check_model",
    "check_origins",
    "check_services",
    "check_sources",
    "diagnose",
]


DEPLOYMENT_CHECKS: tuple[Callable[[], list[Finding]], ...] = (check_embedder, check_services)
AGENT_CHECKS: tuple[Callable[[Agent], list[Finding]], ...] = (
    check_model,
    check_agent_embedder,
    check_sources,
    check_embeddings,
    check_knowledge,
    check_gate,
    check_origins,
)


def _guarded(name: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    # A check that breaks is itself a finding; it must not hide the others.
    try:
        return run()
    except Exception as exc:
        return [Finding(name, ERROR, f"The {name} check could not run.", "", health._describe(exc))]


def diagnose(
    *, agent: Agent | None = None, deployment: bool = True, operator: bool = False
) -> dict[str, Any]:
    """{"status": "ok"|"warning"|"error", "checks": [...], "findings": [...]}, worst findings first.

    Deployment findings are shared by every workspace; their raw errors (hosts, ports, settings) are for
    the operator (`operator=True`, the management command), so workspace members get the problem and the
    action without them."""
    findings: list[Finding] = []
    checks: list[str] = []
    if deployment:
        for check in DEPLOYMENT_CHECKS:
            name = check.__name__.removeprefix("check_")
            checks.append(name)
            found = _guarded(name, check)
            findings += found if operator else [replace(f, detail="") for f in found]
    if agent is not None:
        with workspace_scope(agent.workspace_id):
            for agent_check in AGENT_CHECKS:
                name = agent_check.__name__.removeprefix("check_")
                checks.append(name)
                findings += _guarded(name, partial(agent_check, agent))
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    status = findings[0].severity if findings and findings[0].severity != INFO else "ok"
    return {"status": status, "checks": checks, "findings": [f.as_dict() for f in findings]}
