"""A workspace's plan enforced where work starts, before anything is stored or queued.

Stock quotas (sources, documents, stored bytes, chunks, agents, members) are counted from the rows
themselves, so they can never drift from what is stored, and there is no counter to reconcile. Two requests
counting at once would each see room for one more (issue #56: 5 agents created at once on a plan of 2 with
1 used gave 6), so a limited stock quota is checked holding its workspace's row (`hold_workspace`), inside
the transaction that creates the stock: the next request counts once this one's rows are committed or
rolled back. Metered quotas (crawl pages per day, chat
messages per month) are counted by sources.metering as the work is admitted. A refusal is one exception,
QuotaExceeded, that the API answers as 402 (429 for a rate) in the common error shape and the web UI shows
as a banner and next to the refused button.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BigIntegerField, F, Func, IntegerField, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.db.transaction import TransactionManagementError

from sources import metering
from sources.models import Document, Membership, Plan, Source, Workspace
from sources.plans import plan_for
from sources.tenancy import workspace_scope


@dataclass(frozen=True)
class Quota:
    name: str
    plan_field: str
    label: str
    unit: str = ""  # "bytes" is shown as a size
    metered: bool = False
    one: str = ""  # the thing counted, when there is one of it ("1 source", not "1 sources")


QUOTAS: dict[str, Quota] = {
    q.name: q
    for q in [
        Quota("sources", "max_sources", "Sources", one="source"),
        Quota("documents", "max_documents", "Pages and documents", one="page or document"),
        Quota("stored_bytes", "max_stored_bytes", "Stored data", unit="bytes"),
        Quota("chunks", "max_chunks", "Passages", one="passage"),
        Quota(
            "crawl_pages", "max_crawl_pages_per_day", "Pages crawled today", metered=True, one="page crawled"
        ),
        Quota(
            "chat_messages",
            "max_chat_messages_per_month",
            "Chat messages this month",
            metered=True,
            one="chat message",
        ),
        Quota("agents", "max_agents", "Agents", one="agent"),
        Quota("members", "max_members", "Members", one="member"),
    ]
}


class QuotaExceeded(Exception):
    """The plan does not allow this. `status` is 402 for a quota, 429 for a rate; `reset` is when a
    metered quota starts counting again (None for what only deleting frees)."""

    code = "quota_exceeded"

    def __init__(
        self,
        quota: str,
        *,
        limit: int,
        usage: int,
        reset: dt.datetime | None,
        message: str,
        status: int = 402,
    ) -> None:
        super().__init__(message)
        self.quota, self.limit, self.usage, self.reset = quota, limit, usage, reset
        self.message, self.status = message, status

    def as_error(self) -> dict[str, Any]:
        """The error object's figures (sources/api/errors.py): reset as a Unix time, or null."""
        reset = math.ceil(self.reset.timestamp()) if self.reset else None
        return {"quota": self.quota, "limit": self.limit, "usage": self.usage, "reset": reset}


def human_size(size: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} bytes"  # unreachable; keeps the return type total


def _figure(quota: Quota, value: int) -> str:
    return human_size(value) if quota.unit == "bytes" else f"{value:,}"


def _counted(quota: Quota, value: int) -> str:
    """'1 source', '3 sources', '2.0 MB of stored data': the limit as a sentence names it."""
    if quota.unit == "bytes":
        return f"{human_size(value)} of {quota.label.lower()}"
    what = quota.label.lower().replace(" today", "").replace(" this month", "")
    return f"{value:,} {quota.one if value == 1 and quota.one else what}"


# --- usage ----------------------------------------------------------------------------------------------


class _StoredSize(Func):
    """The bytes PostgreSQL keeps for a text (compressed if it was), without reading it back."""

    function = "pg_column_size"
    output_field = BigIntegerField()


def _agent_model() -> Any:
    # Reached through the source's foreign key: this layer does not import the agents app above it.
    return Source._meta.get_field("agent").related_model


def usage_of(workspace_id: int, name: str) -> int:
    """What the workspace holds (or used this period) of one quota."""
    quota = QUOTAS[name]
    if quota.metered:
        return metering.used(workspace_id=workspace_id, metric=name)
    with workspace_scope(workspace_id):
        if name == "sources":
            return Source.objects.count()
        if name == "documents":
            return Document.objects.count()
        if name == "chunks":
            # Kept per source by indexing: a sum of a few rows instead of counting every chunk.
            return int(Source.objects.aggregate(n=Coalesce(Sum("chunks_count"), 0))["n"])
        if name == "stored_bytes":
            texts = Document.objects.aggregate(n=Coalesce(Sum(_StoredSize(F("text"))), 0))["n"]
            originals = Source.objects.filter(state__has_key="size").aggregate(
                n=Coalesce(Sum(Cast(KT("state__size"), IntegerField())), 0)
            )["n"]
            return int(texts) + int(originals)
        if name == "agents":
            return _agent_model().objects.count()
        if name == "members":
            return Membership.objects.count()
    raise KeyError(name)


