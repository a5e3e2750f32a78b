"""`GET /api/v1/workspace/usage`: the workspace's plan and what it uses of each quota (sources/usage.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sources.api.base import WorkspaceAPIView
from sources.api.serializers import ErrorSerializer
from sources.usage import workspace_usage


class QuotaUsageSerializer(serializers.Serializer):
    quota = serializers.CharField(help_text="sources, documents, stored_bytes, chunks, crawl_pages, ...")
    # A declared field, which DRF's metaclass collects; the name clashes with Field.label only in the stubs.
    label = serializers.CharField()  # type: ignore[assignment]
    used = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True, help_text="null: unlimited.")
    reset = serializers.DateTimeField(
        allow_null=True, help_text="When a metered quota starts again (UTC); null for stored things."
    )


class WorkspaceUsageSerializer(serializers.Serializer):
    plan = serializers.CharField()
    plan_label = serializers.CharField()
    quotas = QuotaUsageSerializer(many=True)
    api_requests_per_minute = serializers.IntegerField(
        allow_null=True, help_text="Per API key; null: the deployment's default (see RateLimit-Policy)."
    )


class WorkspaceUsageView(WorkspaceAPIView):
    @extend_schema(
        operation_id="workspace_usage",
        summary="The workspace's plan and its usage of each quota.",
        responses={
            200: WorkspaceUsageSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
            429: ErrorSerializer,
        },
    )
    def get(self, request: Request) -> Response:
        return Response(workspace_usage(self.workspace).as_dict())
