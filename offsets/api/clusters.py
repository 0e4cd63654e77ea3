"""Clusters: their summary (counts, lag, last refresh) and the live state of their connectors."""

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from offsets import connect_state
from offsets.api.connectors import TaskOutput
from offsets.api.errors import errors, run_service
from offsets.api.refreshes import RefreshRunOutput
from offsets.models import Cluster
from offsets.queries import clusters, snapshots
from offsets.queries.clusters import cluster_for_user
from offsets.rights import gate
from offsets.rights.grants import connector_filter, visible_clusters


def get_cluster(request: Request, name: str, connector: str | None = None) -> Cluster:
    """The cluster the user may see (`cluster_for_user`), named in the 404 of the edit routes."""
    try:
        cluster = cluster_for_user(user=request.user, name=name)
    except Http404:
        raise NotFound(gate.unknown_cluster(name)) from None
    if connector is not None:
        require_connector(request, cluster, connector)
    return cluster


def require_connector(request: Request, cluster: Cluster, name: str) -> None:
    """The 404 of a connector outside the user's grants: that of one that does not exist."""
    try:
        clusters.require_connector(request.user, cluster, name)
    except Http404 as missing:
        raise NotFound(str(missing)) from None


class ClusterOutput(serializers.Serializer):
    # client_config is left out: it may hold SASL/SSL secrets.
    name = serializers.CharField(source="cluster.name")
    kind = serializers.ChoiceField(
        source="cluster.kind",
        choices=Cluster.Kind.choices,
        help_text="A distributed Connect cluster, or a standalone worker read from its file.",
    )
    offsets_file = serializers.CharField(
        source="cluster.offsets_file",
        help_text="A standalone worker's offsets file as the dashboard reads it; empty otherwise.",
    )
    bootstrap_servers = serializers.CharField(source="cluster.bootstrap_servers")
    offsets_topic = serializers.CharField(source="cluster.offsets_topic")
    configs_topic = serializers.CharField(source="cluster.configs_topic")
    status_topic = serializers.CharField(source="cluster.status_topic")
    connect_url = serializers.CharField(source="cluster.connect_url")
    connect_urls = serializers.ListField(
        source="cluster.connect_urls",
        child=serializers.CharField(),
        help_text="The Connect worker URLs, tried in order (details: GET .../worker/).",
    )
    connect_username = serializers.CharField(source="cluster.connect_username")
    # The password itself is never rendered; only whether one is stored.
    connect_password_set = serializers.SerializerMethodField()
    connectors = serializers.IntegerField(help_text="Connectors seen by the last refresh.")
    counts_by_state = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Connectors by runtime state (RUNNING, PAUSED, STOPPED, FAILED, ...), "
        "a connector with a FAILED task as FAILED, deleted connectors whose offsets remain as "
        "DELETED; states with none are left out.",
    )
    failed_tasks = serializers.IntegerField(help_text="FAILED tasks of all its connectors.")
    total_sink_lag = serializers.IntegerField(
        allow_null=True, help_text="Records behind, all sinks that commit offsets together."
    )
    worst_lag_status = serializers.CharField(allow_null=True)
    last_refresh = RefreshRunOutput(source="refresh.last_run", allow_null=True)
    last_successful_refresh = RefreshRunOutput(source="refresh.last_success", allow_null=True)
    results_as_of = serializers.DateTimeField(source="refresh.snapshot_at", allow_null=True)
    results_age_seconds = serializers.IntegerField(source="refresh.age_seconds", allow_null=True)
    stale = serializers.BooleanField(source="refresh.stale")
    warning = serializers.CharField(
        source="refresh.warning",
        allow_null=True,
        help_text="Set when the results are not current: the last refresh failed (with its "
        "error and the age of the results shown) or they are stale.",
    )

    def get_connect_password_set(self, summary) -> bool:
        return bool(summary.cluster.connect_password)


class ConnectorStateOutput(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=["source", "sink"])
    connector_class = serializers.CharField()
    target_state = serializers.CharField()
    runtime_state = serializers.CharField(allow_null=True)
    task_states = serializers.DictField(source="runtime_tasks", child=serializers.CharField())
    tasks = TaskOutput(many=True, help_text="Each task with its worker and its trace, masked.")
    task_count = serializers.IntegerField(allow_null=True)
    deleted = serializers.BooleanField()
    mirrormaker2 = serializers.BooleanField()
    own_offsets_topic = serializers.CharField(allow_null=True)
    sink_group = serializers.CharField(allow_null=True)


@extend_schema(responses={200: ClusterOutput(many=True), **errors()})
@api_view(["GET"])
def cluster_list(request: Request) -> Response:
    """Every cluster with connector counts by state, sink lag, worst status and last refresh."""
    visible = visible_clusters(request.user)
    only = {cluster.pk: connector_filter(request.user, cluster) for cluster in visible}
    shown = snapshots.cluster_summaries(
        visible, only={pk: q for pk, q in only.items() if q is not None}
    )
    return Response(ClusterOutput(shown, many=True).data)


@extend_schema(responses={200: ConnectorStateOutput(many=True), **errors(404, 503)})
@api_view(["GET"])
def connector_states(request: Request, cluster_name: str) -> Response:
    """The connectors of a cluster as the config and status topics say now."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    state = run_service(lambda: connect_state.read_connect_state(cluster=cluster))
    state = clusters.state_for_user(request.user, cluster, state)
    return Response(ConnectorStateOutput(state.connectors, many=True).data)
