"""The first step after `docker compose up`: a workspace, its owner, and an API key.

The owner gets no password here: the command prints a one-time link to set one (Django's password-reset
token: it stops working once used, since it depends on the password, and after PASSWORD_RESET_TIMEOUT).
The API key is printed once; only its hash is kept. An owner who already has an account (signed up, or
owns another workspace) keeps it and gets no link.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.text import slugify

from sources.models import Workspace
from sources.plans import UnknownPlan, plan_for, plan_named
from sources.services import api_key_create, workspace_create


class Command(BaseCommand):
    help = "Create a workspace with its owner; print a one-time set-password link and an API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="The workspace's name, e.g. 'Acme'.")
        parser.add_argument("--owner-email", required=True, help="The owner's email; also their username.")
        parser.add_argument("--slug", default="", help="Defaults to the name, slugified.")
        parser.add_argument(
            "--base-url", default="http://localhost:8000", help="The site's public address, for the link."
        )
        parser.add_argument(
            "--plan", default="", help="The plan's name (see the admin's Plans); default: the default plan."
        )

    def handle(self, *args: object, **options: str) -> None:
        name, email = options["name"].strip(), options["owner_email"].strip().lower()
        slug = options["slug"] or slugify(name)
        try:
            validate_email(email)
        except ValidationError as exc:
            raise CommandError(f"{email!r} is not an email address.") from exc
        if not name or not slug:
            raise CommandError("Give the workspace a name with at least one letter or digit.")
        if Workspace.objects.filter(slug=slug).exists():
            raise CommandError(f"A workspace with the slug {slug!r} exists already; pass another --slug.")
        plan = None
        if options["plan"]:  # checked before anything is created
            try:
                plan = plan_named(options["plan"])
            except UnknownPlan as exc:
                raise CommandError(str(exc)) from exc
        users = get_user_model()
        with transaction.atomic():
            owner = users.objects.filter(username__iexact=email).first()
            owner = owner or users.objects.filter(email__iexact=email).order_by("id").first()
            if owner is None:
                owner = users.objects.create_user(email, email)  # no usable password until the link is used
            workspace = workspace_create(name=name, owner=owner, slug=slug[:80])
            if plan is not None:
                Workspace.objects.filter(id=workspace.id).update(plan=plan)
            _api_key, raw_key = api_key_create(workspace=workspace, name="created with the workspace")
        if owner.has_usable_password():
            link = "none: the account has a password already; the owner signs in as usual\n"
        else:
            link = self._set_password_link(owner, options["base_url"])
            link += "\n               (works once; open it before anyone else can)\n"
        self.stdout.write(
            f"Workspace:     {workspace.name} ({workspace.slug})\n"
            f"Plan:          {plan or plan_for(workspace)}\n"
            f"Owner:         {owner.username} (sign in with this email or username)\n"
            f"Set password:  {link}"
            f"API key:       {raw_key}\n"
            f"               (shown only now; create more in the web UI or with create_api_key)\n"
        )

    def _set_password_link(self, owner: AbstractBaseUser, base_url: str) -> str:
        uid = urlsafe_base64_encode(force_bytes(owner.pk))
        path = reverse(
            "set-password", kwargs={"uidb64": uid, "token": default_token_generator.make_token(owner)}
        )
        return base_url.rstrip("/") + path
