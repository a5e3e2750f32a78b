"""How Grounded uses django-allauth: who counts as having a confirmed e-mail address, usernames for new
accounts, and the verification step at sign-in.

People who sign up get an unconfirmed e-mail record and must open the mailed link before they can sign in
(ACCOUNT_EMAIL_VERIFICATION = "mandatory"). Accounts an operator made (`create_workspace`, `seed_demo`,
the Django admin) predate allauth and have no e-mail record at all: the operator vouched for them, so they
sign in as before and their account's address counts as confirmed. Without this, every such account would
be stopped at sign-in by a confirmation mail allauth has no address record to send.
"""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.account.utils import user_email, user_username
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest

ALLAUTH_VERIFICATION_STAGE = "allauth.account.stages.EmailVerificationStage"
# Loaded by allauth by its dotted path (importing allauth's stages from here would be circular).
VERIFICATION_STAGE = "sources.account_stages.EmailVerificationStage"


def verified_emails(user: AbstractBaseUser) -> set[str]:
    """The addresses this account has confirmed, lower-cased (an operator-made account: its own address)."""
    records = list(EmailAddress.objects.filter(user_id=user.pk).values_list("email", "verified"))
    if not records:
        email = (getattr(user, "email", "") or "").strip().lower()
        return {email} if email else set()
    return {email.lower() for email, verified in records if verified}


INVITED_SESSION_KEY = "invited"


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        """ACCOUNT_SIGNUP_OPEN = False closes sign-up to everyone but people who opened a pending
        invitation's link in this browser (sources.web.views.invitations sets the mark)."""
        return settings.ACCOUNT_SIGNUP_OPEN or bool(request.session.get(INVITED_SESSION_KEY))

    def get_login_stages(self) -> list[str]:
        stages = super().get_login_stages()
        return [VERIFICATION_STAGE if path == ALLAUTH_VERIFICATION_STAGE else path for path in stages]

    def populate_username(self, request: HttpRequest, user: AbstractBaseUser) -> None:
        """The e-mail address is the username, as for accounts `create_workspace` makes, so people see one
        name for themselves everywhere (member lists, the admin)."""
        email = (user_email(user) or "").strip().lower()
        taken = get_user_model().objects.filter(username__iexact=email).exists()
        if email and len(email) <= 150 and not taken:
            user_username(user, email)
        else:
            super().populate_username(request, user)
