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
            "status",
            "error",
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
    """The envelope every kind shares; the kind's own fields are validated by sources.kinds."""

    kind = serializers.CharField(max_length=20)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)
    agent = serializers.IntegerField()


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=2000, trim_whitespace=True)
    top_k = serializers.IntegerField(min_value=1, max_value=50, default=5)
    min_score = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)


class PassageSerializer(serializers.Serializer):
    id = serializers.CharField(source="chunk_id")
    text = serializers.CharField()
    score = serializers.FloatField()
    source = serializers.SerializerMethodField()

    def get_source(self, passage) -> dict:
        return {"id": passage.source_id, "title": passage.source_title, "url": passage.url or None}
