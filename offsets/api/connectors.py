"""One cluster's connectors as the last refresh saw them: list, detail, offsets, lag, history."""

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.errors import errors
from offsets.api.parsers import QueryIntegerField
from offsets.api.refreshes import RefreshRunOutput
from offsets.domain import pauses
from offsets.domain.connectors import mask_secrets
from offsets.models import ConnectorSnapshot, SinkPartitionLag, SourceOffset
from offsets.queries import snapshots
from offsets.queries.clusters import cluster_for_user, hide_unseen_upstreams
from offsets.rights import gate
from offsets.rights.grants import connector_filter

MAX_PAGE_SIZE = 1000


def get_connector(request: Request, cluster_name: str, name: str) -> ConnectorSnapshot:
    """The connector's snapshot, its cluster in `.cluster`; 404 if either is unknown."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=name)
    snapshot = snapshots.get_connector(cluster_name=cluster.name, name=name)
    if snapshot is None:
        raise Http404(gate.unknown_connector(cluster, name))
    return hide_unseen_upstreams(request.user, [snapshot])[0]


def _sorts(sorts: dict[str, str]) -> list[str]:
    return [*sorts, *(f"-{key}" for key in sorts)]


# -------------------------------------------------------------------------------------------
# Serializers.


# A planned pause is never an error, in the API as on the pages and in /metrics.
LAG_STATUS_HELP = (
    "OK, WARN or ERR by Burrow's rules; PAUSED when its owner paused or stopped it and "
    "nothing failed (its lag stops by design); null before its first lag sample."
)


class FreshnessOutput(serializers.Serializer):
    results_as_of = serializers.DateTimeField(source="snapshot_at", allow_null=True)
    results_age_seconds = serializers.IntegerField(source="age_seconds", allow_null=True)
    stale = serializers.BooleanField()
    warning = serializers.CharField(
        allow_null=True,
        help_text="Set when the results are not current: the last refresh failed (with its "
        "error and the age of the results shown) or they are stale.",
    )
    last_refresh = RefreshRunOutput(source="last_run", allow_null=True)
    last_successful_refresh = RefreshRunOutput(source="last_success", allow_null=True)


class ConnectorListInput(serializers.Serializer):
    q = serializers.CharField(required=False, default="", allow_blank=True, max_length=249)
    type = serializers.ChoiceField(
        required=False, default="", choices=["", *snapshots.CONNECTOR_TYPES]
    )
    state = serializers.ChoiceField(
        required=False, default="", choices=["", *snapshots.STATE_CHOICES]
    )
    status = serializers.ChoiceField(
        required=False, default="", choices=["", *snapshots.LAG_STATUSES]
    )
    sort = serializers.ChoiceField(
        required=False, default="name", choices=_sorts(snapshots.CONNECTOR_SORTS)
    )


class ConnectorOutput(serializers.ModelSerializer):
    lag_status = serializers.SerializerMethodField(help_text=LAG_STATUS_HELP)
    status_reasons = serializers.SerializerMethodField()
    last_commit_basis = serializers.CharField(
        read_only=True, allow_null=True, help_text=ConnectorSnapshot.LAST_COMMIT_BASIS_HELP
    )
    paused_by_owner = serializers.BooleanField(
        read_only=True,
        help_text="Its owner paused or stopped it and nothing failed: its lag stops by design, "
        "and the `PAUSED` status filter lists it, never `ERR` or `STOP`.",
    )
    url = serializers.SerializerMethodField()

    class Meta:
        model = ConnectorSnapshot
        fields = [
            "name",
            "type",
            "connector_class",
            "target_state",
            "runtime_state",
            "task_count",
            "failed_tasks",
            "deleted",
            "mirrormaker2",
            "own_offsets_topic",
            "sink_group",
            "offsets_managed_externally",
            "uncommitted_partitions",
            "source_alias",
            "upstream_cluster",
            "upstream_error",
            "offsets_store",
            "offsets_store_error",
            "partitions",
            "lag_records",
            "lag_ms",
            "lag_status",
            "status_reasons",
            "paused_by_owner",
            "last_commit_at",
            "last_commit_basis",
            "malformed",
            "rewinds",
            "stalled_partitions",
            "drifted_partitions",
            "updated_at",
            "url",
        ]

    def get_lag_status(self, snapshot: ConnectorSnapshot) -> str | None:
        return pauses.shown_status(snapshot.lag_status, paused=snapshot.paused_by_owner)

    def get_status_reasons(self, snapshot: ConnectorSnapshot) -> list[str]:
        return snapshots.status_reasons(snapshot)

    def get_url(self, snapshot: ConnectorSnapshot) -> str:
        return reverse("api-connector", args=[snapshot.cluster.name, snapshot.name])


class ConnectorListOutput(FreshnessOutput):
    count = serializers.IntegerField()
    connectors = ConnectorOutput(many=True)


class TaskOutput(serializers.Serializer):
    task = serializers.IntegerField()
    state = serializers.CharField()
    worker_id = serializers.CharField(help_text="The worker running it, as the status topic says.")
    error = serializers.CharField(help_text="The first line of its trace; empty without one.")
    trace = serializers.CharField(help_text="Its whole trace, secrets masked.")


class ConnectorDetailOutput(ConnectorOutput):
    config = serializers.SerializerMethodField(help_text="Secret values masked.")
    tasks = TaskOutput(many=True)
    failed_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the worker wrote the FAILED status the connector (or its first failed "
        "task) has now: the status topic record's timestamp; null when none is failing or the "
        "record has no time.",
    )

    class Meta(ConnectorOutput.Meta):
        fields = [
            *ConnectorOutput.Meta.fields,
            *("task_states", "tasks", "trace", "failed_at", "config"),
        ]

    def get_config(self, snapshot: ConnectorSnapshot) -> dict[str, str | None]:
        return mask_secrets(snapshot.config)


class PartitionsInput(serializers.Serializer):
    q = serializers.CharField(required=False, default="", allow_blank=True, max_length=500)
    sort = serializers.CharField(required=False, default="partition")
    page = QueryIntegerField(required=False, default=1, min_value=1)
    page_size = QueryIntegerField(required=False, default=100, min_value=1, max_value=MAX_PAGE_SIZE)

    def validate_sort(self, value: str) -> str:
        sorts = self.context["sorts"]
        if value not in _sorts(sorts):
            raise serializers.ValidationError(f"One of {', '.join(_sorts(sorts))}.")
        return value


class SourcePartitionOutput(serializers.ModelSerializer):
    position_age_ms = serializers.SerializerMethodField(
        help_text="CDC and JDBC-style sources: the commit's time less the source's own clock in "
        "the offset (Debezium's ts_sec/ts_usec/ts_ms, a JDBC source's timestamp). It grows "
        "while the source is idle. Null for other shapes."
    )

    def get_position_age_ms(self, row: SourceOffset) -> int | None:
        return getattr(row, "position_age_ms", None)

    class Meta:
        model = SourceOffset
        fields = [
            "topic",
            "key_hash",
            "partition",
            "offset",
            "kafka_partition",
            "kafka_offset",
            "progress",
            "first_commit_at",
            "last_commit_at",
            "commits",
            "rewinds",
            "stalled",
            "newer_unstorable_offset",
            "position_age_ms",
        ]
        extra_kwargs = {
            "newer_unstorable_offset": {
                "help_text": "The Kafka offset of a newer write the database cannot hold (a NUL "
                "or a lone surrogate): the runtime uses it, so `offset` is not the current one."
            }
        }


class SinkPartitionOutput(serializers.ModelSerializer):
    class Meta:
        model = SinkPartitionLag
        fields = [
            "topic",
            "partition",
            "committed",
            "committed_moved_at",
            "upstream",
            "log_start",
            "log_end",
            "lag_records",
            "lag_ms",
            "status",
            "sampled_at",
        ]
        extra_kwargs = {
            "committed": {
                "help_text": "The next offset to read: a sink group's committed offset (null: "
                "never committed), a MirrorMaker 2 source's stored offset + 1."
            },
            "upstream": {
                "help_text": "A MirrorMaker 2 source's upstream cluster (registered name); "
                "empty for a sink."
            },
        }


class PartitionsOutput(serializers.Serializer):
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    source_partitions = SourcePartitionOutput(many=True, required=False)
    sink_partitions = SinkPartitionOutput(many=True, required=False)


class OffsetsEntryOutput(serializers.Serializer):
    partition = serializers.DictField()
    offset = serializers.DictField(allow_null=True)


class OffsetsOutput(serializers.Serializer):
    offsets = OffsetsEntryOutput(many=True)


class LagOutput(serializers.Serializer):
    lag_records = serializers.IntegerField(allow_null=True)
    lag_ms = serializers.IntegerField(allow_null=True)
    lag_status = serializers.CharField(allow_null=True, allow_blank=True, help_text=LAG_STATUS_HELP)
    status_reasons = serializers.ListField(child=serializers.CharField())
    offsets_managed_externally = serializers.BooleanField()
    uncommitted_partitions = serializers.IntegerField(
        help_text="Partitions its group has no commit for (a mirror: upstream partitions it "
        "never copied from): they lag from auto.offset.reset."
    )
    source_alias = serializers.CharField(
        allow_blank=True, help_text="A MirrorMaker 2 source's source.cluster.alias."
    )
    upstream_cluster = serializers.CharField(
        allow_blank=True,
        help_text="The registered cluster chosen for the alias; empty: none, its lag is unknown.",
    )
    upstream_error = serializers.CharField(
        allow_blank=True, help_text="Why the upstream's lag could not be read at the last refresh."
    )
    offsets_store = serializers.CharField(
        allow_blank=True,
        help_text="Where the sink's offsets were read, when an admin placed them outside "
        "Connect's group (a group on another cluster, the plugin's file); empty: its group.",
    )
    offsets_store_error = serializers.CharField(
        allow_blank=True, help_text="Why that store could not be read at the last refresh."
    )
    partitions = SinkPartitionOutput(many=True)


@extend_schema(
    operation_id="clusters_connectors_list",
    parameters=[ConnectorListInput],
    responses={200: ConnectorListOutput, **errors(400, 404)},
)
@api_view(["GET"])
def connector_list(request: Request, cluster_name: str) -> Response:
    """The cluster's connectors as the last refresh saw them, filtered and sorted like the page."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    params = ConnectorListInput(data=request.query_params)
    params.is_valid(raise_exception=True)
    found = snapshots.connectors(cluster=cluster, **params.validated_data)
    only = connector_filter(request.user, cluster)
    if only is not None:
        found = found.filter(only)
    rows = hide_unseen_upstreams(request.user, list(found.select_related("cluster")))
    rows = snapshots.with_partition_status(rows, cluster=cluster)
    refresh = snapshots.refresh_state(cluster=cluster)
    return Response(
        {
            **FreshnessOutput(refresh).data,
            "count": len(rows),
            "connectors": ConnectorOutput(rows, many=True).data,
        }
    )


