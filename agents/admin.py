from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents.models import Agent, Conversation, Message
from agents.prompts import template_problems
from agents.services import agent_delete
from config.secret_forms import SecretFieldsAdminMixin, SecretFieldsFormMixin
from sources.admin import UnscopedAdmin


class AgentForm(SecretFieldsFormMixin, forms.ModelForm):
    clear_llm_api_key = forms.BooleanField(required=False, label="Remove the saved model API key")

    class Meta:
        model = Agent
        fields = [
            "workspace",
            "name",
            "allowed_origins",
            "system_prompt",
            "llm_base_url",
            "llm_model",
            "llm_api_key",
            "clear_llm_api_key",
            "retrieval_mode",
            "top_k",
            "min_score",
            "hybrid",
            "reranker",
            "context_budget",
            "context_template",
            "offtopic_reply",
            "offtopic_in_user_language",
            "sources_display",
            "auto_sources",
        ]

    def clean_context_template(self) -> str:
        template = self.cleaned_data.get("context_template", "")
        errors, _warnings = template_problems(template)
        if errors:
            raise forms.ValidationError(errors)
        return template


@admin.register(Agent)
class AgentAdmin(SecretFieldsAdminMixin, UnscopedAdmin):
    form = AgentForm
    list_display = ["name", "workspace", "public_key", "retrieval_mode", "created_at"]
    list_filter = ["workspace", "retrieval_mode"]
    search_fields = ["name", "public_key"]

    def delete_model(self, request: HttpRequest, obj: Agent) -> None:
        # Through the service: Django's cascade would leave vector points, postings and files behind.
        agent_delete(agent=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for agent in queryset:
            agent_delete(agent=agent)

    def save_model(self, request: HttpRequest, obj: Agent, form: forms.ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        for warning in template_problems(obj.context_template)[1]:
            messages.warning(request, warning)


@admin.register(Conversation)
class ConversationAdmin(UnscopedAdmin):
    list_display = ["id", "agent", "workspace", "visitor_id", "updated_at"]
    list_filter = ["workspace"]


@admin.register(Message)
class MessageAdmin(UnscopedAdmin):
    list_display = ["conversation", "role", "tool_name", "failure", "created_at"]
    list_filter = ["role", "workspace"]

    @admin.display(description="Why the turn failed")
    def failure(self, message: Message) -> str:
        # Visitors saw a generic line; the reason (and its detail, on the message's page) is kept here.
        return message.metadata.get("error", "")
