from __future__ import annotations

from rest_framework import serializers

from sources.models import Source


class SourceSerializer(serializers.ModelSerializer):
    agent = serializers.IntegerField(source="agent_id", read_only=True)
    pages_left = serializers.IntegerField(read_only=True)

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
        ]
        read_only_fields = fields


class SourceCreateSerializer(serializers.Serializer):
    """The envelope every kind shares; the kind's own fields are validated by the kind (ingestion/kinds/)."""

    kind = serializers.CharField(max_length=20)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)
    agent = serializers.IntegerField()


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
