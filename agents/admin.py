from django.contrib import admin

from agents.models import Agent
from sources.admin import UnscopedAdmin


@admin.register(Agent)
class AgentAdmin(UnscopedAdmin):
    list_display = ["name", "workspace", "public_key", "created_at"]
    list_filter = ["workspace"]
