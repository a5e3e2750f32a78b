"""The REST API for sources and search. Views parse and authorise; services and selectors do the work."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from ingestion import lifecycle
from ingestion.kinds.base import KindError
from ingestion.kinds.upload import UploadTooLarge
from retrieval.services import SearchParams, search_workspace
from sources.api.base import WorkspaceAPIView
from sources.api.serializers import (
    DocumentSerializer,
    PassageSerializer,
    SearchQuerySerializer,
    SourceCreateSerializer,
    SourceSerializer,
    SourceUpdateSerializer,
    WorkspaceSettingsSerializer,
)
from sources.models import Source, Workspace


class DocumentPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


ENVELOPE_FIELDS = {"kind", "title", "agent", "schedule"}
DOCUMENT_STATUSES = {"pending", "crawling", "indexing", "done", "failed"}


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
        if request.content_type.startswith("multipart/"):
            return self._upload(request)
        envelope = SourceCreateSerializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        payload = {k: v for k, v in request.data.items() if k not in ENVELOPE_FIELDS}
        try:
            source = lifecycle.source_create(
                workspace=self.workspace,
                agent_id=envelope.validated_data["agent"],
                kind=envelope.validated_data["kind"],
                title=envelope.validated_data.get("title", ""),
                payload=payload,
                schedule=envelope.validated_data.get("schedule"),
            )
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)

    def _upload(self, request: Request) -> Response:
        """One or many files (field `file`), each becoming an upload source."""
        from django.conf import settings

        ceiling = settings.UPLOAD_MAX_FILE_BYTES * settings.UPLOAD_MAX_FILES_PER_REQUEST + 1_000_000
        if int(request.META.get("CONTENT_LENGTH") or 0) > ceiling:
            return Response({"file": ["The upload is larger than we accept."]}, status=413)
        try:
            sources = lifecycle.upload_create(
                workspace=self.workspace,
                agent_id=request.data.get("agent"),
                files=request.FILES.getlist("file"),
                title=request.data.get("title", ""),
            )
        except UploadTooLarge as exc:
            return Response({"file": [exc.message]}, status=413)
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(sources, many=True).data, status=status.HTTP_201_CREATED)


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
        lifecycle.source_delete(source=self._get(source_id))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=SourceUpdateSerializer, responses=SourceSerializer)
    def patch(self, request: Request, source_id: int) -> Response:
        """Change the title, the re-sync schedule, pause or resume, and whether paused means unsearched."""
        source = self._get(source_id)
        body = SourceUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            source = lifecycle.source_update(source=source, **body.validated_data)
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(source).data)


class SourceDocumentsView(WorkspaceAPIView):
    """A source's pages, filtered by ?status (e.g. failed), paginated by ?page and ?page_size."""

    @extend_schema(responses=DocumentSerializer(many=True))
    def get(self, request: Request, source_id: int) -> Response:
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            raise Http404
        documents = source.documents.order_by("id")
        wanted = request.query_params.get("status")
        if wanted is not None:
            if wanted not in DOCUMENT_STATUSES:
                raise ValidationError({"status": [f"One of: {', '.join(sorted(DOCUMENT_STATUSES))}."]})
            documents = documents.filter(status=wanted)
        paginator = DocumentPages()
        page = paginator.paginate_queryset(documents, request, view=self)
        return paginator.get_paginated_response(DocumentSerializer(page, many=True).data)


class WorkspaceSettingsView(WorkspaceAPIView):
    """The workspace's defaults: the schedule new sources that can be synced again get."""

    @extend_schema(responses=WorkspaceSettingsSerializer)
    def get(self, request: Request) -> Response:
        return Response({"default_schedule": self.workspace.default_schedule})

    @extend_schema(request=WorkspaceSettingsSerializer, responses=WorkspaceSettingsSerializer)
    def patch(self, request: Request) -> Response:
        body = WorkspaceSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        Workspace.objects.filter(id=self.workspace.id).update(**body.validated_data)
        return Response(body.validated_data)


class SearchView(WorkspaceAPIView):
    @extend_schema(parameters=[SearchQuerySerializer], responses=PassageSerializer(many=True))
    def get(self, request: Request) -> Response:
        params = SearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        result = search_workspace(
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
        body = {"results": PassageSerializer(result.passages, many=True).data}
        if result.stale_chunks:
            # A model change is detected, not papered over: these chunks need a reindex to be found.
            body["reindex_needed"] = {
                "chunks": result.stale_chunks,
                "message": "Some passages were embedded by another model; reindex their sources.",
            }
        return Response(body, headers={"X-Search-Cache": "hit" if result.cached else "miss"})


class DiscoverRequestSerializer(serializers.Serializer):
    domain = serializers.CharField(max_length=300)


class DiscoverView(WorkspaceAPIView):
    """Find a domain's pages (robots.txt, sitemaps, common paths) for the admin to pick from."""

    @extend_schema(request=DiscoverRequestSerializer)
    def post(self, request: Request) -> Response:
        from ingestion.crawl.discover import discover
        from ingestion.crawl.errors import FetchError
        from ingestion.crawl.fetch import fetch_policy

        body = DiscoverRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            pages = discover(body.validated_data["domain"], fetch_policy())
        except FetchError as exc:
            raise ValidationError({"domain": [exc.message]}) from exc
        return Response({"pages": [{"url": p.url, "title": p.title, "found_by": p.found_by} for p in pages]})


class SourceRecrawlView(WorkspaceAPIView):
    def post(self, request: Request, source_id: int) -> Response:
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            raise Http404
        if not lifecycle.source_recrawl(source=source):
            raise ValidationError(
                {"source": ["Only web sources that are not already crawling can be recrawled."]}
            )
        source.refresh_from_db()
        return Response(SourceSerializer(source).data, status=status.HTTP_202_ACCEPTED)


class SourceReindexView(WorkspaceAPIView):
    def post(self, request: Request, source_id: int) -> Response:
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            raise Http404
        if not lifecycle.source_reindex(source=source):
            raise ValidationError({"source": ["This source is already being processed."]})
        source.refresh_from_db()
        return Response(SourceSerializer(source).data, status=status.HTTP_202_ACCEPTED)


class SourceRetryFailedView(WorkspaceAPIView):
    """Queue a source's failed pages again: fetched again for web sources, indexed again otherwise."""

    def post(self, request: Request, source_id: int) -> Response:
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            raise Http404
        queued = lifecycle.retry_failed(source=source)
        if not queued:
            raise ValidationError({"source": ["This source has no failed pages, or it is being processed."]})
        source.refresh_from_db()
        return Response({**SourceSerializer(source).data, "retried": queued}, status=status.HTTP_202_ACCEPTED)


class SourcePreviewView(WorkspaceAPIView):
    """The extracted documents and a sample of chunks, so bad extraction can be spotted."""

    def get(self, request: Request, source_id: int) -> Response:
        from sources.selectors import source_preview

        source = Source.objects.filter(id=source_id).first()
        if source is None:
            raise Http404
        return Response(source_preview(source=source))
