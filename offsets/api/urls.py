from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from offsets.api import clusters

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("clusters/", clusters.cluster_list, name="api-clusters"),
    path(
        "clusters/<str:cluster_name>/state/", clusters.connector_states, name="api-connector-states"
    ),
]
