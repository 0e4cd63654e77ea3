from django.urls import include, path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from drf_spectacular.views import SpectacularAPIView

from offsets.api import (
    clusters,
    connector_control,
    connectors,
    history,
    index,
    moves,
    records,
    refreshes,
    removal,
)
from offsets.api.errors import errors


@extend_schema_view(
    get=extend_schema(
        responses={
            (200, "application/vnd.oai.openapi"): OpenApiResponse(OpenApiTypes.OBJECT),
            (200, "application/yaml"): OpenApiResponse(OpenApiTypes.OBJECT),
            (200, "application/vnd.oai.openapi+json"): OpenApiResponse(OpenApiTypes.OBJECT),
            (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT),
            # DRF answers 404 to a ?format= it has no renderer for.
            **errors(404),
        }
    )
)
class SchemaView(SpectacularAPIView):
    """This API's OpenAPI 3 schema (YAML, or JSON with ?format=json)."""


CONNECTOR = "clusters/<str:cluster_name>/connectors/<connector:connector_name>/"

urlpatterns = [
    path("", index.index, name="api-index"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("clusters/", clusters.cluster_list, name="api-clusters"),
    path(
        "clusters/<str:cluster_name>/state/", clusters.connector_states, name="api-connector-states"
    ),
    path(
        "clusters/<str:cluster_name>/connectors/", connectors.connector_list, name="api-connectors"
    ),
    path(CONNECTOR, connectors.connector_detail, name="api-connector"),
    path(
        f"{CONNECTOR}partitions/", connectors.connector_partitions, name="api-connector-partitions"
    ),
    path(f"{CONNECTOR}offsets/", connectors.connector_offsets, name="api-connector-offsets"),
    path(f"{CONNECTOR}lag/", connectors.connector_lag, name="api-connector-lag"),
    path(f"{CONNECTOR}history/", history.connector_history, name="api-connector-history"),
    path(
        f"{CONNECTOR}next-records/",
        records.connector_next_records,
        name="api-connector-next-records",
    ),
    path(
        f"{CONNECTOR}next-records/skip/",
        records.connector_skip_record,
        name="api-connector-skip-record",
    ),
    path(f"{CONNECTOR}stop/", connector_control.connector_stop, name="api-connector-stop"),
    path(f"{CONNECTOR}pause/", connector_control.connector_pause, name="api-connector-pause"),
    path(f"{CONNECTOR}resume/", connector_control.connector_resume, name="api-connector-resume"),
    path(f"{CONNECTOR}restart/", connector_control.connector_restart, name="api-connector-restart"),
    path(
        f"{CONNECTOR}tasks/<int:task>/restart/",
        connector_control.connector_task_restart,
        name="api-connector-task-restart",
    ),
    path(f"{CONNECTOR}move/", moves.connector_move, name="api-connector-move"),
    path(f"{CONNECTOR}delete/", removal.connector_delete, name="api-connector-delete"),
    path(f"{CONNECTOR}cleanup/", removal.connector_cleanup, name="api-connector-cleanup"),
    path("clusters/<str:cluster_name>/orphans/", removal.cluster_orphans, name="api-orphans"),
    path(
        "clusters/<str:cluster_name>/worker/", connector_control.cluster_worker, name="api-worker"
    ),
    path("clusters/<str:cluster_name>/refreshes/", refreshes.refreshes, name="api-refreshes"),
    path("edits/", include("offsets.api.edit_urls")),
]
