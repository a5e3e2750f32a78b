"""The e-mail verification step of allauth's sign-in, for accounts without any e-mail record (see
sources/accounts.py). Its own module: allauth loads it by dotted path once its own modules are imported."""

from __future__ import annotations

from typing import Any

from allauth.account import stages
from allauth.account.models import EmailAddress


class EmailVerificationStage(stages.EmailVerificationStage):
    """allauth's stage, except for accounts without any e-mail record (made by an operator)."""

    def handle(self) -> tuple[Any, bool]:
        user = self.login.user
        if user is not None and not EmailAddress.objects.filter(user_id=user.pk).exists():
            return None, True
        return super().handle()
