"""Work queued again on one source over the REST API: recrawl, reindex, retry its failed pages, index a
skipped page anyway. Each answers 202 with what was queued."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ingestion import lifecycle
from ingestion.kinds.config import KindError
from sources.api.base import WorkspaceAPIView
from sources.api.serializers import (
    DocumentSerializer,
    ErrorSerializer,
    SourceSerializer,
)
from sources.api.sources import ERRORS, NOT_FOUND, SOURCE_ID, source_or_404
from sources.models import Document

DOCUMENT_ID = OpenApiParameter(
    "document_id", int, OpenApiParameter.PATH, description="The id of one of the source's documents."
)


ACCEPTED = {202: SourceSerializer, 400: ErrorSerializer, **NOT_FOUND, **ERRORS}


class SourceRecrawlView(WorkspaceAPIView):
    @extend_schema(operation_id="sources_recrawl", parameters=[SOURCE_ID], request=None, responses=ACCEPTED)
    def post(self, request: Request, source_id: int) -> Response:
        source = source_or_404(source_id)
        if not lifecycle.source_recrawl(source=source):
            raise ValidationError(
                {"source": ["Only web sources that are not already crawling can be recrawled."]}
            )
        source.refresh_from_db()
        return Response(SourceSerializer(source).data, status=status.HTTP_202_ACCEPTED)


class SourceReindexView(WorkspaceAPIView):
    @extend_schema(operation_id="sources_reindex", parameters=[SOURCE_ID], request=None, responses=ACCEPTED)
    def post(self, request: Request, source_id: int) -> Response:
        source = source_or_404(source_id)
        if not lifecycle.source_reindex(source=source):
            raise ValidationError({"source": ["This source is already being processed."]})
        source.refresh_from_db()
        return Response(SourceSerializer(source).data, status=status.HTTP_202_ACCEPTED)


class RetriedSerializer(SourceSerializer):
    retried = serializers.IntegerField(read_only=True, help_text="How many failed pages were queued.")

    class Meta(SourceSerializer.Meta):
        fields = [*SourceSerializer.Meta.fields, "retried"]
        read_only_fields = fields


class SourceRetryFailedView(WorkspaceAPIView):
    """Queue a source's failed pages again: fetched again for web sources, indexed again otherwise."""

    @extend_schema(
        operation_id="sources_retry_failed",
        parameters=[SOURCE_ID],
        request=None,
        responses={**ACCEPTED, 202: RetriedSerializer},
    )
    def post(self, request: Request, source_id: int) -> Response:
        source = source_or_404(source_id)
        queued = lifecycle.retry_failed(source=source)
        if not queued:
            raise ValidationError({"source": ["This source has no failed pages, or it is being processed."]})
        source.refresh_from_db()
        return Response({**SourceSerializer(source).data, "retried": queued}, status=status.HTTP_202_ACCEPTED)


class DocumentIndexAnywayView(WorkspaceAPIView):
    """Index a skipped page after all: it is fetched again and kept however little text it has, and stays
    kept through re-syncs (`keep_short`)."""

    @extend_schema(
        operation_id="sources_documents_index_anyway",
        parameters=[SOURCE_ID, DOCUMENT_ID],
        request=None,
        responses={
            202: OpenApiResponse(DocumentSerializer, description="Queued: fetched again and indexed."),
            400: OpenApiResponse(
                ErrorSerializer,
                description="The page is not skipped, its source is being processed, or it is a search page"
                " with no text of its own.",
            ),
            404: OpenApiResponse(ErrorSerializer, description="No such source or page in your workspace."),
            **ERRORS,
        },
        summary="Index a skipped page anyway.",
    )
    def post(self, request: Request, source_id: int, document_id: int) -> Response:
        document = Document.objects.filter(id=document_id, source_id=source_or_404(source_id).id).first()
        if document is None:
            raise Http404
        try:
            lifecycle.index_anyway(document=document)
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        document.refresh_from_db()
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)
