"""How the API's authentication appears in the OpenAPI schema (drf-spectacular extensions, registered on
import: config/urls.py imports this module)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


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
