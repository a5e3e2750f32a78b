from __future__ import annotations

from rest_framework import serializers

from sources.models import Document, Schedule, Source


class SourceSerializer(serializers.ModelSerializer):
    agent = serializers.IntegerField(source="agent_id", read_only=True)
    pages_left = serializers.IntegerField(read_only=True)
    resyncable = serializers.SerializerMethodField(help_text="Whether a schedule can be set for this source.")

    def get_resyncable(self, source: Source) -> bool:
        from ingestion.kinds.registry import get_kind

        return get_kind(source.kind).resyncable

    class Meta:
        model = Source
        fields = [
            "id",
            "agent",
            "kind",
            "title",
            "config",
            "state",
            "status",
            "error",
            "notice",
            "pages_total",
            "pages_done",
            "pages_failed",
            "pages_left",
            "chunks_count",
            "created_at",
            "updated_at",
            "indexed_at",
            "schedule",
            "resyncable",
            "paused",
            "hidden_while_paused",
            "last_synced_at",
            "next_sync_at",
            "last_sync",
        ]
        read_only_fields = fields


class SourceUpdateSerializer(serializers.Serializer):
    """What PATCH /sources/{id} may change; every field is optional."""

    title = serializers.CharField(max_length=300, required=False)
    schedule = serializers.ChoiceField(choices=Schedule.choices, required=False)
    paused = serializers.BooleanField(required=False)
    hidden_while_paused = serializers.BooleanField(
        required=False, help_text="While paused, leave its passages out of search (kept, not deleted)."
    )


class DocumentSerializer(serializers.ModelSerializer):
    """One page of a source, with why it failed (failure_class is a stable code, error is for people)."""

    failure_label = serializers.SerializerMethodField()

    def get_failure_label(self, document: Document) -> str:
        from ingestion.failures import FAILURE_LABELS

        return FAILURE_LABELS[document.failure_class][0] if document.failure_class in FAILURE_LABELS else ""

    class Meta:
        model = Document
        fields = [
            "id",
            "url",
            "title",
            "status",
            "failure_class",
            "failure_label",
            "error",
            "attempts",
            "fetched_at",
            "updated_at",
        ]
        read_only_fields = fields


class WorkspaceSettingsSerializer(serializers.Serializer):
    default_schedule = serializers.ChoiceField(choices=Schedule.choices)


class SourceCreateSerializer(serializers.Serializer):
    """The envelope every kind shares; the kind's own fields are validated by the kind (ingestion/kinds/)."""

    kind = serializers.CharField(max_length=20)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)
    agent = serializers.IntegerField()
    schedule = serializers.ChoiceField(
        choices=Schedule.choices, required=False, help_text="Re-sync schedule (default: the workspace's)."
    )


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=2000, trim_whitespace=True)
    top_k = serializers.IntegerField(min_value=1, max_value=50, default=5)
    min_score = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    mode = serializers.ChoiceField(choices=["hybrid", "vector", "keyword"], default="hybrid")
    filters = serializers.JSONField(required=False, help_text='Metadata filters, e.g. {"lang": "en"}.')
    rerank = serializers.CharField(required=False, max_length=50)

    def validate_filters(self, value: object) -> dict:
        from retrieval.stores.base import InvalidFilter, validate_filters

        if not isinstance(value, dict):
            raise serializers.ValidationError("Filters must be a JSON object.")
        try:
            validate_filters(value)
        except InvalidFilter as exc:
            raise serializers.ValidationError(str(exc)) from exc
        return value

    def validate_rerank(self, value: str) -> str:
        from django.conf import settings

        if value not in settings.RERANKERS:
            raise serializers.ValidationError(
                f"Unknown reranker; configured: {', '.join(sorted(settings.RERANKERS))}."
            )
        return value


class PassageSerializer(serializers.Serializer):
    id = serializers.CharField(source="chunk_id")
    text = serializers.CharField()
    score = serializers.FloatField()
    source = serializers.SerializerMethodField()

    def get_source(self, passage) -> dict:
        return {"id": passage.source_id, "title": passage.source_title, "url": passage.url or None}
