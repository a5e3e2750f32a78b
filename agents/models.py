"""Agents: what a website widget talks to. Each answers from its own workspace's sources."""

from __future__ import annotations

import secrets
import uuid

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from config.outbound import validate_outbound_url
from config.secrets import EncryptedTextField
from sources.tenancy import TenantModel


def new_public_key() -> str:
    return f"ag_{secrets.token_urlsafe(18)}"


class Agent(TenantModel):
    class RetrievalMode(models.TextChoices):
        INJECT = "inject", "Inject passages into the prompt"
        TOOL = "tool", "Let the model call search_knowledge"

    class Fusion(models.TextChoices):
        DEFAULT = "", "The deployment's default"
        ABSOLUTE = "absolute", "Absolute score fusion (cosine and BM25 as they are, weighted)"
        SCORE = "score", "Score fusion (min-max normalised scores, weighted)"
        ZSCORE = "zscore", "Z-score fusion (standardised scores, weighted)"
        RRF = "rrf", "Reciprocal rank fusion (ranks only)"

    class EmbeddingProvider(models.TextChoices):
        DEPLOYMENT = "deployment", "This deployment's embedder"
        MODEL = "model", "The model provider's embeddings (its OpenAI-compatible /embeddings)"

    class SourcesDisplay(models.TextChoices):
        TITLES = "titles", "Titles (with links for web pages)"
        NONE = "none", "Do not show sources"

    name = models.CharField(max_length=200)
    # Public by design: the widget embeds it in the customer's page. What it may do is limited by
    # allowed_origins and rate limits, never by its secrecy.
    public_key = models.CharField(max_length=40, unique=True, default=new_public_key, editable=False)
    allowed_origins = models.JSONField(default=list, blank=True)
    system_prompt = models.TextField(blank=True)

    # The model. Empty base URL: the built-in extractive answerer, no generative model needed.
    # Typed by a workspace admin, so held to the outbound address policy when saved and again when called.
    llm_base_url = models.URLField(blank=True, validators=[validate_outbound_url])
    llm_api_key = EncryptedTextField(blank=True, verbose_name="model API key")
    llm_model = models.CharField(max_length=200, blank=True)
    # What embeds this agent's passages and questions: the deployment's embedder, or the model provider's
    # /embeddings with the model's base URL and key (agents/embedding.py). A change indexes its sources again.
    embedding_provider = models.CharField(
        max_length=20, choices=EmbeddingProvider.choices, default=EmbeddingProvider.DEPLOYMENT
    )
    embedding_model = models.CharField(
        max_length=200, blank=True, help_text="The provider's embedding model, e.g. text-embedding-3-small."
    )

    # Retrieval.
    retrieval_mode = models.CharField(
        max_length=10, choices=RetrievalMode.choices, default=RetrievalMode.INJECT
    )
    top_k = models.PositiveSmallIntegerField(default=4)
    min_score = models.FloatField(
        null=True, blank=True, help_text="Passages scoring below this are not used."
    )
    hybrid = models.BooleanField(default=True)
    reranker = models.CharField(max_length=50, blank=True)
    context_budget = models.PositiveIntegerField(default=6000, help_text="Characters of passages per turn.")
    context_template = models.TextField(
        blank=True, help_text="Must contain {context}; empty uses the default."
    )
    # How hybrid search combines its two retrievers. Empty/None: the deployment's SEARCH_* settings, so an
    # operator's defaults still apply to agents nobody tuned.
    fusion = models.CharField(max_length=10, choices=Fusion.choices, blank=True)
    vector_weight = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(10.0)]
    )
    keyword_weight = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(10.0)]
    )
    candidates = models.PositiveSmallIntegerField(
        default=50,
        validators=[MinValueValidator(1), MaxValueValidator(500)],
        help_text="Passages each retriever fetches before fusion.",
    )
    rerank_pool = models.PositiveSmallIntegerField(
        default=50,
        validators=[MinValueValidator(1), MaxValueValidator(200)],
        help_text="Passages the reranker reorders (at least top k).",
    )

    # The semantic cache: a question close enough to a recent one reuses its passages. None: the
    # deployment's SEMANTIC_CACHE_* settings.
    semantic_cache = models.BooleanField(default=True)
    cache_threshold = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.5), MaxValueValidator(1.0)]
    )
    cache_max_entries = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(10000)]
    )
    cache_ttl = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(86400)]
    )

    # The scope gate: with min_score and an off-topic reply, unbacked questions get the reply.
    offtopic_reply = models.TextField(blank=True)
    scope_rules = models.TextField(
        blank=True,
        help_text="What the agent may talk about, in your words; added to the model's instructions while the "
        "scope gate is on.",
    )
    offtopic_in_user_language = models.BooleanField(
        default=False,
        help_text="Let the model write the refusal in the user's language (it sees only that message).",
    )
    sources_display = models.CharField(
        max_length=10, choices=SourcesDisplay.choices, default=SourcesDisplay.TITLES
    )
    auto_sources = models.BooleanField(
        default=False, help_text="Queue pages the widget is opened on as sources."
    )

    # The widget's look (sent by widget/init). The widget picks white or near-black text on the accent,
    # whichever passes WCAG AA contrast, so any colour is safe to choose.
    widget_accent_color = models.CharField(
        "accent colour",
        max_length=7,
        default="#2f6df6",
        validators=[RegexValidator(r"^#[0-9a-fA-F]{6}$", "A colour like #2f6df6.")],
    )
    widget_position = models.CharField(
        "widget side",
        max_length=5,
        choices=[("right", "Bottom right"), ("left", "Bottom left")],
        default="right",
    )
    widget_greeting = models.CharField(
        "greeting", max_length=300, blank=True, help_text="The first message a visitor sees."
    )
    widget_launcher_label = models.CharField(
        "launcher label", max_length=40, blank=True, help_text="Text beside the chat icon; empty: icon only."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    @property
    def uses_llm(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def gate_enabled(self) -> bool:
        return self.min_score is not None and bool(self.offtopic_reply.strip())


class Conversation(TenantModel):
    # Unguessable: the widget keeps it to continue or reload a thread.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    visitor_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["agent", "updated_at"])]


class Message(TenantModel):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True)
    # For tool messages: the call as the model (or inject mode) made it, and what it returned.
    tool_name = models.CharField(max_length=64, blank=True)
    tool_arguments = models.JSONField(default=dict, blank=True)
    tool_result = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
