"""The base of every workspace-owned API view: authentication decides the workspace, and the whole
request runs inside that workspace's scope. It is throttled per key (sources/api/throttling.py), says
where the caller stands in every answer's RateLimit-* headers, and honours `Idempotency-Key` on POSTs."""

from __future__ import annotations

from contextvars import Token
from typing import Any, cast

from django.contrib.auth.models import User
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sources.api import idempotency
from sources.api.auth import ApiKeyPrincipal, workspace_for_request
from sources.api.schema import WorkspaceSchema
from sources.models import Membership, Workspace
from sources.tenancy import activate_workspace, deactivate_workspace


def can_manage(request: Request, workspace: Workspace) -> bool:
    """API keys act for the workspace; people need the owner or admin role to change things."""
    if isinstance(request.user, ApiKeyPrincipal):
        return True
    person = cast(User, request.user)  # authenticated: an API key (above) or a signed-in person
    membership = Membership.unscoped.filter(user=person, workspace=workspace).first()
    return membership is not None and membership.can_manage


def _refuse_null_characters(request: Request, path_values: dict[str, Any]) -> None:
    """PostgreSQL text cannot hold NUL, and a query with one fails (a 500: `GET /agents?q=%00`, found by the
    schema fuzz test). DRF's CharField refuses it in bodies; query parameters and the path are raw, so
    they are refused here, for every view: 400 naming the parameter, 404 for a path nothing can match."""
    for name, values in request.query_params.lists():
        if any("\x00" in value for value in values):
            raise exceptions.ValidationError({name: ["Null characters are not allowed."]})
    if any(isinstance(value, str) and "\x00" in value for value in path_values.values()):
        raise exceptions.NotFound()


class WorkspaceAPIView(APIView):
    workspace: Workspace
    _scope_token: Token | None  # the workspace scope this request's view runs in, while it runs
    schema = WorkspaceSchema()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        _refuse_null_characters(request, kwargs)
        workspace = workspace_for_request(request)
        if workspace is None:
            raise exceptions.PermissionDenied("You are not a member of any workspace.")
        if request.method not in SAFE_METHODS and not can_manage(request, workspace):
            raise exceptions.PermissionDenied("Only owners and admins of this workspace can change it.")
        self.workspace = workspace
        self._idempotency = idempotency.claim(request, workspace.id)
        self._scope_token = activate_workspace(workspace.id)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, idempotency.IdempotentReplay):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        token = getattr(self, "_scope_token", None)
        if token is not None:
            deactivate_workspace(token)
            self._scope_token = None
        claim = getattr(self, "_idempotency", None)
        if claim is not None:
            self._idempotency = None
            idempotency.finish(claim, response)
        figures = getattr(request, "rate_limit", None)
        if figures is not None:
            for name, value in figures.headers().items():
                response[name] = value
        return super().finalize_response(request, response, *args, **kwargs)
