from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import views

urlpatterns = [
    path("", views.home, name="home"),
    path("clusters/<str:cluster_name>/connectors/", views.connectors, name="connectors"),
    path("", include("dashboard.edit_urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("offsets.api.urls")),
]
