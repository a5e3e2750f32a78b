"""The admin's live preview of an agent: the same chat, plus the retrieved passages.

Showing passage text is a server-side decision: only a signed-in owner or admin of the agent's
workspace reaches this view, and nothing in the request body can turn `knowledge.hits` on elsewhere.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_POST

from agents import services
from agents.api.views import event_stream_response
from agents.models import Agent
from sources.models import Membership
from sources.tenancy import workspace_scope


@login_required
@require_POST
def preview_chat_stream(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = Agent.unscoped.filter(id=agent_id).first()
    membership = (
        Membership.unscoped.filter(user=request.user, workspace_id=agent.workspace_id).first()
        if agent
        else None
    )
    if agent is None or membership is None:
        raise Http404  # another workspace's agent looks like a missing one
    if not membership.can_manage:
        return JsonResponse({"detail": "Only owners and admins can preview the agent."}, status=403)
    try:
        body = json.loads(request.body or b"{}")
        message = str(body["message"]).strip()[:4000]
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"message": ["This field is required."]}, status=400)
    if not message:
        return JsonResponse({"message": ["This field is required."]}, status=400)
    conversation = services.start_conversation(agent=agent, visitor_id=f"preview:{request.user.pk}")
    with workspace_scope(agent.workspace_id):
        events = services.run_turn(
            agent=agent, conversation=conversation, user_text=message, audiences=[], show_hits=True
        )
    return event_stream_response(events)
