from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from offsets.api import clusters

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("clusters/", clusters.cluster_list, name="api-clusters"),
    path(
        "clusters/<str:cluster_name>/state/", clusters.connector_states, name="api-connector-states"
    ),
    path("edits/", include("offsets.api.edit_urls")),
]
