"""Reads of usage against the plan: one workspace's (the settings page, the API, the admin) and the top
workspaces by one quota (the operators' admin view, which crosses workspaces on purpose)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from sources import metering
from sources.models import Document, Membership, Source, UsageCounter, Workspace
from sources.plans import plan_for
from sources.quotas import QUOTAS, _agent_model, human_size, limit_of, usage_of
from sources.tenancy import TenantModel


@dataclass(frozen=True)
class UsageLine:
    quota: str
    label: str
    used: int
    limit: int | None
    reset: dt.datetime | None
    unit: str = ""

    @property
    def percent(self) -> int | None:
        if not self.limit:
            return None if self.limit is None else 100
        return min(round(100 * self.used / self.limit), 100)

    @property
    def shown_used(self) -> str:
        return human_size(self.used) if self.unit == "bytes" else f"{self.used:,}"

    @property
    def shown_limit(self) -> str:
        if self.limit is None:
            return "unlimited"
        return human_size(self.limit) if self.unit == "bytes" else f"{self.limit:,}"

    def as_dict(self) -> dict:
        return {
            "quota": self.quota,
            "label": self.label,
            "used": self.used,
            "limit": self.limit,
            "reset": self.reset.isoformat() if self.reset else None,
        }


@dataclass(frozen=True)
class WorkspaceUsage:
    plan: str
    plan_label: str
    lines: list[UsageLine]
    api_requests_per_minute: int | None

    def as_dict(self) -> dict:
        return {
            "plan": self.plan,
            "plan_label": self.plan_label,
            "quotas": [line.as_dict() for line in self.lines],
            "api_requests_per_minute": self.api_requests_per_minute,
        }


def workspace_usage(workspace: Workspace) -> WorkspaceUsage:
    """Every quota of the workspace's plan with what is used; the template
    templates/sources/_workspace_usage.html shows it (context name `usage`)."""
    plan = plan_for(workspace)
    lines = []
    for name, quota in QUOTAS.items():
        reset = metering.period_bounds(name)[1] if quota.metered else None
        lines.append(
            UsageLine(
                name, quota.label, usage_of(workspace.id, name), limit_of(plan, name), reset, quota.unit
            )
        )
    return WorkspaceUsage(plan.name, str(plan), lines, plan.api_requests_per_minute)


#: What the operators' "top workspaces" view can rank by, as a subquery per workspace.
RANKABLE = ("documents", "chunks", "sources", "members", "agents", "crawl_pages", "chat_messages")


def _count_of(model: type[TenantModel], **filters: object) -> Coalesce:
    rows = model.unscoped.filter(workspace=OuterRef("pk"), **filters).order_by()
    return Coalesce(
        Subquery(
            rows.values("workspace").annotate(n=Count("pk")).values("n")[:1], output_field=IntegerField()
        ),
        0,
    )


def top_workspaces(by: str, limit: int = 25) -> QuerySet:
    """Workspaces with their figures, the biggest by `by` first (crosses workspaces: operators only)."""
    if by not in RANKABLE:
        raise ValueError(f"Rank by one of {', '.join(RANKABLE)}.")
    sources = Source.unscoped.filter(workspace=OuterRef("pk")).order_by()
    chunks = Coalesce(
        Subquery(
            sources.values("workspace").annotate(n=Sum("chunks_count")).values("n")[:1],
            output_field=IntegerField(),
        ),
        0,
    )
    day, _ = metering.period_bounds("crawl_pages")
    month, _ = metering.period_bounds("chat_messages")

    def metered(metric: str, start: dt.date) -> Coalesce:
        row = UsageCounter.unscoped.filter(workspace=OuterRef("pk"), metric=metric, period_start=start)
        return Coalesce(Subquery(row.values("value")[:1], output_field=IntegerField()), 0)

    return (
        Workspace.objects.select_related("plan")
        .annotate(
            documents=_count_of(Document),
            chunks=chunks,
            sources=_count_of(Source),
            members=_count_of(Membership),
            agents=_count_of(_agent_model()),
            crawl_pages=metered("crawl_pages", day),
            chat_messages=metered("chat_messages", month),
        )
        .order_by(f"-{by}", "slug")[:limit]
    )
