from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sources.models import Document, Schedule, Source


class SourceSerializer(serializers.ModelSerializer):
    """A source of knowledge of an agent (not the widget's citation, which is `Citation`)."""

    agent = serializers.IntegerField(source="agent_id", read_only=True)
    pages_left = serializers.IntegerField(read_only=True)
    pages_skipped = serializers.IntegerField(
        read_only=True,
        help_text="Pages left out on purpose (too little text, only links, a search page): not failures; "
        "each can be indexed anyway.",
    )
    pages_skipped_by_reason = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text='The skipped pages by reason, e.g. {"too_short": 30, "link_list": 2}.',
    )
    resyncable = serializers.SerializerMethodField(help_text="Whether a schedule can be set for this source.")
    address = serializers.SerializerMethodField(help_text="Its web address, or a file's name.")
    audiences = serializers.SerializerMethodField(help_text="Who may retrieve its passages.")
    metadata = serializers.SerializerMethodField(help_text="Copied onto every passage; search filters on it.")
    config = serializers.JSONField(read_only=True, help_text="The kind's settings, as validated.")
    state = serializers.JSONField(read_only=True, help_text="What ingestion keeps (sizes, sha256, ...).")
    last_sync = serializers.JSONField(read_only=True)

    def get_resyncable(self, source: Source) -> bool:
        from ingestion.kinds.registry import get_kind

        return get_kind(source.kind).resyncable

    def get_address(self, source: Source) -> str:
        from ingestion.kinds.registry import get_kind

        return get_kind(source.kind).address(source)

    def get_audiences(self, source: Source) -> list[str]:
        return list(source.config.get("audience") or ["public"])

    def get_metadata(self, source: Source) -> dict[str, Any]:
        return dict(source.config.get("metadata") or {})

    class Meta:
        model = Source
        fields = [
            "id",
            "agent",
            "kind",
            "title",
            "address",
            "audiences",
            "metadata",
            "config",
            "state",
            "status",
            "error",
            "notice",
            "pages_total",
            "pages_done",
            "pages_failed",
            "pages_skipped",
            "pages_skipped_by_reason",
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
    keep_short_pages = serializers.BooleanField(
        required=False,
        help_text="url, sitemap, feed: index pages however little text they have instead of skipping them. "
        "Turned on, its skipped pages are fetched again now.",
    )
    audiences = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        help_text='Who may retrieve its passages, e.g. ["staff", "customers:gold"]; [] or ["public"]: '
        "everyone. A change indexes the source again.",
    )
    metadata = serializers.DictField(
        required=False,
        help_text='Replaces its metadata, e.g. {"product": "billing", "lang": "de"}. '
        "A change indexes it again.",
    )
    chunk_size = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Characters per passage (200-8000); null: the default. A change indexes it again.",
    )
    chunk_overlap = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Characters carried across a cut (at most a quarter of the chunk size); null: the default.",
    )
    record_separator = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        help_text='Text made of records (JSON Lines: "\\n", FAQ dumps: "---"): cut only there, whole records '
        "packed as many as fit; null or empty: none.",
    )


class DocumentSerializer(serializers.ModelSerializer):
    """One page of a source, with why it failed (failure_class is a stable code, error is for people) or
    why it was skipped (skip_reason, with the size of the text it had: skipped_chars)."""

    failure_label = serializers.SerializerMethodField()
    skip_label = serializers.SerializerMethodField(
        help_text='A skipped page\'s reason as people read it: "too little text".'
    )
    skip_reason = serializers.CharField(
        read_only=True, help_text="Why it was skipped: too_short, link_list, search_page; empty otherwise."
    )
    skipped_chars = serializers.IntegerField(
        read_only=True, help_text="The characters of text it had when it was skipped (0: not known)."
    )
    keep_short = serializers.BooleanField(
        read_only=True, help_text="Indexed however little text it has (index-anyway); re-syncs keep it."
    )

    def get_failure_label(self, document: Document) -> str:
        from ingestion.failures import FAILURE_LABELS

        return FAILURE_LABELS[document.failure_class][0] if document.failure_class in FAILURE_LABELS else ""

    def get_skip_label(self, document: Document) -> str:
        from ingestion.failures import skip_label

        return skip_label(document.skip_reason) if document.skip_reason else ""

    class Meta:
        model = Document
        fields = [
            "id",
            "url",
            "title",
            "status",
            "failure_class",
            "failure_label",
            "skip_reason",
            "skip_label",
            "skipped_chars",
            "keep_short",
            "error",
            "attempts",
            "fetched_at",
            "updated_at",
        ]
        read_only_fields = fields


class WorkspaceSettingsSerializer(serializers.Serializer):
    """Every field is optional in a PATCH: only those given change."""

    default_schedule = serializers.ChoiceField(choices=Schedule.choices, required=False)
    bm25_k1 = serializers.FloatField(
        min_value=0.0,
        max_value=3.0,
        required=False,
        help_text="Keyword search's BM25 k1 (term-frequency saturation), 0-3; default 1.2.",
    )
    bm25_b = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="Keyword search's BM25 b (length normalisation), 0-1; default 0.75.",
    )


