"""The agent's settings form, for the admin's web UI."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms

from agents.models import Agent
from config.secret_forms import SecretFieldsFormMixin
from config.secrets import SecretInput
from sources.tenancy import workspace_scope


def _origin(line: str) -> str:
    parts = urlsplit(line)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise forms.ValidationError(
            f"{line!r} is not an origin. Write the scheme and host only, like https://www.example.com."
        )
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise forms.ValidationError(f"{line!r} is not an origin: leave out everything after the host.")
    return f"{parts.scheme}://{parts.netloc.lower()}"


class AgentSettingsForm(SecretFieldsFormMixin, forms.ModelForm):
    """The agent's settings as owners and admins edit them."""

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

    class Meta:
        model = Agent
        fields = [
            "name",
            "system_prompt",
            "retrieval_mode",
            "top_k",
            "min_score",
            "hybrid",
            "context_template",
            "offtopic_reply",
            "offtopic_in_user_language",
            "allowed_origins",
            "llm_base_url",
            "llm_model",
            "llm_api_key",
        ]
        labels = {
            "top_k": "Passages per question (top k)",
            "min_score": "Minimum score",
            "hybrid": "Hybrid search (meaning and keywords)",
            "offtopic_reply": "Off-topic reply",
            "offtopic_in_user_language": "Write the off-topic reply in the visitor's language",
            "llm_model": "Model",
        }
        widgets = {
            "system_prompt": forms.Textarea(attrs={"rows": 4}),
            "context_template": forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
            "offtopic_reply": forms.Textarea(attrs={"rows": 2}),
            "min_score": forms.NumberInput(attrs={"step": "0.01", "min": "0", "max": "1"}),
            "top_k": forms.NumberInput(attrs={"min": "1", "max": "20"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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
                origin = _origin(line)
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

    def clean_context_template(self) -> str:
        from agents.prompts import template_problems

        template = self.cleaned_data["context_template"]
        errors, self.template_warnings = template_problems(template)
        if errors:
            raise forms.ValidationError(errors)
        return template

    def save(self, commit: bool = True) -> Agent:
        with workspace_scope(self.instance.workspace_id):
            return super().save(commit=commit)
