"""Search, discovery and the workspace's defaults over the REST API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from config.after_response import after_response
from config.redis_cache import Alongside, get_many_alongside, shares_redis_url
from retrieval.services import SearchParams, search_workspace
from sources.api.base import WorkspaceAPIView
from sources.api.serializers import (
    ErrorSerializer,
    SearchQuerySerializer,
    SearchResultSerializer,
    WorkspaceSettingsSerializer,
    passage_json,
)
from sources.api.throttling import ApiKeyRateThrottle
from sources.models import Workspace

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 429: ErrorSerializer}


class SearchView(WorkspaceAPIView):
    """A search counts its caller's rate in the same Redis round trip as its cache lookup: a cached answer
    then costs one round trip to Redis, not two."""

    _counting: Alongside | None = None

    def check_throttles(self, request: Request) -> None:
        throttles = self.get_throttles()
        if len(throttles) == 1 and isinstance(throttles[0], ApiKeyRateThrottle) and shares_redis_url():
            counting = throttles[0].counting(request)
            if counting is not None:
                self._counting = throttles[0].refuse_if_over(counting)  # sent by get()
                return
        super().check_throttles(request)

    def _count_alone(self) -> None:
        if self._counting is not None:
            get_many_alongside([], self._counting)

    @extend_schema(
        operation_id="search",
        parameters=[SearchQuerySerializer],
        responses={200: SearchResultSerializer, **ERRORS},
        summary="Passages of the workspace's knowledge that answer a query, best first.",
    )
    def get(self, request: Request) -> Response:
        params = SearchQuerySerializer(data=request.query_params)
        if not params.is_valid():
            self._count_alone()  # an invalid search counts as a request, and may be refused as one
            raise ValidationError(params.errors)
        data = params.validated_data
        deferred: list = []
        result = search_workspace(
            workspace_id=self.workspace.id,
            query=data["q"],
            params=SearchParams(
                top_k=data["top_k"],
                min_score=data.get("min_score"),
                mode=data["mode"],
                filters=data.get("filters"),
                rerank=data.get("rerank"),
                bm25_k1=self.workspace.bm25_k1,
                bm25_b=self.workspace.bm25_b,
            ),
            defer=deferred.append,
            alongside=self._counting,
        )
        body: dict[str, Any] = {"results": [passage_json(p) for p in result.passages]}
        if result.stale_chunks:
            # A model change is detected, not papered over: these chunks need a reindex to be found.
            body["reindex_needed"] = {
                "chunks": result.stale_chunks,
                "message": "Some passages were embedded by another model; reindex their sources.",
            }
        response = Response(body, headers={"X-Search-Cache": "hit" if result.cached else "miss"})
        for work in deferred:  # storing a new answer in the search cache: not on the caller's time
            after_response(response, work)
        return response


class DiscoverRequestSerializer(serializers.Serializer):
    domain = serializers.CharField(max_length=300, help_text='"example.com", or any address on the site.')

    def validate_domain(self, value: str) -> str:
        # A value no URL can be made of (a stray bracket, a control character) is the client's to correct;
        # discover() would raise ValueError on it, which answered 500 (found by the schema fuzz test).
        from ingestion.crawl.urls import site_root

        try:
            site_root(value)
        except ValueError:
            raise serializers.ValidationError("This is not a web address or a domain name.") from None
        return value


DiscoveredPages = inline_serializer(
    "DiscoveredPages",
    {
        "pages": inline_serializer(
            "DiscoveredPage",
            {
                "url": serializers.CharField(),
                "title": serializers.CharField(),
                "found_by": serializers.CharField(help_text="robots, sitemap, feed or a common path."),
            },
            many=True,
        )
    },
)


class DiscoverView(WorkspaceAPIView):
    """Find a domain's pages (robots.txt, sitemaps, common paths) for the admin to pick from."""

    @extend_schema(
        operation_id="discover",
        request=DiscoverRequestSerializer,
        responses={200: DiscoveredPages, **ERRORS},
        summary="Pages of a site found through robots.txt, sitemaps and common paths.",
    )
    def post(self, request: Request) -> Response:
        from checked_http.errors import FetchError
        from ingestion.crawl.discover import discover
        from ingestion.crawl.fetch import fetch_policy

        body = DiscoverRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            pages = discover(body.validated_data["domain"], fetch_policy())
        except FetchError as exc:
            raise ValidationError({"domain": [exc.message]}) from exc
        return Response({"pages": [{"url": p.url, "title": p.title, "found_by": p.found_by} for p in pages]})


class WorkspaceSettingsView(WorkspaceAPIView):
    """The workspace's defaults: the schedule new sources that can be synced again get, and keyword
    search's BM25 k1 and b (read by every search, so a change applies at once, without a reindex)."""

    @extend_schema(operation_id="workspace_retrieve", responses={200: WorkspaceSettingsSerializer, **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(self._settings(self.workspace))

    @staticmethod
    def _settings(workspace: Workspace) -> dict:
        return {
            "default_schedule": workspace.default_schedule,
            "bm25_k1": workspace.bm25_k1,
            "bm25_b": workspace.bm25_b,
        }

    @extend_schema(
        operation_id="workspace_update",
        request=WorkspaceSettingsSerializer,
        responses={200: WorkspaceSettingsSerializer, **ERRORS},
    )
    def patch(self, request: Request) -> Response:
        body = WorkspaceSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if body.validated_data:
            Workspace.objects.filter(id=self.workspace.id).update(**body.validated_data)
        return Response(self._settings(Workspace.objects.get(id=self.workspace.id)))