def hold_workspace(workspace_id: int) -> None:
    """Lock the workspace's row until the caller's transaction ends, so stock counted now stays true until
    what this transaction adds is committed. FOR NO KEY UPDATE: rows that only reference the workspace (an
    index job's chunks, a new source) are never made to wait; another request taking stock is. Outside a
    transaction the lock would end with its statement: that is a mistake in the caller, said at once."""
    if not connection.in_atomic_block:
        raise TransactionManagementError("Check a stock quota inside the transaction that creates the stock.")
    list(Workspace.objects.select_for_update(no_key=True).filter(id=workspace_id).values_list("id"))


def limit_of(plan: Plan, name: str) -> int | None:
    return getattr(plan, QUOTAS[name].plan_field)


def _refuse(name: str, limit: int, usage: int, adding: int) -> QuotaExceeded:
    quota = QUOTAS[name]
    reset = metering.period_bounds(name)[1] if quota.metered else None
    if quota.metered:
        period = metering.METRICS[name]
        when = "tomorrow (UTC)" if period == metering.DAILY else "on the 1st of next month (UTC)"
        message = (
            f"Your plan allows {_counted(quota, limit)} per {period}; {_figure(quota, usage)} "
            f"{'is' if usage == 1 else 'are'} used. It resets {when}."
        )
    else:
        message = (
            f"Your plan allows {_counted(quota, limit)}; this workspace has {_figure(quota, usage)}"
            + (f" and this would add {_figure(quota, adding)}" if adding > 1 else "")
            + ". Delete some or move to a larger plan."
        )
    return QuotaExceeded(name, limit=limit, usage=usage, reset=reset, message=message)


def check(workspace: Workspace, name: str, adding: int = 1, *, plan: Plan | None = None) -> None:
    """Raise QuotaExceeded unless the workspace has room for `adding` more of quota `name`. A limited stock
    quota is checked holding the workspace (hold_workspace): call it in the transaction that creates."""
    limit = limit_of(plan or plan_for(workspace), name)
    if limit is None:
        return
    if not QUOTAS[name].metered:
        hold_workspace(workspace.id)
    usage = usage_of(workspace.id, name)
    if usage + adding > limit:
        raise _refuse(name, limit, usage, adding)


def room(workspace: Workspace, name: str, *, plan: Plan | None = None) -> int | None:
    """How many more of quota `name` the plan allows now; None: no limit. Like check, it holds the
    workspace for a limited stock quota: call it in the transaction that creates what it admits."""
    limit = limit_of(plan or plan_for(workspace), name)
    if limit is None:
        return None
    if not QUOTAS[name].metered:
        hold_workspace(workspace.id)
    return max(limit - usage_of(workspace.id, name), 0)


def check_sources_create(
    workspace: Workspace,
    *,
    sources: int = 1,
    documents: int = 1,
    incoming_bytes: int = 0,
    fetches: bool = False,
) -> None:
    """Before a source (or several uploads) is stored: room for the sources, at least their first
    documents, their bytes, some chunks, and for a source that fetches pages, some crawl pages today."""
    plan = plan_for(workspace)
    check(workspace, "sources", sources, plan=plan)
    check(workspace, "documents", documents, plan=plan)
    check(workspace, "stored_bytes", incoming_bytes, plan=plan)
    check(
        workspace, "chunks", 1, plan=plan
    )  # no chunk count is known before indexing: some room must be left
    if fetches:
        check(workspace, "crawl_pages", 1, plan=plan)


def take_up_to(workspace: Workspace, name: str, amount: int) -> int:
    """Count up to `amount` units of a metered quota, as many as the plan allows; returns how many."""
    limit = limit_of(plan_for(workspace), name)
    return metering.take(workspace_id=workspace.id, metric=name, amount=amount, limit=limit)[0]


def take(workspace: Workspace, name: str, amount: int = 1) -> int:
    """Like take_up_to, but granting none raises QuotaExceeded (and nothing is counted)."""
    limit = limit_of(plan_for(workspace), name)
    granted, before = metering.take(workspace_id=workspace.id, metric=name, amount=amount, limit=limit)
    if amount and not granted:
        raise _refuse(name, int(limit or 0), before, amount)
    return granted


def check_members(workspace: Workspace, adding: int = 1) -> None:
    """For adding a member or sending an invitation (pending invitations count as `adding`)."""
    check(workspace, "members", adding)


def check_agents(workspace: Workspace) -> None:
    check(workspace, "agents", 1)
