"""Agents over the REST API, by integer id: list, create, read, change settings, delete.

Settings are validated by the settings page's own form (sources.web.agent_forms.AgentSettingsForm), so the
API and the page accept and refuse exactly the same values: origins, the model base URL held to the outbound
address policy (config/outbound.py), the context template's placeholders. The model API key is write-only, as
on the page (config/secret_forms.py): omitted keeps it, a value replaces it, null removes it; answers only
say whether one is set. Deleting goes through agents.services.agent_delete, so no source, vector point or
file is left behind. The doctor's report is here too. (The widget's public API, keyed by an agent's public
key, is agents/api/views.py.)
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agents import doctor, services
from agents.models import Agent
from sources.api.base import WorkspaceAPIView
from sources.api.listing import PAGE_PARAMETERS, NewestFirst, page_of
from sources.api.serializers import ErrorSerializer
from sources.web.agent_forms import AgentSettingsForm, origin_of

#: What the settings page sets, in the form's own names (AgentSettingsForm.Meta.fields).
SETTINGS = tuple(AgentSettingsForm.Meta.fields)
BOOLEANS = {"hybrid", "offtopic_in_user_language", "semantic_cache"}
#: Numbers that may be null: null means the default (no floor, the deployment's fusion weights and cache).
NULLABLE = {
    "min_score",
    "vector_weight",
    "keyword_weight",
    "cache_threshold",
    "cache_max_entries",
    "cache_ttl",
}


class OriginField(serializers.CharField):
    """One item of `allowed_origins`: text naming an origin, as the settings page reads each of its lines.

    A number is refused, not turned into text: the items are joined into the form's lines."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise ValidationError("Not a string: write an origin, like https://www.example.com.")
        if len(data.splitlines()) > 1:
            raise ValidationError("One origin per item, without line breaks.")
        origin = super().to_internal_value(data)
        origin_of(origin.rstrip("/"))  # a Django ValidationError here becomes this item's error
        return origin


#: Empty means the built-in answerer, so the URL is not declared `format: uri`: "" is not a URI.
BASE_URL_HELP = "An OpenAI-compatible API's base URL; empty: the built-in answerer."


class AgentSerializer(serializers.ModelSerializer):
    """An agent and its settings; `llm_api_key_set` says whether a model API key is saved."""

    public_key = serializers.CharField(read_only=True, help_text="The widget's key (public, not a secret).")
    llm_api_key_set = serializers.SerializerMethodField()
    allowed_origins = serializers.ListField(child=serializers.CharField())
    llm_base_url = serializers.CharField(read_only=True, help_text=BASE_URL_HELP)
    sources_count = serializers.SerializerMethodField()

    def get_llm_api_key_set(self, agent: Agent) -> bool:
        return bool(agent.llm_api_key)

    def get_sources_count(self, agent: Agent) -> int:
        return agent.sources.count()

    class Meta:
        model = Agent
        fields = [
            "id",
            "public_key",
            *(name for name in SETTINGS if name != "llm_api_key"),
            "llm_api_key_set",
            "sources_count",
            "created_at",
        ]
        read_only_fields = fields


class AgentWriteSerializer(serializers.Serializer):
    """The settings a request may send; every field optional on PATCH. Validated by the settings form."""

    name = serializers.CharField(max_length=200)
    system_prompt = serializers.CharField(allow_blank=True)
    retrieval_mode = serializers.ChoiceField(choices=Agent.RetrievalMode.choices)
    top_k = serializers.IntegerField(min_value=1, max_value=20)
    min_score = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)
    hybrid = serializers.BooleanField()
    fusion = serializers.ChoiceField(
        choices=Agent.Fusion.choices, help_text="Empty: the deployment's default."
    )
    vector_weight = serializers.FloatField(allow_null=True, min_value=0.0, max_value=10.0)
    keyword_weight = serializers.FloatField(allow_null=True, min_value=0.0, max_value=10.0)
    candidates = serializers.IntegerField(min_value=1, max_value=500)
    rerank_pool = serializers.IntegerField(min_value=1, max_value=200)
    reranker = serializers.CharField(
        allow_blank=True, help_text="A reranker alias of the deployment; empty: none."
    )
    context_budget = serializers.IntegerField(min_value=500, max_value=200_000)
    semantic_cache = serializers.BooleanField()
    cache_threshold = serializers.FloatField(allow_null=True, min_value=0.5, max_value=1.0)
    cache_max_entries = serializers.IntegerField(allow_null=True, min_value=1, max_value=10000)
    cache_ttl = serializers.IntegerField(allow_null=True, min_value=1, max_value=86400)
    scope_rules = serializers.CharField(allow_blank=True)
    context_template = serializers.CharField(allow_blank=True, help_text="Must contain {context}.")
    offtopic_reply = serializers.CharField(allow_blank=True)
    offtopic_in_user_language = serializers.BooleanField()
    allowed_origins = serializers.ListField(child=OriginField(), help_text="https://www.example.com")
    llm_base_url = serializers.CharField(allow_blank=True, help_text=BASE_URL_HELP)
    llm_model = serializers.CharField(allow_blank=True)
    llm_api_key = serializers.CharField(
        allow_null=True, write_only=True, help_text="Write-only. A value replaces the key; null removes it."
    )
    embedding_provider = serializers.ChoiceField(
        choices=Agent.EmbeddingProvider.choices,
        help_text="deployment, or model: the model provider's /embeddings (base URL and key above). A "
        "change indexes the agent's sources again.",
    )
    embedding_model = serializers.CharField(allow_blank=True, help_text="e.g. text-embedding-3-small")


