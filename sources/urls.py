from allauth.account import views as account_views
from django.urls import path
from django.views.generic import RedirectView

from sources.web.views import access as access_views
from sources.web.views import agents as agent_views
from sources.web.views import integrations as integration_views
from sources.web.views import invitations as invitation_views
from sources.web.views import pages as page_views
from sources.web.views import preview as preview_views
from sources.web.views import settings as settings_views
from sources.web.views import source_settings as source_settings_views
from sources.web.views import sources as views

urlpatterns = [
    path("", RedirectView.as_view(url="/app/", permanent=False)),
    # Sign-in moved to allauth's /accounts/login/; old links and bookmarks still get there.
    path("login/", RedirectView.as_view(pattern_name="account_login", query_string=True), name="login"),
    path("logout/", account_views.logout, name="logout"),
    path("app/", agent_views.app_home, name="app-home"),
    path("app/welcome", invitation_views.welcome, name="app-welcome"),
    path("app/workspaces/new", invitation_views.workspace_new, name="app-workspace-new"),
    path("invitations/<str:token>/", invitation_views.invitation_page, name="invitation"),
    path(
        "app/invitations/<int:invitation_id>/accept",
        invitation_views.invitation_accept,
        name="app-invitation-accept",
    ),
    path("app/workspace/invitations/new", access_views.invitation_new, name="app-invitation-new"),
    path(
        "app/workspace/invitations/<int:invitation_id>/revoke",
        access_views.invitation_revoke,
        name="app-invitation-revoke",
    ),
    path("app/workspace/settings", settings_views.workspace_settings, name="app-workspace-settings"),
    path("app/workspace", agent_views.workspace_switch, name="app-workspace-switch"),
    path("app/workspace/people", access_views.workspace_page, name="app-workspace"),
    path("app/workspace/members/add", access_views.member_add, name="app-member-add"),
    path("app/workspace/members/<int:membership_id>/role", access_views.member_role, name="app-member-role"),
    path(
        "app/workspace/members/<int:membership_id>/remove",
        access_views.member_remove,
        name="app-member-remove",
    ),
    path("app/workspace/keys/new", access_views.api_key_new, name="app-api-key-new"),
    path(
        "app/workspace/visitor-secret", settings_views.visitor_secret_reveal, name="app-visitor-secret-reveal"
    ),
    path(
        "app/workspace/visitor-secret/rotate",
        settings_views.visitor_secret_rotate,
        name="app-visitor-secret-rotate",
    ),
    path("app/workspace/keys/<int:key_id>/revoke", access_views.api_key_revoke, name="app-api-key-revoke"),
    path("app/integrations", integration_views.integrations_page, name="app-integrations"),
    path(
        "app/integrations/<str:provider>/connect",
        integration_views.integration_connect,
        name="app-integration-connect",
    ),
    path(
        "app/integrations/<str:provider>/callback",
        integration_views.integration_callback,
        name="app-integration-callback",
    ),
    path(
        "app/integrations/<int:connection_id>/disconnect",
        integration_views.integration_disconnect,
        name="app-integration-disconnect",
    ),
    path(
        "app/agents/<int:agent_id>/sources/from/<str:provider>",
        integration_views.integration_pick,
        name="app-integration-pick",
    ),
    path("app/agents/new", agent_views.agent_new, name="app-agent-new"),
    path("app/agents/<int:agent_id>/", agent_views.agent_home, name="app-agent"),
    path("app/agents/<int:agent_id>/sources", views.agent_sources, name="app-agent-sources"),
    path("app/agents/<int:agent_id>/sources.json", views.agent_sources_json, name="app-agent-sources-json"),
    path("app/agents/<int:agent_id>/sources/bulk", views.sources_bulk, name="app-sources-bulk"),
    path("app/agents/<int:agent_id>/sources/add", views.source_add, name="app-source-add"),
    path(
        "app/agents/<int:agent_id>/chunks/preview",
        source_settings_views.text_chunk_preview,
        name="app-text-chunk-preview",
    ),
    path("app/agents/<int:agent_id>/discover", views.discover, name="app-discover"),
    path("app/agents/<int:agent_id>/discover/add", views.discover_add, name="app-discover-add"),
    path("app/agents/<int:agent_id>/test", agent_views.agent_test, name="app-agent-test"),
    path(
        "app/agents/<int:agent_id>/preview/chat/stream",
        preview_views.preview_chat_stream,
        name="agent-preview-chat",
    ),
    path("app/agents/<int:agent_id>/health", agent_views.agent_health, name="app-agent-health"),
    path("app/agents/<int:agent_id>/settings", agent_views.agent_settings, name="app-agent-settings"),
    path("app/agents/<int:agent_id>/delete", agent_views.agent_delete, name="app-agent-delete"),
    path(
        "app/sources/<int:source_id>/reindex",
        views.source_reprocess,
        {"action": "reindex"},
        name="app-source-reindex",
    ),
    path(
        "app/sources/<int:source_id>/recrawl",
        views.source_reprocess,
        {"action": "recrawl"},
        name="app-source-recrawl",
    ),
    path("app/sources/<int:source_id>/delete", views.source_delete, name="app-source-delete"),
    path("app/sources/<int:source_id>/reupload", views.source_reupload, name="app-source-reupload"),
    path("app/sources/<int:source_id>/preview", views.source_preview_page, name="app-source-preview"),
    path(
        "app/sources/<int:source_id>/settings",
        source_settings_views.source_settings,
        name="app-source-settings",
    ),
    path(
        "app/sources/<int:source_id>/chunks/preview",
        source_settings_views.source_chunk_preview,
        name="app-source-chunk-preview",
    ),
    path("app/sources/<int:source_id>/failed", page_views.source_failed_pages, name="app-source-failed"),
    path("app/sources/<int:source_id>/skipped", page_views.source_skipped_pages, name="app-source-skipped"),
    path(
        "app/sources/<int:source_id>/retry-failed", views.source_retry_failed, name="app-source-retry-failed"
    ),
]
