from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView


def health(_request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("sources.api.urls")),
    path("api/v1/", include("agents.api.urls")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("healthz", health),
    path("", include("agents.urls")),
    path("", include("sources.urls")),
]
