"""The agent's settings forms: its own rules (AgentSettingsForm, which the settings page and the agents API
(sources/api/agents.py) both validate with, so they accept and refuse the same values) and the settings
page's form, which adds what only that page sets."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.db import models

from agents.models import Agent
from config.secret_forms import SecretFieldsFormMixin
from config.secrets import SecretInput
from sources.tenancy import workspace_scope


def origin_of(line: str) -> str:
    """The origin a line names (scheme and lower-cased host), or a ValidationError saying why not."""
    parts = urlsplit(line)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise forms.ValidationError(
            f"{line!r} is not an origin. Write the scheme and host only, like https://www.example.com."
        )
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise forms.ValidationError(f"{line!r} is not an origin: leave out everything after the host.")
    return f"{parts.scheme}://{parts.netloc.lower()}"


#: Numbers with a default that a form may leave empty (a client posting only some fields keeps working).
DEFAULTED = ("candidates", "rerank_pool", "context_budget")


def _agent_field(name: str) -> models.Field:
    return cast(models.Field, Agent._meta.get_field(name))  # a column of Agent's, not a relation


class AgentSettingsForm(SecretFieldsFormMixin, forms.ModelForm):
    """The agent's settings as owners and admins edit them."""

    instance: Agent  # a ModelForm of Agent (ModelForm[Agent] is not subscriptable at run time)

    allowed_origins = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "https://www.example.com"}),
        help_text="The sites the widget may run on, one per line.",
    )
    # Write-only: empty keeps the saved key, the box below removes it (SecretFieldsFormMixin).
    llm_api_key = forms.CharField(required=False, widget=SecretInput, label="Model API key")
    clear_llm_api_key = forms.BooleanField(required=False, label="Remove the saved key")
    llm_base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Model base URL",
        widget=forms.URLInput(attrs={"placeholder": "https://api.openai.com/v1"}),
    )

    reranker = forms.ChoiceField(
        required=False,
        label="Reranker",
        help_text="Reorders the passages found with a second model; empty: no reranking.",
    )

    class Meta:
        model = Agent
        fields = [
            "name",
            "system_prompt",
            "retrieval_mode",
            "top_k",
            "min_score",
            "hybrid",
            "fusion",
            "vector_weight",
            "keyword_weight",
            "candidates",
            "rerank_pool",
            "reranker",
            "context_budget",
            "context_template",
            "semantic_cache",
            "cache_threshold",
            "cache_max_entries",
            "cache_ttl",
            "offtopic_reply",
            "scope_rules",
            "offtopic_in_user_language",
            "allowed_origins",
            "llm_base_url",
            "llm_model",
            "llm_api_key",
            "embedding_provider",
            "embedding_model",
        ]
        labels = {
            "top_k": "Passages per question (top k)",
            "min_score": "Minimum score",
            "hybrid": "Hybrid search (meaning and keywords)",
            "offtopic_reply": "Off-topic reply",
            "offtopic_in_user_language": "Write the off-topic reply in the visitor's language",
            "llm_model": "Model",
            "fusion": "Fusion of the two rankings",
            "vector_weight": "Meaning (vector) weight",
            "keyword_weight": "Keyword weight",
            "candidates": "Candidates per retriever",
            "rerank_pool": "Rerank pool",
            "context_budget": "Context budget (characters)",
            "semantic_cache": "Reuse passages for near-identical questions (semantic cache)",
            "cache_threshold": "Cache similarity threshold",
            "cache_max_entries": "Cache entries",
            "cache_ttl": "Cache time to live (seconds)",
            "scope_rules": "Scope rules",
            "embedding_provider": "Embeddings",
            "embedding_model": "Embedding model",
        }
        widgets = {
            "system_prompt": forms.Textarea(attrs={"rows": 4}),
            "context_template": forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
            "offtopic_reply": forms.Textarea(attrs={"rows": 2}),
            "min_score": forms.NumberInput(attrs={"step": "0.01", "min": "0", "max": "1"}),
            "top_k": forms.NumberInput(attrs={"min": "1", "max": "20"}),
            "scope_rules": forms.Textarea(attrs={"rows": 3}),
            "vector_weight": forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "10"}),
            "keyword_weight": forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "10"}),
            "cache_threshold": forms.NumberInput(attrs={"step": "0.005", "min": "0.5", "max": "1"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The deployment's rerankers (settings.RERANKERS), so an agent never names one that does not exist.
        reranker = cast(forms.ChoiceField, self.fields["reranker"])  # a ChoiceField
        reranker.choices = [("", "None"), *((alias, alias) for alias in settings.RERANKERS)]
        for name in DEFAULTED:
            self.fields[name].required = False
            model_field = _agent_field(name)
            self.fields[name].help_text = f"{model_field.help_text} Empty: {model_field.default}.".strip()
        # A post without it (a page open from before it existed) keeps the saved provider.
        self.fields["embedding_provider"].required = False
        self.template_warnings: list[str] = []
        if not self.is_bound:
            from agents.prompts import template_problems

            self.initial["allowed_origins"] = "\n".join(self.instance.allowed_origins or [])
            self.template_warnings = template_problems(self.instance.context_template)[1]

    def clean_allowed_origins(self) -> list[str]:
        origins: list[str] = []
        for line in self.cleaned_data["allowed_origins"].splitlines():
            line = line.strip().rstrip("/")
            if line:
                origin = origin_of(line)
                if origin not in origins:
                    origins.append(origin)
        return origins

    def clean_top_k(self) -> int:
        top_k = self.cleaned_data["top_k"]
        if not 1 <= top_k <= 20:
            raise forms.ValidationError("Use between 1 and 20 passages.")
        return top_k

    def clean_min_score(self) -> float | None:
        value = self.cleaned_data["min_score"]
        if value is not None and not 0.0 <= value <= 1.0:
            raise forms.ValidationError("Scores run from 0 to 1; leave it empty to keep every passage.")
        return value

    def _clean_defaulted(self, name: str) -> int:
        value = self.cleaned_data.get(name)
        return _agent_field(name).default if value is None else value

    def clean_candidates(self) -> int:
        return self._clean_defaulted("candidates")

    def clean_rerank_pool(self) -> int:
        return self._clean_defaulted("rerank_pool")

    def clean_context_budget(self) -> int:
        budget = self._clean_defaulted("context_budget")
        if not 500 <= budget <= 200_000:
            raise forms.ValidationError("Use between 500 and 200000 characters of passages per turn.")
        return budget

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        top_k, pool = data.get("top_k"), data.get("rerank_pool")
        if data.get("reranker") and top_k and pool and pool < top_k:
            self.add_error("rerank_pool", f"The reranker needs at least the {top_k} passages it returns.")
        if data.get("vector_weight") == 0 and data.get("keyword_weight") == 0:
            self.add_error("keyword_weight", "At least one weight must be above 0.")
        if data.get("embedding_provider") == Agent.EmbeddingProvider.MODEL:
            if not data.get("llm_base_url"):
                self.add_error("embedding_provider", "Set the model base URL first: its /embeddings is used.")
            if not data.get("embedding_model"):
                self.add_error("embedding_model", "Name the provider's embedding model.")
        return data

    def clean_embedding_provider(self) -> str:
        return self.cleaned_data["embedding_provider"] or self.instance.embedding_provider

    def clean_context_template(self) -> str:
        from agents.prompts import template_problems

        template = self.cleaned_data["context_template"]
        errors, self.template_warnings = template_problems(template)
        if errors:
            raise forms.ValidationError(errors)
        return template

    def save(self, commit: bool = True) -> Agent:
        from agents.embedding import embedding_changed, embedding_of

        # Read before the form writes the new values onto the instance (the form and the API both save here).
        before = embedding_of(Agent.unscoped.get(id=self.instance.id)) if self.instance.id else None
        with workspace_scope(self.instance.workspace_id):
            agent = super().save(commit=commit)
        if commit and before is not None and embedding_of(agent) != before:
            embedding_changed(agent=agent)
        return agent


class AgentSettingsPageForm(AgentSettingsForm):
    """The settings page's form: the agent's settings plus what only this page sets (the widget's look
    and auto sources), kept apart so AgentSettingsForm stays the agent's own rules."""

    class Meta(AgentSettingsForm.Meta):
        fields = [
            *AgentSettingsForm.Meta.fields,
            "auto_sources",
            "widget_accent_color",
            "widget_position",
            "widget_greeting",
            "widget_launcher_label",
        ]
        labels = {**AgentSettingsForm.Meta.labels, "auto_sources": "Add pages visitors open the widget on"}
        help_texts = {"auto_sources": ""}  # the page explains it with the hourly budget
        widgets = {
            **AgentSettingsForm.Meta.widgets,
            "widget_accent_color": forms.TextInput(attrs={"type": "color", "data-theme": "accent"}),
            "widget_position": forms.Select(attrs={"data-theme": "position"}),
            "widget_greeting": forms.TextInput(attrs={"data-theme": "greeting"}),
            "widget_launcher_label": forms.TextInput(attrs={"data-theme": "label"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A post without them (an older page still open in a tab) keeps the saved look.
        for name in ("widget_accent_color", "widget_position"):
            self.fields[name].required = False

    def clean_widget_accent_color(self) -> str:
        return self.cleaned_data["widget_accent_color"] or self.instance.widget_accent_color

    def clean_widget_position(self) -> str:
        return self.cleaned_data["widget_position"] or self.instance.widget_position
