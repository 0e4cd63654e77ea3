from django.contrib import admin
from django.urls import include, path, register_converter

from dashboard import favicon, metrics
from dashboard.oidc import views as oidc_views
from dashboard.pages.clusters import views
from dashboard.pages.connector import control as control_views
from dashboard.pages.connector import records as record_views
from dashboard.pages.connector import views as connector_views
from dashboard.pages.edits import moves as move_views
from dashboard.pages.edits import removal as removal_views
from offsets.formats.connector_paths import ConnectorNameConverter

# Registered here, in the root URLconf, before any pattern (the API's included) uses it.
register_converter(ConnectorNameConverter, "connector")

urlpatterns = [
    path("", views.home, name="home"),
    path("clusters/<str:cluster_name>/", views.cluster, name="cluster"),
    path("clusters/<str:cluster_name>/connectors/", views.connectors, name="connectors"),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/",
        connector_views.connector_detail,
        name="connector",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/offsets.json",
        connector_views.connector_offsets_json,
        name="connector-offsets-json",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/control-follow/",
        control_views.connector_control_follow,
        name="connector-control-follow",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/control/<str:action>/",
        control_views.connector_control,
        name="connector-control",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/move/",
        move_views.connector_move,
        name="connector-move",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/next-records/",
        record_views.next_records,
        name="connector-next-records",
    ),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/next-records/skip/",
        record_views.skip_record,
        name="connector-skip-record",
    ),
    path("clusters/<str:cluster_name>/worker/", control_views.cluster_worker, name="worker"),
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector_name>/remove/<str:action>/",
        removal_views.stage,
        name="connector-remove",
    ),
    path("clusters/<str:cluster_name>/orphans/", removal_views.orphans_page, name="orphans"),
    path("clusters/<str:cluster_name>/refreshes/", views.start_refresh, name="start-refresh"),
    path("clusters/<str:cluster_name>/live/", views.live_state, name="live-state"),
    path("", include("dashboard.pages.edits.urls")),
    path("login/", oidc_views.login, name="login"),
    path("logout/", oidc_views.logout, name="logout"),
    # Single sign-on: 404 while no provider is set up.
    path(
        "oidc/authenticate/",
        oidc_views.AuthenticateView.as_view(),
        name="oidc_authentication_init",
    ),
    path("oidc/callback/", oidc_views.CallbackView.as_view(), name="oidc_authentication_callback"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("offsets.api.urls")),
    # No login: a token or the caller's address (dashboard/metrics.py).
    path("metrics", metrics.metrics, name="metrics"),
    # No login: browsers ask for it on every page, the login and error pages too.
    path("favicon.ico", favicon.favicon, name="favicon"),
]

# A database outage met outside a view (the session save) answers 503 too.
handler500 = "dashboard.middleware.server_error"
# Unknown URLs under /api/ answer JSON like the rest of the API.
handler404 = "dashboard.pages.clusters.views.not_found"
