"""A workspace's sources over the REST API: list and add (JSON, or files), read, change and delete, and
what a source holds (its pages, a preview). Views parse and authorise; services and selectors do the work.
Work queued again on a source (recrawl, reindex, retry, index anyway) is reprocess.py."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import connection, transaction
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ingestion import chunk_settings, labels, lifecycle
from ingestion.crawl.urls import normalize_url
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import KINDS, get_kind
from ingestion.kinds.upload import UploadKind, UploadTooLarge
from sources.api.base import WorkspaceAPIView
from sources.api.errors import ApiError, invalid
from sources.api.listing import (
    PAGE_PARAMETERS,
    Q_PARAMETER,
    SOURCE_FILTERS,
    NewestFirst,
    OldestFirst,
    filter_documents,
    filter_sources,
    page_of,
)
from sources.api.serializers import (
    DocumentSerializer,
    ErrorSerializer,
    SourceCreateSerializer,
    SourceSerializer,
    SourceUpdateSerializer,
    SourceUploadSerializer,
    UploadedSourceSerializer,
)
from sources.models import Source, Status

ENVELOPE_FIELDS = {"kind", "title", "agent", "schedule", "audiences", "metadata"}
LABEL_FIELDS = ("audiences", "metadata")
ERRORS = {401: ErrorSerializer, 402: ErrorSerializer, 403: ErrorSerializer, 429: ErrorSerializer}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No such source in your workspace.")}
SOURCE_ID = OpenApiParameter("source_id", int, OpenApiParameter.PATH, description="The source's id.")


def source_or_404(source_id: int) -> Source:
    source = Source.objects.filter(id=source_id).first()
    if source is None:  # another workspace's source looks exactly like a missing one
        raise Http404
    return source


def _labels(data: Any, *, from_form: bool = False) -> dict[str, Any]:
    """The request's audiences and metadata as Source.config entries (a form sends them as text)."""
    audiences, metadata = data.get("audiences"), data.get("metadata")
    if from_form:
        audiences = [a for a in str(audiences).split(",")] if audiences not in (None, "") else None
        if metadata not in (None, ""):
            try:
                metadata = json.loads(str(metadata))
            except ValueError as exc:
                raise ValidationError(
                    {"metadata": ['A JSON object, such as {"product": "billing"}.']}
                ) from exc
        else:
            metadata = None
    try:
        return labels.labels_config(audiences=audiences, metadata=metadata)
    except KindError as exc:
        raise ValidationError(exc.errors) from exc


def _same_address(address: str) -> str:
    """What two spellings of one page share: HTTPS://HOST:443/a#top and https://host/a are one address."""
    return normalize_url(address) or address


def _existing_with_address(*, agent_id: int, kind_name: str, payload: dict) -> tuple[str, Source | None]:
    """The agent's source of this kind at the same address (a page, a sitemap, a feed), if any, however
    either is spelt. An invalid payload has no address: source_create then names what to correct."""
    kind = get_kind(kind_name)
    try:
        config = kind.validate(payload)
    except (KindError, ValueError):
        return "", None
    address = kind.address(Source(kind=kind_name, config=kind.settings_of(config)))
    if not address:
        return "", None
    wanted = _same_address(address)
    candidates = Source.objects.filter(agent_id=agent_id, kind=kind_name).only("id", "kind", "config")
    existing = next((s for s in candidates if _same_address(kind.address(s)) == wanted), None)
    return (kind.address(existing) if existing is not None else address), existing


def _lock(*parts: Any) -> None:
    """Serialise creates of the same thing until the transaction ends (a retry racing its original)."""
    key = int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


class SourceListView(WorkspaceAPIView):
    @extend_schema(
        operation_id="sources_list",
        parameters=[*SOURCE_FILTERS, *PAGE_PARAMETERS],
        responses={200: page_of("SourcePage", SourceSerializer(many=True)), 400: ErrorSerializer, **ERRORS},
        summary="The workspace's sources, newest first, a page at a time.",
    )
    def get(self, request: Request) -> Response:
        sources = filter_sources(Source.objects.all(), request)
        paginator = NewestFirst()
        page = paginator.paginate_queryset(sources, request, view=self)
        return paginator.get_paginated_response(SourceSerializer(page, many=True).data)

    @extend_schema(
        operation_id="sources_create",
        request={
            "application/json": SourceCreateSerializer,
            "multipart/form-data": SourceUploadSerializer,
        },
        responses={
            201: OpenApiResponse(
                SourceSerializer,
                description="Queued (JSON). Multipart: a list, one per file (UploadedSource).",
            ),
            400: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="The agent already has this address (`duplicate`: `existing_id` is its source), "
                "or a request with this Idempotency-Key is still running (`idempotency_in_progress`).",
            ),
            413: OpenApiResponse(ErrorSerializer, description="A file or the upload is over the limits."),
            **ERRORS,
        },
        summary="Add a source: text, a page, a site, a feed (JSON) or files (multipart).",
    )
    def post(self, request: Request) -> Response:
        if request.content_type.startswith("multipart/"):
            return self._upload(request)
        envelope = SourceCreateSerializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        data = envelope.validated_data
        source_labels = _labels(request.data)
        payload = {k: v for k, v in request.data.items() if k not in ENVELOPE_FIELDS}
        with transaction.atomic():
            if data["kind"] in KINDS:
                _lock(self.workspace.id, data["agent"], data["kind"])
                address, existing = _existing_with_address(
                    agent_id=data["agent"], kind_name=data["kind"], payload=payload
                )
                if existing is not None:
                    raise ApiError(
                        409,
                        "duplicate",
                        f"This agent already has {address} (source {existing.id}); recrawl that one instead.",
                        existing_id=existing.id,
                    )
            try:
                source = lifecycle.source_create(
                    workspace=self.workspace,
                    agent_id=data["agent"],
                    kind=data["kind"],
                    title=data.get("title", ""),
                    payload=payload,
                    schedule=data.get("schedule"),
                    labels=source_labels,
                )
            except KindError as exc:
                raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)

    def _upload(self, request: Request) -> Response:
        """One or many files (field `file`), each becoming an upload source; a file whose content the agent
        already has is stored all the same (it may be wanted under another title) and reported."""
        try:
            sources = lifecycle.upload_create(
                workspace=self.workspace,
                agent_id=request.data.get("agent"),
                files=request.FILES.getlist("file"),
                title=request.data.get("title", ""),
                labels=_labels(request.data, from_form=True),
            )
        except UploadTooLarge as exc:
            return invalid({"file": [exc.message]}, status_code=413)
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        for source in sources:
            same = Source.objects.filter(
                agent_id=source.agent_id, kind=UploadKind.name, state__sha256=source.state.get("sha256")
            )
            # Read by UploadedSourceSerializer: an attribute of this response's instances, not a column.
            source.duplicate_of = sorted(  # type: ignore[attr-defined]
                same.exclude(id=source.id).values_list("id", flat=True)
            )
        return Response(UploadedSourceSerializer(sources, many=True).data, status=status.HTTP_201_CREATED)