def _form_data(agent: Agent, body: dict[str, Any]) -> dict[str, Any]:
    """The settings form's input: the agent's current settings overlaid with what the request sends."""
    unknown = sorted(set(body) - set(SETTINGS))
    if unknown:
        raise ValidationError({name: ["Not a setting of an agent."] for name in unknown})
    if "name" in body and not str(body["name"] or "").strip():
        raise ValidationError({"name": ["A name is required."]})
    checked = AgentWriteSerializer(data=body, partial=True)
    checked.is_valid(raise_exception=True)
    current = {name: getattr(agent, name) for name in SETTINGS}
    data: dict[str, Any] = {**current, "llm_api_key": ""}  # empty keeps the saved key (SecretFieldsFormMixin)
    for name, value in body.items():
        data[name] = value
    if "llm_api_key" in body and body["llm_api_key"] is None:
        data["llm_api_key"], data["clear_llm_api_key"] = "", True
    data["allowed_origins"] = "\n".join(data["allowed_origins"] or [])
    for name in NULLABLE:
        if data[name] is None:
            data[name] = ""
    for name in BOOLEANS:  # a form reads an absent checkbox as off
        if not data[name]:
            data.pop(name)
    return data


def _save(agent: Agent, body: dict[str, Any]) -> Agent:
    form = AgentSettingsForm(data=_form_data(agent, body), instance=agent)
    if not form.is_valid():
        raise ValidationError({name: [str(e) for e in errors] for name, errors in form.errors.items()})
    return form.save()


AGENT_ID = OpenApiParameter("agent_id", int, OpenApiParameter.PATH, description="The agent's id.")
ERRORS = {401: ErrorSerializer, 402: ErrorSerializer, 403: ErrorSerializer, 429: ErrorSerializer}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No such agent in your workspace.")}


class AgentListView(WorkspaceAPIView):
    @extend_schema(
        operation_id="agents_list",
        parameters=[OpenApiParameter("q", str, description="Words in the agent's name."), *PAGE_PARAMETERS],
        responses={200: page_of("AgentPage", AgentSerializer(many=True)), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        agents = Agent.objects.all()
        query = (request.query_params.get("q") or "").strip()
        if query:
            agents = agents.filter(name__icontains=query)
        paginator = NewestFirst()
        page = paginator.paginate_queryset(agents, request, view=self)
        return paginator.get_paginated_response(AgentSerializer(page, many=True).data)

    @extend_schema(
        operation_id="agents_create",
        request=AgentWriteSerializer,
        responses={201: AgentSerializer, 400: ErrorSerializer, **ERRORS},
        summary="Create an agent: a name, and any settings (the rest keep their defaults).",
    )
    def post(self, request: Request) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        if not str(body.get("name") or "").strip():
            raise ValidationError({"name": ["A name is required."]})
        if "\x00" in str(body["name"]):  # PostgreSQL text cannot hold NUL: the insert below would fail (500)
            raise ValidationError({"name": ["Null characters are not allowed."]})
        with transaction.atomic():
            agent = services.agent_create(workspace=self.workspace, name=str(body["name"]))
            agent = _save(agent, dict(body))
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailView(WorkspaceAPIView):
    def _agent(self, agent_id: int) -> Agent:
        agent = Agent.objects.filter(id=agent_id).first()
        if agent is None:  # another workspace's agent looks exactly like a missing one
            raise Http404
        return agent

    @extend_schema(
        operation_id="agents_retrieve",
        parameters=[AGENT_ID],
        responses={200: AgentSerializer, **NOT_FOUND, **ERRORS},
    )
    def get(self, request: Request, agent_id: int) -> Response:
        return Response(AgentSerializer(self._agent(agent_id)).data)

    @extend_schema(
        operation_id="agents_partial_update",
        parameters=[AGENT_ID],
        request=AgentWriteSerializer,
        responses={200: AgentSerializer, 400: ErrorSerializer, **NOT_FOUND, **ERRORS},
        summary="Change settings; fields left out keep their values.",
    )
    def patch(self, request: Request, agent_id: int) -> Response:
        agent = self._agent(agent_id)
        body = request.data if isinstance(request.data, dict) else {}
        return Response(AgentSerializer(_save(agent, dict(body))).data)

    @extend_schema(
        operation_id="agents_destroy",
        parameters=[AGENT_ID],
        responses={
            204: OpenApiResponse(description="Deleted with its sources, passages, files and conversations."),
            **NOT_FOUND,
            **ERRORS,
        },
    )
    def delete(self, request: Request, agent_id: int) -> Response:
        services.agent_delete(agent=self._agent(agent_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class FindingSerializer(serializers.Serializer):
    check = serializers.CharField(help_text="Which check found it: embedder, model, sources, gate, ...")
    severity = serializers.ChoiceField(choices=["error", "warning", "info"])
    problem = serializers.CharField(help_text="What is wrong, for people.")
    action = serializers.CharField(help_text="What to do about it.")
    detail = serializers.CharField(help_text="The raw error, for operators (may be empty).")


class DoctorSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "warning", "error"], help_text="The worst finding.")
    checks = serializers.ListField(child=serializers.CharField(), help_text="The checks that ran.")
    findings = FindingSerializer(many=True)


class AgentDoctorView(AgentDetailView):
    """Read-only, so every member may ask; the model check spends one token of the agent's provider."""

    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="agents_doctor",
        parameters=[AGENT_ID],
        responses={200: DoctorSerializer, **NOT_FOUND, **ERRORS},
        summary="What is wrong with an agent and its deployment, and what to do about each finding.",
    )
    def get(self, request: Request, agent_id: int) -> Response:
        return Response(doctor.diagnose(agent=self._agent(agent_id)))
