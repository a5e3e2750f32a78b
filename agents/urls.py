from django.urls import path

from agents import views

urlpatterns = [
    path(
        "app/agents/<int:agent_id>/preview/chat/stream", views.preview_chat_stream, name="agent-preview-chat"
    ),
]