@extend_schema(responses={200: ConnectorDetailOutput, **errors(404)})
@api_view(["GET"])
def connector_detail(request: Request, cluster_name: str, connector_name: str) -> Response:
    """One connector: states, tasks, masked config, offsets and lag summary."""
    return Response(
        ConnectorDetailOutput(get_connector(request, cluster_name, connector_name)).data
    )


@extend_schema(parameters=[PartitionsInput], responses={200: PartitionsOutput, **errors(400, 404)})
@api_view(["GET"])
def connector_partitions(request: Request, cluster_name: str, connector_name: str) -> Response:
    """One page of the connector's source partitions or sink topic-partitions."""
    snapshot = get_connector(request, cluster_name, connector_name)
    cluster = snapshot.cluster
    sink = snapshot.type == "sink"
    sorts = snapshots.SINK_PARTITION_SORTS if sink else snapshots.PARTITION_SORTS
    params = PartitionsInput(data=request.query_params, context={"sorts": sorts})
    params.is_valid(raise_exception=True)
    lookup = snapshots.sink_partitions if sink else snapshots.source_partitions
    rows = lookup(
        cluster=cluster,
        connector=snapshot.name,
        q=params.validated_data["q"],
        sort=params.validated_data["sort"],
    )
    page = snapshots.paginate(
        rows, params.validated_data["page"], params.validated_data["page_size"]
    )
    output = SinkPartitionOutput if sink else SourcePartitionOutput
    if not sink:
        page.object_list = snapshots.with_position_ages(
            page.object_list, connector_class=snapshot.connector_class
        )
    return Response(
        {
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "sink_partitions" if sink else "source_partitions": output(page, many=True).data,
        }
    )


