"""The REST API for sources and search. Views parse and authorise; services and selectors do the work."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from retrieval.services import SearchParams, search_passages
from sources import services
from sources.api.base import WorkspaceAPIView
from sources.api.serializers import (
    PassageSerializer,
    SearchQuerySerializer,
    SourceCreateSerializer,
    SourceSerializer,
)
from sources.kinds import KindError
from sources.models import Source

ENVELOPE_FIELDS = {"kind", "title", "agent"}


class SourceListView(WorkspaceAPIView):
    @extend_schema(responses=SourceSerializer(many=True))
    def get(self, request: Request) -> Response:
        sources = Source.objects.order_by("-created_at")
        agent = request.query_params.get("agent")
        if agent is not None:
            if not agent.isdigit():
                raise ValidationError({"agent": ["Must be an integer id."]})
            sources = sources.filter(agent_id=int(agent))
        return Response(SourceSerializer(sources[:500], many=True).data)

    @extend_schema(request=SourceCreateSerializer, responses={201: SourceSerializer})
    def post(self, request: Request) -> Response:
        envelope = SourceCreateSerializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        payload = {k: v for k, v in request.data.items() if k not in ENVELOPE_FIELDS}
        try:
            source = services.source_create(
                workspace=self.workspace,
                agent_id=envelope.validated_data["agent"],
                kind=envelope.validated_data["kind"],
                title=envelope.validated_data.get("title", ""),
                payload=payload,
            )
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)


class SourceDetailView(WorkspaceAPIView):
    def _get(self, source_id: int) -> Source:
        source = Source.objects.filter(id=source_id).first()
        if source is None:  # another workspace's source looks exactly like a missing one
            raise Http404
        return source

    @extend_schema(responses=SourceSerializer)
    def get(self, request: Request, source_id: int) -> Response:
        return Response(SourceSerializer(self._get(source_id)).data)

    def delete(self, request: Request, source_id: int) -> Response:
        services.source_delete(source=self._get(source_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SearchView(WorkspaceAPIView):
    @extend_schema(parameters=[SearchQuerySerializer], responses=PassageSerializer(many=True))
    def get(self, request: Request) -> Response:
        params = SearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        passages = search_passages(
            workspace_id=self.workspace.id,
            query=data["q"],
            params=SearchParams(
                top_k=data["top_k"],
                min_score=data.get("min_score"),
                mode=data["mode"],
                filters=data.get("filters"),
                rerank=data.get("rerank"),
            ),
        )
        return Response({"results": PassageSerializer(passages, many=True).data})
