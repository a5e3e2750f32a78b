from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.generic import RedirectView

from sources import views

urlpatterns = [
    path("", RedirectView.as_view(url="/app/", permanent=False)),
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("app/", views.app_home, name="app-home"),
]