@extend_schema(responses={200: OffsetsOutput, **errors(404)})
@api_view(["GET"])
def connector_offsets(request: Request, cluster_name: str, connector_name: str) -> Response:
    """The connector's offsets in the KIP-875 shape (`GET /connectors/{name}/offsets`).

    The stored ones: a partition whose newer offset could not be stored (`source_partitions`
    says which) holds its older one here, and the X-Newer-Offsets-Not-Stored header counts them.
    """
    snapshot = get_connector(request, cluster_name, connector_name)
    cluster = snapshot.cluster
    response = Response(snapshots.export_document(cluster=cluster, snapshot=snapshot))
    if not_stored := snapshots.newer_offsets_not_stored(cluster=cluster, snapshot=snapshot):
        response[snapshots.NOT_CURRENT_HEADER] = str(not_stored)
    return response


@extend_schema(responses={200: LagOutput, **errors(404)})
@api_view(["GET"])
def connector_lag(request: Request, cluster_name: str, connector_name: str) -> Response:
    """A sink's lag per topic-partition (committed, log start and end, records, time, status),
    or a MirrorMaker 2 source's per upstream partition.

    Other sources have no such lag: their partitions list is empty.
    """
    snapshot = get_connector(request, cluster_name, connector_name)
    cluster = snapshot.cluster
    partitions = snapshots.sink_partitions(cluster=cluster, connector=snapshot.name)
    if snapshot.upstream_hidden:  # a mirror's partitions lag behind its hidden upstream
        partitions = []
    return Response(
        {
            "lag_records": snapshot.lag_records,
            "lag_ms": snapshot.lag_ms,
            "lag_status": pauses.shown_status(snapshot.lag_status, paused=snapshot.paused_by_owner),
            "status_reasons": snapshots.status_reasons(snapshot),
            "offsets_managed_externally": snapshot.offsets_managed_externally,
            "uncommitted_partitions": snapshot.uncommitted_partitions,
            "source_alias": snapshot.source_alias,
            "upstream_cluster": snapshot.upstream_cluster,
            "upstream_error": snapshot.upstream_error,
            "offsets_store": snapshot.offsets_store,
            "offsets_store_error": snapshot.offsets_store_error,
            "partitions": SinkPartitionOutput(partitions, many=True).data,
        }
    )
