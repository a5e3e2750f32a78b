"""Re-encrypt every sealed secret with the first key of FIELD_ENCRYPTION_KEYS (see config/secrets.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from config.secrets import SecretUnreadable, encrypted_columns, reseal_column


class Command(BaseCommand):
    help = (
        "Re-encrypt every EncryptedTextField column, in every workspace, with the first key of "
        "FIELD_ENCRYPTION_KEYS. Run it after putting a new key in front; drop the old key only afterwards."
    )

    def handle(self, *args: object, **options: object) -> None:
        total = 0
        for model, model_field in encrypted_columns():
            label = f"{model._meta.label}.{model_field.name}"
            try:
                with transaction.atomic():  # one column at a time: all of it or none
                    count = reseal_column(model, model_field)
            except SecretUnreadable as exc:
                raise CommandError(f"{label}: {exc}") from exc
            total += count
            self.stdout.write(f"{label}: {count} re-encrypted")
        self.stdout.write(f"{total} secrets now use the first key.")
