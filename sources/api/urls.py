from django.urls import path

from sources.api import views

urlpatterns = [
    path("sources", views.SourceListView.as_view(), name="source-list"),
    path("sources/<int:source_id>", views.SourceDetailView.as_view(), name="source-detail"),
    path("search", views.SearchView.as_view(), name="search"),
]
