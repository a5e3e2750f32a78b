"""The documents API: customers push documents to an agent under their own ids, keep them in step and
remove them. Views parse, authorise and shape answers; ingestion/push/documents.py does the work.

Writes answer 202 with the document's status (`pending` until the index queue has embedded it), or 200
when the content is unchanged (nothing stored, nothing embedded). Another workspace's agent is a 404.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from ingestion.push import documents as push
from retrieval.stores.base import InvalidFilter, validate_filters
from sources.api.base import WorkspaceAPIView
from sources.api.errors import invalid
from sources.api.listing import Q_PARAMETER, NewestFirst, filter_documents, page_of
from sources.api.serializers import ErrorDetailSerializer, ErrorSerializer
from sources.models import Document, Status

# --- shapes --------------------------------------------------------------------------------------------


class DocumentBodySerializer(serializers.Serializer):
    """What a PUT sends (validated by ingestion.push.inputs.PushedDocument; this is its published shape)."""

    title = serializers.CharField(required=False, help_text="Defaults to the HTML title or first # heading.")
    text = serializers.CharField(required=False, help_text="Plain text. Exactly one of text/markdown/html.")
    markdown = serializers.CharField(required=False, help_text="Markdown, indexed as written.")
    html = serializers.CharField(required=False, help_text="HTML; its main content is extracted.")
    url = serializers.URLField(required=False, help_text="The page citations link to.")
    metadata = serializers.DictField(
        required=False, help_text="Flat keys: a string, number, boolean or list each; search filters on them."
    )
    audiences = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text='Who may retrieve it (visitor token audiences); omitted: ["public"].',
    )


class BatchItemSerializer(DocumentBodySerializer):
    external_id = serializers.CharField(help_text="Your id for the document, unique per agent.")


class BatchRequestSerializer(serializers.Serializer):
    documents = BatchItemSerializer(many=True)


class PushedDocumentSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    id = serializers.IntegerField()
    # A declared field, which DRF's metaclass collects; the name clashes with Field.source only in the stubs.
    source = serializers.IntegerField(source="source_id")  # type: ignore[assignment]
    title = serializers.CharField()
    url = serializers.CharField()
    metadata = serializers.SerializerMethodField()
    audiences = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=Status.choices)
    error = serializers.CharField()
    chars = serializers.SerializerMethodField()
    content_hash = serializers.CharField(help_text="Changes when anything that is indexed changes.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_metadata(self, document: Document) -> dict[str, Any]:
        return {k: v for k, v in document.metadata.items() if k != "audience"}

    def get_audiences(self, document: Document) -> list[str]:
        return list(document.metadata.get("audience") or ["public"])

    def get_chars(self, document: Document) -> int:
        return len(document.text)


class PutResultSerializer(PushedDocumentSerializer):
    result = serializers.ChoiceField(choices=["created", "updated", "unchanged"])


BatchResultSerializer = inline_serializer(
    "PushBatchResult",
    {
        "results": inline_serializer(
            "PushBatchItem",
            {
                "index": serializers.IntegerField(),
                "external_id": serializers.CharField(),
                "status": serializers.IntegerField(help_text="202 queued, 200 unchanged, 400/413 refused."),
                "result": serializers.ChoiceField(choices=["created", "updated", "unchanged", "invalid"]),
                "document": PushedDocumentSerializer(required=False),
                "error": ErrorDetailSerializer(required=False),
            },
            many=True,
        ),
        "counts": serializers.DictField(child=serializers.IntegerField()),
    },
)

AGENT = OpenApiParameter("agent_id", int, OpenApiParameter.PATH, description="The agent's id.")
EXTERNAL_ID = OpenApiParameter(
    "external_id", str, OpenApiParameter.PATH, description="Your id for the document; may contain slashes."
)
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No such agent (or document) in your workspace.")
QUOTA = OpenApiResponse(
    ErrorSerializer,
    description="The plan's documents, sources or stored bytes are used up (`quota_exceeded`, with `quota`).",
)


def _outcome_status(outcome: push.Outcome) -> int:
    if outcome.result == "invalid":
        return 413 if outcome.too_large else 400
    return 200 if outcome.result == "unchanged" else 202


# --- views ---------------------------------------------------------------------------------------------


class DocumentPagination(NewestFirst):
    ordering = "external_id"


class AgentDocumentListView(WorkspaceAPIView):
    @extend_schema(
        operation_id="agent_documents_list",
        parameters=[
            AGENT,
            OpenApiParameter(
                "metadata",
                OpenApiTypes.STR,
                description='Metadata to match, as JSON: {"type": "guide"} (a list matches any of it).',
            ),
            OpenApiParameter("status", OpenApiTypes.STR, enum=list(Status.values)),
            Q_PARAMETER,
            OpenApiParameter("cursor", OpenApiTypes.STR, description="From the previous page's `next`."),
            OpenApiParameter("page_size", OpenApiTypes.INT, description="1 to 1000; 100 by default."),
        ],
        responses={
            200: page_of("PushedDocumentPage", PushedDocumentSerializer(many=True)),
            404: NOT_FOUND,
        },
    )
    def get(self, request: Request, agent_id: int) -> Response:
        metadata = _metadata_filter(request.query_params.get("metadata"))
        wanted_status = request.query_params.get("status", "")
        if wanted_status and wanted_status not in Status.values:
            raise ValidationError({"status": [f"One of {', '.join(Status.values)}."]})
        try:
            documents = push.pushed_documents(
                workspace=self.workspace, agent_id=agent_id, metadata=metadata, status=wanted_status
            )
        except push.AgentNotFound as exc:
            raise Http404 from exc
        documents = filter_documents(documents, request)
        paginator = DocumentPagination()
        page = paginator.paginate_queryset(documents, request, view=self)
        return paginator.get_paginated_response(PushedDocumentSerializer(page, many=True).data)


def _metadata_filter(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
        if not isinstance(value, dict):
            raise ValueError("not an object")
        validate_filters(value)
    except (ValueError, InvalidFilter) as exc:
        raise ValidationError({"metadata": [f'A JSON object such as {{"type": "guide"}}: {exc}']}) from exc
    return value


class AgentDocumentView(WorkspaceAPIView):
    def _document(self, agent_id: int, external_id: str) -> Document:
        try:
            documents = push.pushed_documents(workspace=self.workspace, agent_id=agent_id)
        except push.AgentNotFound as exc:
            raise Http404 from exc
        document = documents.filter(external_id=external_id).first()
        if document is None:
            raise Http404
        return document

    @extend_schema(
        operation_id="agent_document_retrieve",
        parameters=[AGENT, EXTERNAL_ID],
        responses={200: PushedDocumentSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, agent_id: int, external_id: str) -> Response:
        return Response(PushedDocumentSerializer(self._document(agent_id, external_id)).data)

    @extend_schema(
        operation_id="agent_document_put",
        parameters=[AGENT, EXTERNAL_ID],
        request=DocumentBodySerializer,
        responses={
            202: OpenApiResponse(PutResultSerializer, description="Stored and queued for indexing."),
            200: OpenApiResponse(PutResultSerializer, description="Unchanged: nothing stored or embedded."),
            400: OpenApiResponse(ErrorSerializer, description="A field to correct, by field name."),
            402: QUOTA,
            404: NOT_FOUND,
            413: OpenApiResponse(
                ErrorSerializer,
                description="The document is over TEXT_SOURCE_MAX_CHARS, "
                "or the request over PUSH_MAX_REQUEST_BYTES.",
            ),
        },
    )
    def put(self, request: Request, agent_id: int, external_id: str) -> Response:
        try:
            [outcome] = push.put_documents(
                workspace=self.workspace, agent_id=agent_id, items=[(external_id, request.data)]
            )
        except push.AgentNotFound as exc:
            raise Http404 from exc
        if outcome.result == "invalid":
            return invalid(outcome.errors, status_code=_outcome_status(outcome))
        body = {**PushedDocumentSerializer(outcome.document).data, "result": outcome.result}
        return Response(body, status=_outcome_status(outcome))

    @extend_schema(
        operation_id="agent_document_delete",
        parameters=[AGENT, EXTERNAL_ID],
        responses={204: OpenApiResponse(description="Removed, with its chunks."), 404: NOT_FOUND},
    )
    def delete(self, request: Request, agent_id: int, external_id: str) -> Response:
        try:
            removed = push.delete_documents(
                workspace=self.workspace, agent_id=agent_id, external_ids=[external_id]
            )
        except push.AgentNotFound as exc:
            raise Http404 from exc
        if not removed:
            raise Http404
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentDocumentBatchView(WorkspaceAPIView):
    @extend_schema(
        operation_id="agent_documents_batch",
        parameters=[AGENT],
        request=BatchRequestSerializer,
        responses={
            200: OpenApiResponse(BatchResultSerializer, description="Each document answered on its own."),
            400: OpenApiResponse(ErrorSerializer, description='The body is not {"documents": [...]}.'),
            402: QUOTA,
            404: NOT_FOUND,
            413: OpenApiResponse(ErrorSerializer, description="Too many documents, or too large a request."),
        },
    )
    def post(self, request: Request, agent_id: int) -> Response:
        documents = request.data.get("documents") if isinstance(request.data, dict) else None
        if not isinstance(documents, list):
            raise ValidationError({"documents": ['Send {"documents": [...]}, each with an external_id.']})
        limit = settings.PUSH_BATCH_MAX_DOCUMENTS
        if len(documents) > limit:
            message = f"At most {limit} documents per batch; this one has {len(documents)}. Split it."
            return invalid({"documents": [message]}, status_code=413)
        items = [
            (item.get("external_id"), {k: v for k, v in item.items() if k != "external_id"})
            if isinstance(item, dict)
            else (None, item)
            for item in documents
        ]
        try:
            outcomes = push.put_documents(workspace=self.workspace, agent_id=agent_id, items=items)
        except push.AgentNotFound as exc:
            raise Http404 from exc
        results = []
        counts = {"created": 0, "updated": 0, "unchanged": 0, "invalid": 0}
        for index, outcome in enumerate(outcomes):
            counts[outcome.result] += 1
            result: dict[str, Any] = {
                "index": index,
                "external_id": outcome.external_id,
                "status": _outcome_status(outcome),
                "result": outcome.result,
            }
            if outcome.document is not None:
                result["document"] = PushedDocumentSerializer(outcome.document).data
            else:
                result["error"] = invalid(outcome.errors, status_code=result["status"]).data["error"]
            results.append(result)
        return Response({"results": results, "counts": counts})
