"""Fail-closed tenancy.

Every tenant-owned model carries a ``workspace`` and uses ``TenantManager`` as its default manager.
That manager refuses to build a query unless a workspace scope is active, so forgetting the scope
raises instead of silently reading every workspace. Code that must cross workspaces on purpose (the
operators' admin, API-key lookup) says so by using the explicit ``unscoped`` manager.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from django.db import models
from django.utils import timezone

_current_workspace: ContextVar[int | None] = ContextVar("current_workspace", default=None)


class TenancyError(RuntimeError):
    """A tenant-owned model was queried or written outside of its workspace scope."""


def current_workspace_id() -> int:
    workspace_id = _current_workspace.get()
    if workspace_id is None:
        raise TenancyError("No workspace scope is active; wrap the code in workspace_scope(workspace_id).")
    return workspace_id


def activate_workspace(workspace_id: int) -> Token:
    if not isinstance(workspace_id, int) or isinstance(workspace_id, bool):
        raise TenancyError(f"A workspace scope needs an integer id, got {workspace_id!r}.")
    return _current_workspace.set(workspace_id)


def deactivate_workspace(token: Token) -> None:
    _current_workspace.reset(token)


@contextmanager
def workspace_scope(workspace_id: int) -> Iterator[int]:
    token = activate_workspace(workspace_id)
    try:
        yield workspace_id
    finally:
        deactivate_workspace(token)


class TenantQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        # Status changes are bulk updates; auto_now fields only move on save(), and the sweeper and
        # the UI read updated_at, so every update moves it too.
        fields = {f.name for f in self.model._meta.concrete_fields}
        if "updated_at" in fields and "updated_at" not in kwargs:
            kwargs["updated_at"] = timezone.now()
        return super().update(**kwargs)


# A module-level name, so that django-stubs' plugin can type the class from_queryset makes.
_TenantManagerBase = models.Manager.from_queryset(TenantQuerySet)


class TenantManager(_TenantManagerBase):
    """The default manager of tenant-owned models: every query is filtered to the active workspace."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(workspace_id=current_workspace_id())


UnscopedManager = models.Manager.from_queryset(TenantQuerySet)


class TenantModel(models.Model):
    workspace = models.ForeignKey("sources.Workspace", on_delete=models.CASCADE, related_name="+")

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        # Django's internals (cascading deletes, forward relations) use the base manager, which stays a
        # plain Manager, so deleting a source still reaches its documents and chunks.
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        active = _current_workspace.get()
        if self.workspace_id is None and active is not None:
            self.workspace_id = active
        if self.workspace_id is None:
            raise TenancyError(f"{type(self).__name__} cannot be saved without a workspace.")
        if active is not None and self.workspace_id != active:
            raise TenancyError(
                f"{type(self).__name__} of workspace {self.workspace_id} saved inside the scope of {active}."
            )
        super().save(*args, **kwargs)
