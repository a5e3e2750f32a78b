"""How the API appears in the OpenAPI schema: its authentication (drf-spectacular extensions, registered on
import: config/urls.py imports this module), and the refusals every workspace API view shares."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "sources.api.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "gk_<prefix>_<secret>",
            "description": "A workspace API key (web UI: Workspace, API keys); or `X-Api-Key: <key>`.",
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "sources.api.auth.SessionAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "The web UI's session (writes also need the CSRF token).",
        }


class WorkspaceSchema(AutoSchema):
    """The schema of every workspace API view (sources/api/base.py): besides what each operation declares,
    the refusals that the machinery every such view shares can answer, so the schema lists every status the
    API answers. Each is the one error shape; what an operation declares itself keeps its description."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: ComponentRegistry
    ) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        from sources.api.serializers import ErrorSerializer

        error = {"application/json": {"schema": self.resolve_serializer(ErrorSerializer, "response").ref}}
        for code, description in shared_refusals(method.upper(), path, operation).items():
            operation["responses"].setdefault(str(code), {"description": description, "content": error})
        return operation


def shared_refusals(method: str, path: str, operation: dict[str, Any]) -> dict[int, str]:
    refusals = {
        401: "No API key or session, or one we do not know (`not_authenticated`, `authentication_failed`).",
        403: "Not a member of the workspace, or a member asking to change it (`permission_denied`).",
        429: "Over the key's request rate (`rate_limited`, with `Retry-After`).",
    }
    if "{" in path:
        refusals[404] = "Not in your workspace (another workspace's looks the same as a missing one)."
    if any(parameter.get("name") == "cursor" for parameter in operation.get("parameters", [])):
        refusals[400] = "A `cursor` we did not give out, or a filter to correct (`invalid`, by field)."
    if "requestBody" in operation:
        refusals[400] = "A body that is not JSON (`malformed_request`), or a field to correct (`invalid`)."
        refusals[413] = "The body is over this endpoint's limit (`too_large`, with `limit` in bytes)."
        refusals[415] = "A body of a media type this endpoint does not read (`unsupported_media_type`)."
    if method == "POST":
        refusals.setdefault(400, "An `Idempotency-Key` over 255 characters (`invalid`).")
        refusals[409] = "A request with this `Idempotency-Key` is still running (`idempotency_in_progress`)."
        refusals[422] = "This `Idempotency-Key` was used with another request (`idempotency_key_reused`)."
    return refusals
