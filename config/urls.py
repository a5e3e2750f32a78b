from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from config import health, metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("sources.api.urls")),
    path("api/v1/", include("agents.api.urls")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    # The one-time link `manage.py create_workspace` prints for the owner's first password.
    path(
        "set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="set_password.html", success_url="/login/", post_reset_login=False
        ),
        name="set-password",
    ),
    path("", include("agents.urls")),
    path("", include("sources.urls")),
]
