from django.urls import path, register_converter

from sources.api import agents, documents, reprocess, search, usage
from sources.api import sources as source_views


class ExternalIdConverter:
    """Any text, line breaks included (Django's `path` stops at one): an external id is checked in one place,
    ingestion.push.inputs.check_external_id, so a PUT and a batch item refuse the same ids the same way."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ExternalIdConverter, "external_id")

urlpatterns = [
    path("sources", source_views.SourceListView.as_view(), name="source-list"),
    path("sources/<int:source_id>", source_views.SourceDetailView.as_view(), name="source-detail"),
    path("sources/<int:source_id>/recrawl", reprocess.SourceRecrawlView.as_view(), name="source-recrawl"),
    path("sources/<int:source_id>/reindex", reprocess.SourceReindexView.as_view(), name="source-reindex"),
    path(
        "sources/<int:source_id>/retry-failed",
        reprocess.SourceRetryFailedView.as_view(),
        name="source-retry-failed",
    ),
    path(
        "sources/<int:source_id>/documents",
        source_views.SourceDocumentsView.as_view(),
        name="source-documents",
    ),
    path(
        "sources/<int:source_id>/documents/<int:document_id>/index-anyway",
        reprocess.DocumentIndexAnywayView.as_view(),
        name="source-document-index-anyway",
    ),
    path("workspace", search.WorkspaceSettingsView.as_view(), name="workspace-settings"),
    path("workspace/usage", usage.WorkspaceUsageView.as_view(), name="workspace-usage"),
    path("sources/<int:source_id>/preview", source_views.SourcePreviewView.as_view(), name="source-preview"),
    path("search", search.SearchView.as_view(), name="search"),
    path("discover", search.DiscoverView.as_view(), name="discover"),
    # Agents by integer id, for API keys and the web UI's session. The widget's API under agents/ is keyed by
    # public key ("ag_...", agents/api/urls.py), never all digits, always with a suffix: the two never meet.
    path("agents", agents.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:agent_id>", agents.AgentDetailView.as_view(), name="agent-detail"),
    path("agents/<int:agent_id>/doctor", agents.AgentDoctorView.as_view(), name="agent-doctor"),
    # The documents API: an agent's documents by the caller's external id.
    path(
        "agents/<int:agent_id>/documents",
        documents.AgentDocumentListView.as_view(),
        name="agent-document-list",
    ),
    path(
        "agents/<int:agent_id>/documents:batch",
        documents.AgentDocumentBatchView.as_view(),
        name="agent-document-batch",
    ),
    path(
        "agents/<int:agent_id>/documents/<external_id:external_id>",
        documents.AgentDocumentView.as_view(),
        name="agent-document",
    ),
]
