"""Agents: what a website widget talks to. Each answers from its own workspace's sources."""

from __future__ import annotations

import secrets

from django.db import models

from sources.tenancy import TenantModel


def new_public_key() -> str:
    return f"ag_{secrets.token_urlsafe(18)}"


class Agent(TenantModel):
    name = models.CharField(max_length=200)
    # Public by design: the widget embeds it in the customer's page. What it may do is limited by
    # allowed_origins and rate limits, never by its secrecy.
    public_key = models.CharField(max_length=40, unique=True, default=new_public_key, editable=False)
    allowed_origins = models.JSONField(default=list, blank=True)
    system_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name
