"""Writes to a workspace's own records (the workspace, API keys). A source's writes live in
ingestion/lifecycle.py; members, invitations and settings changes by a member in sources/access.py and
sources/invitations.py."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from sources.models import ApiKey, Membership, Workspace
from sources.tenancy import workspace_scope

SLUG_LENGTH = cast(int, Workspace._meta.get_field("slug").max_length)  # a SlugField always has one


def api_key_create(*, workspace: Workspace, name: str) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the raw key, which is never stored and cannot be shown again."""
    prefix, raw_key = ApiKey.generate()
    with workspace_scope(workspace.id):
        api_key = ApiKey.objects.create(name=name, prefix=prefix, key_hash=ApiKey.hash_key(raw_key))
    return api_key, raw_key


def workspace_create(*, name: str, owner: User, slug: str = "") -> Workspace:
    """A new workspace with `owner` as its owner. Without a slug one is made from the name, with a number
    added when it is taken; a given slug that is taken raises IntegrityError."""
    name = name.strip()[:200]
    if not name:
        raise ValueError("Give the workspace a name.")
    base = (slug or slugify(name) or "workspace")[: SLUG_LENGTH - 4]
    candidates = [base] if slug else [base, *(f"{base}-{n}" for n in range(2, 100))]
    for candidate in candidates:
        if slug or not Workspace.objects.filter(slug=candidate).exists():
            try:
                with transaction.atomic():
                    workspace = Workspace.objects.create(name=name, slug=candidate)
                    with workspace_scope(workspace.id):
                        Membership.objects.create(user=owner, role=Membership.Role.OWNER)
                return workspace
            except IntegrityError:
                if slug:
                    raise
    raise ValueError("Could not find a free address for this workspace; choose another name.")
