"""Editing sealed secrets (config/secrets.py) in forms and the Django admin without ever showing them.

A secret's input is always empty. Submitting it empty keeps the saved value; a `clear_<name>` box, which the
form declares next to it, removes it; anything else replaces it. Pages say whether a value is set, never what.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from config.secrets import EncryptedTextField


def secret_fields(model: type[models.Model]) -> list[EncryptedTextField]:
    return [f for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]


def secret_field_names(model: type[models.Model]) -> list[str]:
    return [f.name for f in secret_fields(model)]


def secret_status(value: str) -> str:
    return "Set" if value else "Not set"


class SecretFieldsFormMixin:
    """For a ModelForm: its EncryptedTextFields are write-only, kept when left empty, and cleared by the
    `clear_<name>` BooleanField the form declares beside each."""

    instance: models.Model
    fields: dict[str, forms.Field]
    initial: MutableMapping[str, Any]  # as Django's BaseForm declares them

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self._secret_names():
            # Not even in the form's initial data: no widget can render it, and an empty submission
            # reads as "unchanged" in the admin's history.
            self.initial[name] = ""
            if getattr(self.instance, name):
                self.fields[
                    name
                ].help_text = "Set — type a new value to replace it; leave this empty to keep it."
            self.fields[name].required = False

    def _secret_names(self) -> list[str]:
        return [name for name in secret_field_names(type(self.instance)) if name in self.fields]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()  # type: ignore[misc]
        for name in self._secret_names():
            if name not in cleaned:
                continue  # the field has its own error
            if cleaned.get(f"clear_{name}"):
                cleaned[name] = ""
            elif not cleaned[name]:
                cleaned[name] = getattr(self.instance, name)
        return cleaned


class SecretFieldsAdminMixin:
    """For a ModelAdmin: someone who may only view a row sees whether each secret is set, not the secret
    (the admin's read-only display would print the plain value)."""

    model: type[models.Model]

    def get_fields(self, request: HttpRequest, obj: models.Model | None = None) -> list[Any]:
        fields = list(super().get_fields(request, obj))  # type: ignore[misc]
        if self.has_change_permission(request, obj):  # type: ignore[attr-defined]
            return fields
        hidden = set(secret_field_names(self.model))
        hidden |= {f"clear_{name}" for name in hidden}
        return [f for f in fields if f not in hidden] + ["secrets_status"]

    @admin.display(description="Secrets")
    def secrets_status(self, obj: models.Model) -> str:
        return "; ".join(
            f"{field.verbose_name}: {secret_status(getattr(obj, field.name)).lower()}"
            for field in secret_fields(type(obj))
        )
