"""Secrets sealed at rest: a model field that keeps only Fernet tokens in the database.

Keys come from `FIELD_ENCRYPTION_KEYS` (comma-separated Fernet keys, newest first). The first key encrypts;
every key decrypts (cryptography's MultiFernet), so rotating is: put a new key in front, run
`manage.py rotate_secrets` (which re-encrypts every column of every `EncryptedTextField` with it), then
drop the old key. Outside production, with no keys set, a key derived from SECRET_KEY stands in.

The field is generic (model API keys now, connectors' OAuth tokens next). Its value in Python is the
plain text; in the database, a token. Encryption is randomised, so lookups by value never match; the empty
string stays empty (it means "not set", and `field=""` filters keep working).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterator
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django import forms
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, models


class SecretUnreadable(ImproperlyConfigured):
    """A stored token that none of the configured keys opens: a key was dropped too early, or is missing."""


def _derived_key(secret_key: str) -> str:
    digest = hashlib.sha256(b"grounded field encryption\x00" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


@functools.lru_cache(maxsize=8)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.strip()))
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"FIELD_ENCRYPTION_KEYS: key number {position} is not a Fernet key (32 url-safe "
                "base64-encoded bytes). Make one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'"
            ) from None
    return MultiFernet(fernets)


def sealing() -> MultiFernet:
    """The keys in force now (settings are read on every call, so tests and rotations see changes)."""
    keys = tuple(k for k in settings.FIELD_ENCRYPTION_KEYS if k.strip())
    if not keys:
        if not settings.FIELD_ENCRYPTION_DERIVED_KEY_ALLOWED:
            raise ImproperlyConfigured(
                "FIELD_ENCRYPTION_KEYS is not set. Production needs its own key for secrets at rest; see "
                "README.md, 'Environment variables'."
            )
        keys = (_derived_key(settings.SECRET_KEY),)
    return _multi_fernet(keys)


def seal(plaintext: str) -> str:
    return sealing().encrypt(plaintext.encode()).decode()


def unseal(token: str, *, where: str = "a sealed value") -> str:
    try:
        return sealing().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            f"None of the keys in FIELD_ENCRYPTION_KEYS opens {where}. Put back the key it was sealed with "
            "(any position after the first), then run manage.py rotate_secrets."
        ) from None


def reseal(token: str, *, where: str = "a sealed value") -> str:
    """The same secret sealed with the first key, without it ever being returned."""
    try:
        return sealing().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(f"None of the keys in FIELD_ENCRYPTION_KEYS opens {where}.") from None


class SecretInput(forms.PasswordInput):
    """Write-only: the saved value is never sent back to the browser."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs={"autocomplete": "new-password", **(attrs or {})}, render_value=False)


class EncryptedTextField(models.TextField):
    description = "Text encrypted at rest"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if not value:
            return value
        return unseal(value, where=f"{self.model._meta.db_table}.{self.column}")

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return seal(value) if value else value

    def formfield(
        self,
        form_class: type[forms.Field] | None = None,
        choices_form_class: type[forms.ChoiceField] | None = None,
        **kwargs: Any,
    ) -> forms.Field | None:
        # Always write-only, whatever widget is asked for: the Django admin asks for a textarea (its
        # override for every TextField), which would print the secret into the page.
        return super().formfield(
            form_class=form_class,
            choices_form_class=choices_form_class,
            **{**kwargs, "widget": SecretInput, "strip": True},
        )


def encrypted_columns() -> Iterator[tuple[type[models.Model], EncryptedTextField]]:
    """Every EncryptedTextField of every installed model."""
    for model in apps.get_models():
        for model_field in model._meta.concrete_fields:
            if isinstance(model_field, EncryptedTextField):
                yield model, model_field


def reseal_column(model: type[models.Model], model_field: EncryptedTextField, *, batch: int = 500) -> int:
    """Re-encrypt one column with the first key, in raw SQL (no manager, no tenancy scope: every row of
    every workspace). A row changed meanwhile is left alone, since its new value already uses the first key.
    Returns how many values were re-encrypted."""
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(model_field.column)
    pk = connection.ops.quote_name(model._meta.pk.column)
    where = f"{model._meta.db_table}.{model_field.column}"
    done, last = 0, None
    while True:
        with connection.cursor() as cursor:
            after = f"AND {pk} > %s" if last is not None else ""
            cursor.execute(
                f"SELECT {pk}, {column} FROM {table} WHERE {column} <> '' {after} ORDER BY {pk} LIMIT %s",
                [*([last] if last is not None else []), batch],
            )
            rows = cursor.fetchall()
            for row_pk, token in rows:
                cursor.execute(
                    f"UPDATE {table} SET {column} = %s WHERE {pk} = %s AND {column} = %s",
                    [reseal(token, where=f"{where} (row {row_pk})"), row_pk, token],
                )
                done += cursor.rowcount
        if len(rows) < batch:
            return done
        last = rows[-1][0]
