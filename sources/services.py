"""Writes to a workspace's own records (API keys). A source's writes live in ingestion/lifecycle.py."""

from __future__ import annotations

from sources.models import ApiKey, Workspace
from sources.tenancy import workspace_scope


def api_key_create(*, workspace: Workspace, name: str) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the raw key, which is never stored and cannot be shown again."""
    prefix, raw_key = ApiKey.generate()
    with workspace_scope(workspace.id):
        api_key = ApiKey.objects.create(name=name, prefix=prefix, key_hash=ApiKey.hash_key(raw_key))
    return api_key, raw_key
