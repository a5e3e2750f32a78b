"""Which plan a workspace is on: its own, or the default one named by settings.GROUNDED_DEFAULT_PLAN.

The API throttle asks on every request, so answers are kept in this process for PLAN_CACHE_SECONDS: a plan
edited in the Django admin reaches running web processes within that time. Quota checks read fresh.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings

from sources.models import Plan, Workspace

log = logging.getLogger(__name__)
PLAN_CACHE_SECONDS = 10.0
_cache: dict[int, tuple[float, Plan]] = {}


class UnknownPlan(ValueError):
    pass


def default_plan() -> Plan:
    """The plan named by GROUNDED_DEFAULT_PLAN. Migration 0012 creates it and the admin refuses to delete
    it; should it still be missing (a test database flushed between tests, a renamed setting), it is
    created again with no limits, as the migration would, and operators are told in the log."""
    name = settings.GROUNDED_DEFAULT_PLAN
    plan, created = Plan.objects.get_or_create(name=name, defaults={"label": "Default"})
    if created:
        log.warning("the default plan %r was missing; created it with no limits", name)
    return plan


def plan_for(workspace: Workspace, *, cached: bool = False) -> Plan:
    if cached:
        hit = _cache.get(workspace.id)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
    plan = Plan.objects.filter(workspaces__id=workspace.id).first() or default_plan()  # one query
    _cache[workspace.id] = (time.monotonic() + PLAN_CACHE_SECONDS, plan)
    return plan


def plan_named(name: str) -> Plan:
    """The plan of that name, or UnknownPlan saying which plans there are."""
    plan = Plan.objects.filter(name=name).first()
    if plan is None:
        known = ", ".join(Plan.objects.order_by("name").values_list("name", flat=True))
        raise UnknownPlan(f"No plan named {name!r}; plans: {known or 'none'}.")
    return plan


def assign_plan(workspace: Workspace, name: str) -> Plan:
    """Put a workspace on the plan of that name (create_workspace --plan, the admin)."""
    plan = plan_named(name)
    Workspace.objects.filter(id=workspace.id).update(plan=plan)
    workspace.plan = plan
    _cache.pop(workspace.id, None)
    return plan


def api_rate_limit(workspace: Workspace) -> int | None:
    """settings.API_RATE_LIMIT_RESOLVER: the plan's requests per minute, as requests per the throttle's
    window. None (no limit on the plan) leaves the deployment's API_RATE_PER_MINUTE in force."""
    per_minute = plan_for(workspace, cached=True).api_requests_per_minute
    if per_minute is None:
        return None
    return max(math.ceil(per_minute * settings.API_RATE_WINDOW_SECONDS / 60), 1)
