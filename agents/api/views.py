"""The public API the widget calls, keyed by the agent's public key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextvars import Token
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents import services
from agents.api import auth
from agents.models import Agent, Conversation, Message
from agents.turn import run_turn
from agents.visitor import Visitor
from config.streaming import event_stream_response, served_async
from sources.api.errors import error_body
from sources.api.serializers import ErrorSerializer
from sources.tenancy import activate_workspace, deactivate_workspace


class ChatRequestSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=4000, trim_whitespace=True)
    conversation_id = serializers.UUIDField(required=False, allow_null=True)

    def validate_message(self, value: str) -> str:
        if len(value) > settings.WIDGET_MAX_MESSAGE_CHARS:
            raise serializers.ValidationError(f"At most {settings.WIDGET_MAX_MESSAGE_CHARS} characters.")
        return value


class CitationSerializer(serializers.Serializer):
    """A source an answer cites (not a workspace's Source of knowledge)."""

    number = serializers.IntegerField()
    title = serializers.CharField()
    url = serializers.URLField(allow_null=True)


SearchShownSerializer = inline_serializer(
    "SearchShown",
    {
        "call_id": serializers.CharField(help_text="The search's id; the scope gate's own search is 'gate'."),
        "query": serializers.CharField(),
        "hits": inline_serializer(
            "PassageShown",
            {
                "title": serializers.CharField(),
                "url": serializers.CharField(allow_null=True),
                "score": serializers.FloatField(),
                "text": serializers.CharField(),
            },
            many=True,
        ),
    },
    many=True,
    required=False,
    help_text="Only for a visitor whose signed token carries `passages: true` (the host's signed-in staff): "
    "each search of the turn with its passages, the gate's included. Never for anyone else.",
)


class ChatResponseSerializer(serializers.Serializer):
    answer = serializers.CharField()
    sources = CitationSerializer(many=True)
    conversation_id = serializers.UUIDField()
    metadata = serializers.DictField()
    searches = SearchShownSerializer


ConversationSerializer = inline_serializer(
    "Conversation",
    {
        "conversation_id": serializers.UUIDField(),
        "messages": inline_serializer(
            "ConversationMessage",
            {
                "role": serializers.ChoiceField(choices=["user", "assistant"]),
                "content": serializers.CharField(),
                "sources": CitationSerializer(many=True),
                "created_at": serializers.DateTimeField(),
            },
            many=True,
        ),
    },
)
WidgetSettingsSerializer = inline_serializer(
    "WidgetSettings",
    {
        "name": serializers.CharField(),
        "show_sources": serializers.BooleanField(),
        "page_queued": serializers.BooleanField(help_text="The page was queued as a source (auto sources)."),
        "accent_color": serializers.CharField(help_text="#rrggbb"),
        "position": serializers.ChoiceField(choices=["right", "left"]),
        "greeting": serializers.CharField(allow_blank=True),
        "launcher_label": serializers.CharField(allow_blank=True),
    },
)
PUBLIC_KEY = OpenApiParameter("public_key", str, OpenApiParameter.PATH, description="The agent's ag_... key.")
VISITOR_TOKEN = OpenApiParameter(
    "X-Visitor-Token",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="A token the host site signed with the workspace's visitor secret: its audiences widen "
    "what may be retrieved, and its `passages: true` claim shows the passages behind the answer (the "
    "host's signed-in staff). A forged or expired token is refused (401 invalid_visitor_token).",
)
WIDGET_ERRORS = {
    401: OpenApiResponse(ErrorSerializer, description="The visitor token is not valid."),
    403: OpenApiResponse(ErrorSerializer, description="This site (Origin) may not use this agent."),
    404: OpenApiResponse(ErrorSerializer, description="No agent with this key."),
    429: OpenApiResponse(ErrorSerializer, description="Too many requests from this agent or address."),
}
# The operations that take a body; their refusals carry the CORS headers, so the widget can read them.
BODY_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="The body is not valid (fields named in `fields`)."),
    413: OpenApiResponse(
        ErrorSerializer, description="The body is over WIDGET_MAX_REQUEST_BYTES (`limit`, in bytes)."
    ),
    415: OpenApiResponse(ErrorSerializer, description="The body is not JSON (send application/json)."),
}
CHAT_ERRORS = {
    **WIDGET_ERRORS,
    **BODY_ERRORS,
    402: OpenApiResponse(ErrorSerializer, description="The plan's chat messages this month are used up."),
}


