"""A workspace's connections to outside accounts (a Notion workspace, a Google account), made once with OAuth
and used by that workspace's Notion and Google Docs sources. Tokens are sealed at rest
(config.secrets.EncryptedTextField) and never rendered back."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from config.secrets import EncryptedTextField
from sources.tenancy import TenantModel


class Provider(models.TextChoices):
    NOTION = "notion", "Notion"
    GOOGLE = "google", "Google"


class Connection(TenantModel):
    class State(models.TextChoices):
        ACTIVE = "active", "Connected"
        NEEDS_RECONNECT = "needs_reconnect", "Needs reconnecting"

    provider = models.CharField(max_length=20, choices=Provider.choices)
    # The provider's id of what was connected (a Notion bot id, a Google account's permission id), so
    # connecting the same account again updates its row instead of adding a second one.
    account_id = models.CharField(max_length=200)
    account_name = models.CharField(max_length=300, blank=True)
    account_email = models.CharField(max_length=300, blank=True)
    scopes = models.CharField(max_length=1000, blank=True)
    status = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    last_error = models.CharField(
        max_length=500, blank=True, help_text="What went wrong, written for people."
    )
    last_error_detail = models.TextField(blank=True, help_text="The provider's answer, for operators.")
    connected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    access_token = EncryptedTextField(blank=True)
    refresh_token = EncryptedTextField(blank=True)
    token_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "provider", "account_id"], name="one_connection_per_account"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_provider_display()}: {self.account_name or self.account_id}"

    @property
    def active(self) -> bool:
        return self.status == self.State.ACTIVE and bool(self.access_token)
