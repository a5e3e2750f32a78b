"""Cursor pagination and the filters of the API's lists: pages never skip or repeat rows while rows are
added, and a list is never cut short without a `next` link to the rest."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from sources.models import Status

INVALID_CURSOR = "This is not a cursor we gave out; follow the `next` or `previous` link of the page before."


class NewestFirst(CursorPagination):
    """Cursor pages with the total (`count`) that matches the filters, so a client knows what to expect.
    A cursor that was not ours (tampered, truncated, a position of the wrong type) is a 400 naming
    `cursor`: its position is checked against the ordering's field before it reaches the query."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list | None:
        self.count = queryset.count()
        self.model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        try:
            cursor = super().decode_cursor(request)
        except NotFound as exc:  # DRF's answer to a cursor it cannot read
            raise ValidationError({"cursor": [INVALID_CURSOR]}) from exc
        if cursor is not None and cursor.position is not None:
            # The query's text: DRF's stubs declare the position an int, though decode_cursor leaves it a str.
            self._check_position(cursor.position)  # type: ignore[arg-type]
        return cursor

    def _check_position(self, position: str) -> None:
        # self.ordering is the tuple DRF resolved before decoding; the position is of its first field.
        field = self.model._meta.get_field(self.ordering[0].lstrip("-"))
        try:
            if "\x00" in position:  # PostgreSQL refuses NUL in text
                raise DjangoValidationError("NUL")
            field.run_validators(field.to_python(position))
        except DjangoValidationError as exc:
            raise ValidationError({"cursor": [INVALID_CURSOR]}) from exc

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        response.data = {"count": self.count, **response.data}
        return response


class OldestFirst(NewestFirst):
    ordering = "id"


PAGE_PARAMETERS = [
    OpenApiParameter(
        "cursor", OpenApiTypes.STR, description="From the previous page's `next` link; any other is a 400."
    ),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="1 to 1000; 100 by default."),
]


def page_of(name: str, item: serializers.Serializer) -> serializers.Serializer:
    """The schema of a cursor page of `item`s."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(help_text="How many match, on every page together."),
            "next": serializers.URLField(allow_null=True, help_text="The next page; null on the last."),
            "previous": serializers.URLField(allow_null=True),
            "results": item,
        },
    )


def integer_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise ValidationError({name: ["Must be an integer id."]})
    return int(raw)


def status_param(request: Request, name: str = "status") -> str | None:
    wanted = request.query_params.get(name) or None
    if wanted is not None and wanted not in Status.values:
        raise ValidationError({name: [f"One of: {', '.join(Status.values)}."]})
    return wanted


def filter_sources(sources: QuerySet, request: Request) -> QuerySet:
    """?agent=ID, ?kind=, ?status=, ?q= (in the title, the address or a file's name)."""
    from ingestion.kinds.registry import KINDS

    agent = integer_param(request, "agent")
    if agent is not None:
        sources = sources.filter(agent_id=agent)
    kind = request.query_params.get("kind") or None
    if kind is not None:
        if kind not in KINDS:
            raise ValidationError({"kind": [f"One of: {', '.join(sorted(KINDS))}."]})
        sources = sources.filter(kind=kind)
    wanted = status_param(request)
    if wanted is not None:
        sources = sources.filter(status=wanted)
    query = (request.query_params.get("q") or "").strip()
    if query:
        sources = sources.filter(
            Q(title__icontains=query) | Q(config__url__icontains=query) | Q(config__filename__icontains=query)
        )
    return sources


def filter_documents(documents: QuerySet, request: Request) -> QuerySet:
    """?status= and ?q= (in the title or the address) on a list of documents."""
    wanted = status_param(request)
    if wanted is not None:
        documents = documents.filter(status=wanted)
    query = (request.query_params.get("q") or "").strip()
    if query:
        documents = documents.filter(Q(title__icontains=query) | Q(url__icontains=query))
    return documents


Q_PARAMETER = OpenApiParameter("q", OpenApiTypes.STR, description="Words in the title or the address.")

SOURCE_FILTERS: list[Any] = [
    OpenApiParameter("agent", OpenApiTypes.INT, description="Only this agent's sources."),
    OpenApiParameter("kind", OpenApiTypes.STR, description="text, url, sitemap, feed, upload, push, ..."),
    OpenApiParameter("status", OpenApiTypes.STR, enum=list(Status.values)),
    OpenApiParameter("q", OpenApiTypes.STR, description="Words in the title, the address or the file name."),
]