class AgentPublicView(APIView):
    """Resolves the agent from the URL, checks origin, size and rate, and scopes the request to the
    agent's workspace. CORS headers go only to allowed origins."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []  # limited per agent and per address instead (auth.check_rate)
    rate_limited = True
    _scope_token: Token | None  # the agent's workspace scope, while the view runs
    # config/body_limits.py leaves over-limit bodies to these views (auth.check_size): its own 413 would
    # go out without the CORS headers, and the widget's page could not read it.
    answers_body_limit = True
    agent: Agent
    visitor: Visitor

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.agent = auth.agent_for_key(kwargs["public_key"])
        self.origin = auth.check_origin(self.agent, request)
        if request.method == "OPTIONS":
            return
        auth.check_size(request)
        if self.rate_limited:
            auth.check_rate(self.agent, request)
        self.visitor = auth.visitor_for(self.agent, request)
        self._scope_token = activate_workspace(self.agent.workspace_id)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        token = getattr(self, "_scope_token", None)
        if token is not None:
            deactivate_workspace(token)
            self._scope_token = None
        if getattr(self, "origin", None):
            response["Access-Control-Allow-Origin"] = self.origin
            response["Access-Control-Allow-Headers"] = "Content-Type, X-Visitor-Token"
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Max-Age"] = "600"
        response["Vary"] = "Origin"
        return super().finalize_response(request, response, *args, **kwargs)

    def conversation(self, conversation_id: uuid.UUID | None) -> Conversation:
        if conversation_id is None:
            return services.start_conversation(agent=self.agent, visitor_id=self.visitor.user_id)
        conversation = Conversation.objects.filter(id=conversation_id, agent=self.agent).first()
        if conversation is None or (
            conversation.visitor_id and conversation.visitor_id != self.visitor.user_id
        ):
            raise exceptions.NotFound("No such conversation.")
        return conversation

    def turn(self, request: Request) -> Iterator[dict]:
        body = ChatRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation_id = body.validated_data.get("conversation_id")
        existing = self.conversation(conversation_id) if conversation_id else None  # a 404 costs nothing
        services.admit_chat_message(agent=self.agent)  # 402 when the plan's messages are used up
        conversation = existing or self.conversation(None)
        return run_turn(
            agent=self.agent,
            conversation=conversation,
            user_text=body.validated_data["message"],
            audiences=self.visitor.audiences,
            # Passage text only for a visitor the host vouched for in a token it signed (agents/visitor.py);
            # nothing in the request body can ask for it.
            show_hits=self.visitor.passages,
        )


@served_async  # waits on the model for the whole turn: not on the web server's fixed thread pool
class ChatView(AgentPublicView):
    @extend_schema(
        request=ChatRequestSerializer,
        parameters=[PUBLIC_KEY, VISITOR_TOKEN],
        responses={
            200: ChatResponseSerializer,
            **CHAT_ERRORS,
            502: OpenApiResponse(ErrorSerializer, description="The model failed."),
        },
        summary="Ask the agent; the whole answer as JSON.",
    )
    def post(self, request: Request, public_key: str) -> Response:
        final: dict = {}
        searches: list[dict] = []
        for event in self.turn(request):
            if event["type"] == "error":
                body = error_body("model_failed", event["message"])
                return Response({**body, "conversation_id": event["conversation_id"]}, status=502)
            if event["type"] == "knowledge.hits":  # only emitted where passages may be shown
                searches.append({k: event[k] for k in ("call_id", "query", "hits")})
            if event["type"] == "done":
                final = event
        answer = {k: final[k] for k in ("answer", "sources", "conversation_id", "metadata")}
        if self.visitor.passages:
            answer["searches"] = searches
        return Response(answer)


@served_async
class ChatStreamView(AgentPublicView):
    @extend_schema(
        request=ChatRequestSerializer,
        parameters=[PUBLIC_KEY, VISITOR_TOKEN],
        responses={
            **CHAT_ERRORS,
            (200, "text/event-stream"): OpenApiResponse(
                description="Events: tool.start, tool.complete, text.delta, error, and a final done "
                "with {answer, sources, conversation_id, metadata}. For a visitor whose signed token carries "
                "`passages: true`, also knowledge.hits (each search's passages, by call_id) and the scope "
                "gate's own search as the call 'gate'."
            ),
        },
        summary="Ask the agent; the answer streamed as Server-Sent Events.",
    )
    def post(self, request: Request, public_key: str) -> StreamingHttpResponse:
        return event_stream_response(self.turn(request), asgi=isinstance(request._request, ASGIRequest))


class ConversationView(AgentPublicView):
    rate_limited = False

    @extend_schema(
        summary="Reload a conversation's messages.",
        parameters=[PUBLIC_KEY, VISITOR_TOKEN],
        responses={200: ConversationSerializer, **WIDGET_ERRORS},
    )
    def get(self, request: Request, public_key: str, conversation_id: uuid.UUID) -> Response:
        conversation = self.conversation(conversation_id)
        messages = conversation.messages.filter(role__in=[Message.Role.USER, Message.Role.ASSISTANT])
        return Response(
            {
                "conversation_id": str(conversation.id),
                "messages": [
                    {"role": m.role, "content": m.content, "sources": m.sources, "created_at": m.created_at}
                    for m in messages
                ],
            }
        )


class WidgetInitSerializer(serializers.Serializer):
    page_url = serializers.URLField(required=False, max_length=2000)


class WidgetInitView(AgentPublicView):
    rate_limited = False

    @extend_schema(
        request=WidgetInitSerializer,
        parameters=[PUBLIC_KEY, VISITOR_TOKEN],
        responses={200: WidgetSettingsSerializer, **WIDGET_ERRORS, **BODY_ERRORS},
        summary="Called when the widget starts: the agent's display settings. With auto sources on, the "
        "page the widget was opened on is queued as a source (deduplicated, rate-limited per agent).",
    )
    def post(self, request: Request, public_key: str) -> Response:
        body = WidgetInitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        queued = False
        if self.agent.auto_sources and body.validated_data.get("page_url"):
            queued = services.queue_auto_source(agent=self.agent, page_url=body.validated_data["page_url"])
        return Response(
            {
                "name": self.agent.name,
                "show_sources": self.agent.sources_display != "none",
                "page_queued": queued,
                "accent_color": self.agent.widget_accent_color,
                "position": self.agent.widget_position,
                "greeting": self.agent.widget_greeting,
                "launcher_label": self.agent.widget_launcher_label,
            }
        )
