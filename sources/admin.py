"""The operators' Django admin: it sees every workspace, so it reads through the unscoped managers."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from sources.models import ApiKey, Chunk, Document, Membership, Source, Workspace


class UnscopedAdmin(admin.ModelAdmin):
    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return self.model.unscoped.all()


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]


@admin.register(Membership)
class MembershipAdmin(UnscopedAdmin):
    list_display = ["user", "workspace", "role"]
    list_filter = ["role", "workspace"]


@admin.register(ApiKey)
class ApiKeyAdmin(UnscopedAdmin):
    list_display = ["prefix", "name", "workspace", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash"]


@admin.register(Source)
class SourceAdmin(UnscopedAdmin):
    list_display = ["title", "kind", "workspace", "status", "pages_done", "pages_total", "updated_at"]
    list_filter = ["workspace", "kind", "status"]
    search_fields = ["title"]
    readonly_fields = ["error_detail"]
    raw_id_fields = ["agent"]


@admin.register(Document)
class DocumentAdmin(UnscopedAdmin):
    list_display = ["title", "url", "workspace", "status", "updated_at"]
    list_filter = ["workspace", "status"]
    search_fields = ["url", "title"]
    raw_id_fields = ["source"]


@admin.register(Chunk)
class ChunkAdmin(UnscopedAdmin):
    list_display = ["id", "document", "position", "workspace"]
    list_filter = ["workspace"]
    exclude = ["embedding"]
    raw_id_fields = ["document", "source"]
