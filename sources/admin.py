"""The operators' Django admin: it sees every workspace, so it reads through the unscoped managers.

Actions and deletes go through the same services as the API (reindex, recrawl, cancel, delete with its
vector points and files; an agent's or a workspace's delete too), and a stuck-work view lists what has
been pending or running too long.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.safestring import SafeString

from agents.services import workspace_delete
from ingestion import lifecycle
from ingestion.failures import SKIP_LABELS, counted_skips, skip_label
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import KINDS
from retrieval.cache import searches_changed
from sources.models import (
    ACTIVE_STATUSES,
    ApiKey,
    Chunk,
    Document,
    Invitation,
    Membership,
    Plan,
    Source,
    Workspace,
)
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.usage import RANKABLE, top_workspaces, workspace_usage

if TYPE_CHECKING:
    _ModelAdminMixin = admin.ModelAdmin  # what the mixins below are mixed into
else:
    _ModelAdminMixin = object


class ShownInSearchAdmin(_ModelAdminMixin):
    """An edit here can change what a search answer shows (a title, a URL, a passage's text or metadata),
    so the workspace's cached search answers go."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        searches_changed(obj.workspace_id)


class UnscopedAdmin(admin.ModelAdmin):
    """Tenant rows for operators: listed across workspaces, and each one edited inside its own workspace's
    scope, so its form's related fields (a source's agent, a chunk's document) resolve, and offer only
    rows of the same workspace."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return self.model.unscoped.all()

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        workspace_id = None
        if object_id is not None:
            try:
                rows = self.model.unscoped.filter(pk=unquote(object_id))
                workspace_id = rows.values_list("workspace_id", flat=True).first()
            except (ValueError, ValidationError):
                pass
        if workspace_id is None:  # an unknown id (Django answers it) or a new row
            return super().changeform_view(request, object_id, form_url, extra_context)
        with workspace_scope(workspace_id):
            response = super().changeform_view(request, object_id, form_url, extra_context)
            if isinstance(response, TemplateResponse):
                response.render()  # the widgets read related rows while rendering: inside the scope
        return response


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    """Operators set each plan's limits here; an empty limit is unlimited."""

    list_display = [
        "name",
        "label",
        "max_sources",
        "max_documents",
        "max_stored_bytes",
        "max_chunks",
        "max_crawl_pages_per_day",
        "max_chat_messages_per_month",
        "api_requests_per_minute",
        "max_agents",
        "max_members",
    ]

    def has_delete_permission(self, request: HttpRequest, obj: Plan | None = None) -> bool:
        # Every workspace without a plan of its own is on the default one.
        if obj is not None and obj.name == settings.GROUNDED_DEFAULT_PLAN:
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "plan", "created_at"]
    list_filter = ["plan"]
    search_fields = ["name", "slug"]
    exclude = ["visitor_secret"]
    readonly_fields = ["usage"]

    @admin.display(description="Usage against the plan")
    def usage(self, obj: Workspace) -> SafeString:
        if obj.pk is None:
            return SafeString("")
        html = render_to_string("sources/_workspace_usage.html", {"usage": workspace_usage(obj)})
        return SafeString(html)

    def get_urls(self) -> list:
        top = path("top/", self.admin_site.admin_view(self.top_view), name="sources_workspace_top")
        return [top, *super().get_urls()]

    def top_view(self, request: HttpRequest) -> TemplateResponse:
        """The operators' question: which workspaces use the most, by one quota."""
        by = request.GET.get("by", "documents")
        by = by if by in RANKABLE else "documents"
        rows = [
            {"workspace": w, "figures": [getattr(w, name) for name in RANKABLE]} for w in top_workspaces(by)
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Top workspaces by usage",
            "by": by,
            "rankable": RANKABLE,
            "rows": rows,
        }
        return TemplateResponse(request, "admin/sources/top_workspaces.html", context)

    def delete_model(self, request: HttpRequest, obj: Workspace) -> None:
        # Through the services: Django's cascade would leave vector points, postings and files behind.
        workspace_delete(workspace=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for workspace in queryset:
            workspace_delete(workspace=workspace)


@admin.register(Membership)
class MembershipAdmin(UnscopedAdmin):
    list_display = ["user", "workspace", "role"]
    list_filter = ["role", "workspace"]


@admin.register(ApiKey)
class ApiKeyAdmin(UnscopedAdmin):
    list_display = ["prefix", "name", "workspace", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash"]


@admin.register(Invitation)
class InvitationAdmin(UnscopedAdmin):
    """Read-only: invitations are sent and revoked by the workspace's owners and admins (the members page)."""

    list_display = ["email", "workspace", "role", "created_at", "expires_at", "accepted_at", "revoked_at"]
    list_filter = ["role"]
    search_fields = ["email", "workspace__name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Invitation | None = None) -> bool:
        return False


@admin.action(description="Reindex (chunk and embed again from what is kept)")
def reindex(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    started = sum(lifecycle.source_reindex(source=source) for source in queryset)
    modeladmin.message_user(request, f"Reindexing {started} of {queryset.count()} sources.")


@admin.action(description="Recrawl (web sources)")
def recrawl(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    started = sum(lifecycle.source_recrawl(source=source) for source in queryset)
    modeladmin.message_user(
        request, f"Recrawling {started} of {queryset.count()} sources (web sources only)."
    )


@admin.action(description="Cancel work in progress (marks pending and running pages failed)")
def cancel(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    cancelled = sum(lifecycle.source_cancel(source=source, by=str(request.user)) for source in queryset)
    modeladmin.message_user(request, f"Cancelled {cancelled} sources.")


@admin.action(description="Delete with chunks, vector points and stored files")
def delete_everywhere(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    count = 0
    for source in queryset:
        lifecycle.source_delete(source=source)
        count += 1
    modeladmin.message_user(request, f"Deleted {count} sources.", messages.SUCCESS)


@admin.register(Source)
class SourceAdmin(ShownInSearchAdmin, UnscopedAdmin):
    list_display = [
        "title",
        "kind",
        "workspace",
        "status",
        "pages_done",
        "pages_skipped",
        "pages_failed",
        "pages_total",
        "updated_at",
    ]
    list_filter = ["workspace", "kind", "status"]
    search_fields = ["title", "config__url", "documents__url"]
    readonly_fields = [
        "error",
        "error_detail",
        "notice",
        "skipped_by_reason",
        "created_at",
        "updated_at",
        "indexed_at",
    ]
    raw_id_fields = ["agent"]
    actions = [reindex, recrawl, cancel, delete_everywhere]

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        # The built-in bulk delete would skip the vector store and the files.
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="Skipped pages by reason")
    def skipped_by_reason(self, obj: Source) -> str:
        return counted_skips(obj.pages_skipped_by_reason or {}) or "-"

    def delete_model(self, request: HttpRequest, obj: Source) -> None:
        lifecycle.source_delete(source=obj)

    def get_urls(self) -> list:
        stuck = path("stuck/", self.admin_site.admin_view(self.stuck_view), name="sources_source_stuck")
        return [stuck, *super().get_urls()]

    def stuck_view(self, request: HttpRequest) -> TemplateResponse:
        """Sources and pages pending or running longer than they should."""
        cutoff = timezone.now() - timedelta(seconds=settings.STUCK_AFTER)
        context = {
            **self.admin_site.each_context(request),
            "title": "Stuck work",
            "cutoff": cutoff,
            "sources": Source.unscoped.filter(status__in=ACTIVE_STATUSES, updated_at__lt=cutoff)
            .select_related("workspace")
            .order_by("updated_at")[:500],
            "documents": Document.unscoped.filter(status__in=ACTIVE_STATUSES, updated_at__lt=cutoff)
            .select_related("workspace", "source")
            .order_by("updated_at")[:500],
        }
        return TemplateResponse(request, "admin/sources/stuck.html", context)


class SourceKindFilter(admin.SimpleListFilter):
    """A page's source kind, from the registry: Django's own filter for `source__kind` reads the values
    through the scoped manager, which refuses outside a workspace (the document list answered 500)."""

    title = "source kind"
    parameter_name = "source__kind"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(name, name) for name in sorted(KINDS)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(source__kind=self.value()) if self.value() else queryset


class SkipReasonFilter(admin.SimpleListFilter):
    """Why a skipped page was left out, in words (the reasons are fixed: no query for the values)."""

    title = "skipped as"
    parameter_name = "skip_reason"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(reason, one) for reason, (one, _many) in SKIP_LABELS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(skip_reason=self.value()) if self.value() else queryset


@admin.action(description="Index anyway (skipped pages: fetched again and kept, on every sync after too)")
def index_anyway(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    queued, refused = 0, []
    for document in queryset.order_by("id"):
        try:
            lifecycle.index_anyway(document=document)
            queued += 1
        except KindError as exc:
            refused.append(f"{document.url}: {' '.join(m for ms in exc.errors.values() for m in ms)}")
        except QuotaExceeded as exc:
            refused.append(f"{document.url}: {exc.message}")
    modeladmin.message_user(request, f"Indexing {queued} of {queryset.count()} pages anyway.")
    for reason in refused[:20]:
        modeladmin.message_user(request, reason, messages.WARNING)


@admin.register(Document)
class DocumentAdmin(ShownInSearchAdmin, UnscopedAdmin):
    """Skipped pages (left out on purpose) show why and how much text they had, apart from failed ones."""

    list_display = [
        "title",
        "url",
        "workspace",
        "status",
        "skipped_as",
        "skipped_chars",
        "keep_short",
        "updated_at",
    ]
    list_filter = ["workspace", "status", SkipReasonFilter, "keep_short", SourceKindFilter]
    search_fields = ["url", "title"]
    readonly_fields = [
        "error",
        "error_detail",
        "skip_reason",
        "skipped_chars",
        "content_hash",
        "etag",
        "last_modified",
        "fetched_at",
    ]
    raw_id_fields = ["source"]
    actions = [index_anyway]

    @admin.display(description="Skipped as", ordering="skip_reason")
    def skipped_as(self, obj: Document) -> str:
        return skip_label(obj.skip_reason) if obj.skip_reason else ""


@admin.register(Chunk)
class ChunkAdmin(ShownInSearchAdmin, UnscopedAdmin):
    list_display = ["id", "document", "position", "workspace", "embedding_model"]
    list_filter = ["workspace"]
    search_fields = ["document__url", "document__title"]
    exclude = ["embedding"]
    raw_id_fields = ["document", "source"]
