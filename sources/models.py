"""Workspaces, who belongs to them, and the knowledge they hold: sources, documents and chunks."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from pgvector.django import HnswIndex, VectorField

from sources.tenancy import TenantModel

EMBEDDING_DIMENSIONS = 384
# BM25's defaults (retrieval.keyword reads them from here: sources.models imports nothing above it).
BM25_K1 = 1.2
BM25_B = 0.75


def new_visitor_secret() -> str:
    return secrets.token_urlsafe(32)


class Schedule(models.TextChoices):
    """How often a source is synced again with what it was made from (ingestion/freshness.py)."""

    OFF = "off", "Off"
    HOURLY = "hourly", "Every hour"
    DAILY = "daily", "Every day"
    WEEKLY = "weekly", "Every week"


class Plan(models.Model):
    """What a workspace may hold and do (sources/quotas.py enforces it). Operators edit plans in the Django
    admin; a workspace without one is on the plan named by settings.GROUNDED_DEFAULT_PLAN. A limit left
    empty is unlimited (for the API rate: the deployment's API_RATE_PER_MINUTE)."""

    name = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=100, blank=True, help_text="What customers see, e.g. 'Team'.")
    max_sources = models.PositiveIntegerField(null=True, blank=True)
    max_documents = models.PositiveIntegerField(null=True, blank=True, help_text="Pages and documents.")
    max_stored_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Uploaded originals plus the text kept for every document."
    )
    max_chunks = models.PositiveIntegerField(null=True, blank=True)
    max_crawl_pages_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Pages queued for fetching per UTC day."
    )
    max_chat_messages_per_month = models.PositiveIntegerField(
        null=True, blank=True, help_text="Questions asked of the workspace's agents per UTC month."
    )
    api_requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Per API key; empty: the deployment's API_RATE_PER_MINUTE."
    )
    max_agents = models.PositiveIntegerField(null=True, blank=True)
    max_members = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return self.label or self.name


