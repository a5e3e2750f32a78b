from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from config import health, metrics
from sources.api import schema  # noqa: F401  (registers the authentication schemes)
from sources.api.errors import json_error_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("sources.api.urls")),
    path("api/v1/", include("agents.api.urls")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    # Sign-up, e-mail confirmation, sign-in and -out, password reset (django-allauth, templates/account/).
    path("accounts/", include("allauth.urls")),
    # The one-time link `manage.py create_workspace` prints for the owner's first password.
    path(
        "set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="set_password.html",
            success_url=reverse_lazy("account_login"),
            post_reset_login=False,
        ),
        name="set-password",
    ),
    # Browsable documentation of the schema above (Swagger UI to try calls, Redoc to read).
    path("api/v1/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/redoc", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("", include("sources.urls")),
]

# Unknown URLs and crashes under /api/ answer in the API's error shape; the web UI keeps its pages.
handler404 = json_error_view(404, "not_found", "There is nothing at this address.")
handler500 = json_error_view(500, "server_error", "Something went wrong on our side; please try again.")
