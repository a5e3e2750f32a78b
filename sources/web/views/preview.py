"""The admin's live preview of an agent: the same chat, plus the retrieved passages.

Showing passage text is a server-side decision: only a signed-in owner or admin of the agent's
workspace reaches this view, and nothing in the request body can turn `knowledge.hits` on elsewhere.
"""

from __future__ import annotations

import json
import uuid

from django.contrib.auth.decorators import login_required
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponseBase, JsonResponse
from django.views.decorators.http import require_POST

from agents import services, turn
from agents.models import Conversation
from config.streaming import event_stream_response, served_async
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web.lookups import SignedInRequest, agent_for


@served_async
@login_required
@require_POST
def preview_chat_stream(request: SignedInRequest, agent_id: int) -> HttpResponseBase:
    agent, membership = agent_for(request.user, agent_id)  # another workspace's agent is a 404
    if not membership.can_manage:
        return JsonResponse({"detail": "Only owners and admins can preview the agent."}, status=403)
    try:
        body = json.loads(request.body or b"{}")
        message = str(body["message"]).strip()[:4000]
    except (ValueError, KeyError, TypeError, AttributeError):
        return JsonResponse({"message": ["This field is required."]}, status=400)
    if not message:
        return JsonResponse({"message": ["This field is required."]}, status=400)
    try:
        services.admit_chat_message(agent=agent)
    except QuotaExceeded as exc:
        return JsonResponse({"detail": exc.message, "quota": exc.as_error()}, status=exc.status)
    # The preview remembers its conversation like the widget does; each signed-in person has their own.
    visitor_id = f"preview:{request.user.pk}"
    conversation_id = body.get("conversation_id")
    if conversation_id:
        conversation = None
        if (conversation_uuid := _uuid_or_none(conversation_id)) is not None:  # else none has that id
            with workspace_scope(agent.workspace_id):
                conversation = Conversation.objects.filter(
                    id=conversation_uuid, agent=agent, visitor_id=visitor_id
                ).first()
        if conversation is None:
            return JsonResponse({"detail": "No such conversation."}, status=404)
    else:
        conversation = services.start_conversation(agent=agent, visitor_id=visitor_id)
    with workspace_scope(agent.workspace_id):
        events = turn.run_turn(
            agent=agent,
            conversation=conversation,
            user_text=message,
            audiences=[],
            show_hits=True,
            show_errors=True,
        )
    return event_stream_response(events, asgi=isinstance(request, ASGIRequest))


def _uuid_or_none(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