class SourceCreateSerializer(serializers.Serializer):
    """The envelope every kind shares; the kind's own fields are validated by the kind (ingestion/kinds/)."""

    kind = serializers.CharField(max_length=20)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)
    agent = serializers.IntegerField()
    schedule = serializers.ChoiceField(
        choices=Schedule.choices, required=False, help_text="Re-sync schedule (default: the workspace's)."
    )
    audiences = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, help_text='Default ["public"].'
    )
    metadata = serializers.DictField(required=False, help_text="Free keys copied onto every passage.")
    url = serializers.CharField(required=False, help_text="url, sitemap, feed: the address.")
    content = serializers.CharField(required=False, help_text="text: the text itself.")
    max_pages = serializers.IntegerField(required=False, help_text="sitemap, feed: most pages to crawl.")
    keep_short_pages = serializers.BooleanField(
        required=False,
        help_text="url, sitemap, feed: index pages however little text they have instead of skipping them.",
    )


class SourceUploadSerializer(serializers.Serializer):
    """multipart/form-data: one upload source per `file`."""

    agent = serializers.IntegerField()
    file = serializers.ListField(child=serializers.FileField(), help_text="One or more files.")
    title = serializers.CharField(required=False, help_text="Used when a single file is sent.")
    audiences = serializers.CharField(required=False, help_text="Comma-separated, e.g. staff,customers:gold.")
    metadata = serializers.CharField(required=False, help_text="A JSON object.")


class UploadedSourceSerializer(SourceSerializer):
    duplicate_of = serializers.ListField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="This agent's other file sources with the same content (sha256); empty if none.",
    )

    class Meta(SourceSerializer.Meta):
        fields = [*SourceSerializer.Meta.fields, "duplicate_of"]
        read_only_fields = fields


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


class PassageSourceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    url = serializers.CharField(allow_null=True)


class PassageSerializer(serializers.Serializer):
    id = serializers.CharField(source="chunk_id")
    text = serializers.CharField()
    score = serializers.FloatField()
    # A declared field, which DRF's metaclass collects; the name clashes with Field.source only in the stubs.
    source = serializers.SerializerMethodField()  # type: ignore[assignment]

    @extend_schema_field(PassageSourceSerializer)
    def get_source(self, passage: Any) -> dict:
        return passage_source(passage)


def passage_source(passage: Any) -> dict:
    return {"id": passage.source_id, "title": passage.source_title, "url": passage.url or None}


def passage_json(passage: Any) -> dict:
    """PassageSerializer's representation of a passage, built directly for the search API's answers
    (DRF's fields were a visible share of a cached search: docs/BENCHMARKS.md). The schema stays the
    serializer's; tests/sources/api/test_api_conventions.py checks that both give the same."""
    return {
        "id": str(passage.chunk_id),
        "text": str(passage.text),
        "score": float(passage.score),
        "source": passage_source(passage),
    }


class ReindexNeededSerializer(serializers.Serializer):
    chunks = serializers.IntegerField()
    message = serializers.CharField()


class SearchResultSerializer(serializers.Serializer):
    results = PassageSerializer(many=True)
    reindex_needed = ReindexNeededSerializer(
        required=False, help_text="Present when some passages were embedded by another model."
    )


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "anyOf": [
                {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
                {"type": "object"},
            ]
        },
    }
)
class FieldErrorsField(serializers.DictField):
    """Field -> messages; a list or object field's errors are nested by position or key, as DRF gives them
    (`{"audiences": {"0": ["..."]}}`, `{"documents": [{}, {"title": ["..."]}]}`). The schema said lists of
    strings only, which those answers broke (found by the schema fuzz test)."""


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="Stable and machine-readable: invalid, not_found, rate_limited, ..."
    )
    message = serializers.CharField(help_text="What happened and what to do, for people.")
    # A declared field, which DRF's metaclass collects; the name clashes with Serializer.fields only in stubs.
    fields = FieldErrorsField(  # type: ignore[assignment]
        required=False,
        help_text="Field -> messages, for a request to correct; a list or object field's nested by position "
        "or key.",
    )
    limit = serializers.IntegerField(
        required=False, help_text="429/402: the limit in force; 413 for a request body: its limit in bytes."
    )
    usage = serializers.IntegerField(required=False, help_text="429/402: what was used of it.")
    reset = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="429/402: when it resets (Unix time); null for a quota only deleting frees.",
    )
    quota = serializers.CharField(
        required=False,
        help_text="402: which of the plan's quotas refused (sources, documents, stored_bytes, chunks, "
        "crawl_pages, chat_messages, agents, members).",
    )
    existing_id = serializers.IntegerField(required=False, help_text="409 duplicate: the existing source.")


class ErrorSerializer(serializers.Serializer):
    """Every 4xx/5xx answer of the API."""

    error = ErrorDetailSerializer()
