from django.urls import path

from agents.api import views

urlpatterns = [
    # The widget's public API, keyed by public key ("ag_..."): never all digits, and always with a suffix, so
    # it never meets the workspace API's agents/<int> (sources/api/urls.py).
    path("agents/<str:public_key>/chat", views.ChatView.as_view(), name="agent-chat"),
    path("agents/<str:public_key>/chat/stream", views.ChatStreamView.as_view(), name="agent-chat-stream"),
    path(
        "agents/<str:public_key>/conversations/<uuid:conversation_id>",
        views.ConversationView.as_view(),
        name="agent-conversation",
    ),
    path("agents/<str:public_key>/widget/init", views.WidgetInitView.as_view(), name="agent-widget-init"),
]