class SourceDetailView(WorkspaceAPIView):
    @extend_schema(
        operation_id="sources_retrieve",
        parameters=[SOURCE_ID],
        responses={200: SourceSerializer, **NOT_FOUND, **ERRORS},
    )
    def get(self, request: Request, source_id: int) -> Response:
        return Response(SourceSerializer(source_or_404(source_id)).data)

    @extend_schema(
        operation_id="sources_destroy",
        parameters=[SOURCE_ID],
        responses={
            204: OpenApiResponse(description="Deleted, with its pages, passages and files."),
            **NOT_FOUND,
            **ERRORS,
        },
    )
    def delete(self, request: Request, source_id: int) -> Response:
        lifecycle.source_delete(source=source_or_404(source_id))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="sources_partial_update",
        parameters=[SOURCE_ID],
        request=SourceUpdateSerializer,
        responses={200: SourceSerializer, 400: ErrorSerializer, **NOT_FOUND, **ERRORS},
        summary="Change the title, schedule, pause, audiences, metadata or chunking (the last three index it "
        "again).",
    )
    def patch(self, request: Request, source_id: int) -> Response:
        source = source_or_404(source_id)
        body = SourceUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        changes = {k: v for k, v in data.items() if k not in (*LABEL_FIELDS, *chunk_settings.FIELDS)}
        wanted_labels = {k: v for k, v in data.items() if k in LABEL_FIELDS}
        # Fields not sent keep their value; null resets one to the deployment's default.
        chunking = None
        if set(chunk_settings.FIELDS) & set(data):
            kept = {k: v for k, v in source.config.items() if k in chunk_settings.FIELDS}
            chunking = {**kept, **{k: data[k] for k in chunk_settings.FIELDS if k in data}}
        try:
            labels.labels_config(**wanted_labels)  # checked before anything is written
            if chunking is not None:
                chunk_settings.validated(chunking)
            source = lifecycle.source_update(source=source, **changes)
            lifecycle.settings_then_labels(
                source=source,
                chunking=chunking,
                set_labels=lambda: (
                    bool(wanted_labels) and lifecycle.source_set_labels(source=source, **wanted_labels)
                ),
            )
            source.refresh_from_db()
        except KindError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(SourceSerializer(source).data)


class SourceDocumentsView(WorkspaceAPIView):
    """A source's pages, filtered by ?status (e.g. failed, skipped), a page at a time."""

    @extend_schema(
        operation_id="sources_documents_list",
        parameters=[
            SOURCE_ID,
            OpenApiParameter("status", str, enum=list(Status.values)),
            Q_PARAMETER,
            *PAGE_PARAMETERS,
        ],
        responses={
            200: page_of("SourceDocumentPage", DocumentSerializer(many=True)),
            400: ErrorSerializer,
            **NOT_FOUND,
            **ERRORS,
        },
    )
    def get(self, request: Request, source_id: int) -> Response:
        documents = filter_documents(source_or_404(source_id).documents.all(), request)
        paginator = OldestFirst()
        page = paginator.paginate_queryset(documents, request, view=self)
        return paginator.get_paginated_response(DocumentSerializer(page, many=True).data)


SourcePreview = inline_serializer(
    "SourcePreview",
    {
        "source": inline_serializer(
            "SourcePreviewSource",
            {
                "id": serializers.IntegerField(),
                "title": serializers.CharField(),
                "kind": serializers.CharField(),
                "status": serializers.CharField(),
            },
        ),
        "documents_total": serializers.IntegerField(),
        "chunks_total": serializers.IntegerField(),
        "documents": serializers.ListField(child=serializers.DictField(), help_text="The first documents."),
        "chunks": serializers.ListField(child=serializers.DictField(), help_text="A sample of passages."),
    },
)


class SourcePreviewView(WorkspaceAPIView):
    """The extracted documents and a sample of chunks, so bad extraction can be spotted."""

    @extend_schema(
        operation_id="sources_preview",
        parameters=[SOURCE_ID],
        responses={200: SourcePreview, **NOT_FOUND, **ERRORS},
    )
    def get(self, request: Request, source_id: int) -> Response:
        from sources.selectors import source_preview

        return Response(source_preview(source=source_or_404(source_id)))
