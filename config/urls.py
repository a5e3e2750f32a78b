from django.contrib import admin
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
    path("", include("agents.urls")),
    path("", include("sources.urls")),
]