class Workspace(models.Model):
    """The tenant. Everything below belongs to exactly one workspace."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    # What a new source that can be synced again gets unless its creator chooses.
    default_schedule = models.CharField(max_length=10, choices=Schedule.choices, default=Schedule.DAILY)
    # Signs visitor tokens (agents.visitor): the host site proves who its visitor is and what they may see.
    visitor_secret = models.CharField(max_length=64, default=new_visitor_secret)
    # After a rotation, tokens signed with the old secret stay valid until this time, so host sites can
    # switch over without their visitors' tokens failing (agents.visitor.rotate_visitor_secret).
    previous_visitor_secret = models.CharField(max_length=64, blank=True)
    previous_visitor_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # Empty: the default plan (settings.GROUNDED_DEFAULT_PLAN), so a plan edited there reaches them all.
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.PROTECT, related_name="workspaces")
    # Keyword search's BM25 (retrieval/keyword.py): k1, how soon repeating a term stops adding to a
    # passage's score; b, how much a long passage is penalised. Read at query time, so a change needs no
    # reindex. The defaults were the best of the grid measured on SciFact's train queries
    # (docs/BENCHMARKS.md); short FAQ answers may want a lower b.
    bm25_k1 = models.FloatField(default=BM25_K1, validators=[MinValueValidator(0.0), MaxValueValidator(3.0)])
    bm25_b = models.FloatField(default=BM25_B, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(bm25_k1__gte=0, bm25_k1__lte=3, bm25_b__gte=0, bm25_b__lte=1),
                name="workspace_bm25_in_range",
            )
        ]

    def __str__(self) -> str:
        return self.slug


class Membership(TenantModel):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user")]

    @property
    def can_manage(self) -> bool:
        return self.role in (self.Role.OWNER, self.Role.ADMIN)


class Invitation(TenantModel):
    """An owner's or admin's invitation of an e-mail address to the workspace, with a role
    (sources/invitations.py). The link's token is mailed once; only its hash is kept, like an API key's."""

    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["email"], name="invitation_email")]

    def __str__(self) -> str:
        return f"{self.email} as {self.role}"


class ApiKey(TenantModel):
    """A workspace's key for the REST API. Only a hash is stored; the key is shown once, at creation.

    Keys look like ``gk_<prefix>_<secret>``: the prefix is visible in listings so people can tell
    keys apart, and it indexes the lookup. Keys are 32 random bytes, so a fast hash is enough.
    """

    PREFIX_LENGTH = 8

    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"gk_{self.prefix}_… ({self.name})"

    @staticmethod
    def hash_key(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @staticmethod
    def generate() -> tuple[str, str]:
        """A new (prefix, raw_key) pair."""
        prefix = secrets.token_hex(ApiKey.PREFIX_LENGTH // 2)
        return prefix, f"gk_{prefix}_{secrets.token_urlsafe(32)}"

    def matches(self, raw_key: str) -> bool:
        return hmac.compare_digest(self.key_hash, self.hash_key(raw_key))


class Status(models.TextChoices):
    PENDING = "pending"
    CRAWLING = "crawling"
    INDEXING = "indexing"
    DONE = "done"
    FAILED = "failed"
    # A page deliberately left out (too little text, only links, a site's search page), as opposed to one
    # we could not read: not counted as failed, and the admin can index it anyway. Documents only.
    SKIPPED = "skipped"


ACTIVE_STATUSES = (Status.PENDING, Status.CRAWLING, Status.INDEXING)


class Source(TenantModel):
    """Something an admin gave an agent to know: pasted text, a page, a site, a feed, a file."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=20)
    title = models.CharField(max_length=300)
    # What the user set, validated by the kind's config model (ingestion/kinds/<kind>.py).
    config = models.JSONField(default=dict, blank=True)
    # What ingestion found out and keeps for next time (a file's size and storage path, counters); never
    # set by users.
    state = models.JSONField(default=dict, blank=True)
    # Never skipped (its skipped pages are a count beside the indexed and failed ones); one set of choices
    # with its documents all the same, so the API's schema has one status enum.
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.CharField(max_length=500, blank=True, help_text="What went wrong, written for people.")
    error_detail = models.TextField(blank=True, help_text="The raw upstream error, for operators.")
    notice = models.CharField(
        max_length=500, blank=True, help_text="Something people should know, not an error."
    )
    pages_total = models.PositiveIntegerField(default=0)
    pages_done = models.PositiveIntegerField(default=0)
    pages_failed = models.PositiveIntegerField(default=0)
    pages_skipped = models.PositiveIntegerField(default=0)
    # The skipped pages by reason ({"too_short": 30, "link_list": 2}), as failures are by class.
    pages_skipped_by_reason = models.JSONField(default=dict, blank=True)
    chunks_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    indexed_at = models.DateTimeField(null=True, blank=True)
    # Freshness (ingestion/freshness.py): a sync fetches the source again; the beat task starts due ones.
    schedule = models.CharField(max_length=10, choices=Schedule.choices, default=Schedule.OFF)
    paused = models.BooleanField(default=False, help_text="Not synced on schedule while paused.")
    hidden_while_paused = models.BooleanField(
        default=False, help_text="While paused, its passages are left out of search (not deleted)."
    )
    sync_started_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    next_sync_at = models.DateTimeField(null=True, blank=True)
    # The last finished sync: added / changed / unchanged / removed / failed counts, and why pages went.
    last_sync = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["workspace", "status"]),
            models.Index(fields=["agent", "created_at"]),
            # The beat task's question: which sources are due (sources without a schedule have no date).
            models.Index(
                fields=["next_sync_at"],
                name="source_next_sync",
                condition=models.Q(next_sync_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.title}"

    @property
    def pages_left(self) -> int:
        return max(self.pages_total - self.pages_done - self.pages_failed - self.pages_skipped, 0)


class Document(TenantModel):
    """One page, item or file part of a source, with its extracted text."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    url = models.URLField(max_length=2000, blank=True)
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField(blank=True)
    # The customer's own id for a document pushed through the documents API (ingestion/push/); empty
    # for documents we made ourselves. Unique within its source, so per agent (one push source each).
    external_id = models.CharField(max_length=500, blank=True, default="")
    # What this document adds to its chunks' metadata (a pushed document's own keys and its audience).
    metadata = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    language = models.CharField(max_length=16, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.CharField(max_length=500, blank=True)
    error_detail = models.TextField(blank=True)
    # For conditional recrawls (If-None-Match / If-Modified-Since).
    etag = models.CharField(max_length=300, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    fetched_at = models.DateTimeField(null=True, blank=True)
    # Why it failed, as a stable code (ingestion.failures.FAILURE_LABELS), and how many fetches were tried.
    failure_class = models.CharField(max_length=20, blank=True)
    # Why a skipped page was left out, as a stable code (ingestion.failures.SKIP_LABELS; the message for
    # people is in `error`), and how many characters of text it had then.
    skip_reason = models.CharField(max_length=20, blank=True)
    skipped_chars = models.PositiveIntegerField(default=0)
    # The admin's "index it anyway": kept however little text the page has. Set on the document, so a
    # re-sync, which fetches the page again, keeps the decision.
    keep_short = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The sitemap's <lastmod> when it was last listed: the same value next time means "unchanged".
    lastmod = models.CharField(max_length=40, blank=True)
    # Evidence for pruning (ingestion/freshness.py): syncs in a row that answered 404/410 (the last one
    # counted is the sync that started at gone_seen_at), and complete listings in a row that left the page
    # out.
    gone_strikes = models.PositiveSmallIntegerField(default=0)
    gone_seen_at = models.DateTimeField(null=True, blank=True)
    unlisted_strikes = models.PositiveSmallIntegerField(default=0)
    # What the current (or last) sync did with it: added, changed, unchanged, removed_gone, removed_unlisted.
    sync_outcome = models.CharField(max_length=20, blank=True)
    # While a page waits on purpose (a site's Retry-After, a busy host), the sweeper leaves it alone until
    # then.
    due_by = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["source", "status"]), models.Index(fields=["status", "updated_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "external_id"],
                condition=~models.Q(external_id=""),
                name="one_document_per_external_id",
            )
        ]

    def __str__(self) -> str:
        return self.title or self.url or f"document {self.pk}"


class Chunk(TenantModel):
    """A passage of a document, the unit that is embedded and retrieved.

    The id is derived from the document, position and text (see ingestion.text.chunking.chunk_id), so
    re-indexing the same text gives the same ids and vector points.
    """

    id = models.UUIDField(primary_key=True, editable=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    # The chunk's sentences embedded one by one by the same model (retrieval.sentences packs them), when
    # the deployment makes them (settings.SENTENCE_VECTORS): a hybrid search's third signal.
    sentence_vectors = models.BinaryField(null=True, blank=True, editable=False)
    # A digest of exactly what was embedded for this chunk (its input and its sentences, in order): a
    # re-index keeps these vectors for text that did not change (ingestion/reuse.py).
    input_digest = models.CharField(max_length=32, blank=True, default="", editable=False)
    # agent_id, document_id, chunk_id, url, workspace_id, source_id, lang: what filters and citations use.
    metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document_id", "position"]
        indexes = [
            models.Index(fields=["workspace", "document"]),
            # Finds chunks of another embedding model without scanning (retrieval.vectors.stale_embeddings).
            models.Index(fields=["workspace", "embedding_model"], name="chunk_workspace_model"),
            # Metadata filters (the agent, audiences) as containment (retrieval/stores/pgvector_sql.py).
            GinIndex(fields=["metadata"], opclasses=["jsonb_path_ops"], name="chunk_metadata_gin"),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


class UsageCounter(TenantModel):
    """What a workspace used in one period of a metered quota (crawl pages today, chat messages this month):
    one row per workspace, metric and period, moved by a conditional UPDATE (sources/metering.py)."""

    metric = models.CharField(max_length=40)
    period_start = models.DateField()
    value = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "metric", "period_start"], name="one_counter_per_period"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric} {self.period_start}: {self.value}"
