from django.urls import path

from agents.api import admin, views

urlpatterns = [
    # The admin API: agents by integer id, for API keys and the web UI's session. The widget's public API
    # below is keyed by public key ("ag_..."), never all digits, and has a suffix, so the two never meet;
    # agents/<int>/documents is the documents API (sources/api/urls.py).
    path("agents", admin.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:agent_id>", admin.AgentDetailView.as_view(), name="agent-detail"),
    path("agents/<int:agent_id>/doctor", admin.AgentDoctorView.as_view(), name="agent-doctor"),
    path("agents/<str:public_key>/chat", views.ChatView.as_view(), name="agent-chat"),
    path("agents/<str:public_key>/chat/stream", views.ChatStreamView.as_view(), name="agent-chat-stream"),
    path(
        "agents/<str:public_key>/conversations/<uuid:conversation_id>",
        views.ConversationView.as_view(),
        name="agent-conversation",
    ),
    path("agents/<str:public_key>/widget/init", views.WidgetInitView.as_view(), name="agent-widget-init"),
]
