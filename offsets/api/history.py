"""A connector's history over the API: commits per time bucket, rewinds (each with the
edit that wrote it, if one did), lag over time and one partition's every commit."""

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.connectors import get_connector
from offsets.api.errors import errors
from offsets.queries import snapshots


class HistoryInput(serializers.Serializer):
    partition = serializers.RegexField(
        r"^[0-9a-f]{40}$", required=False, help_text="A source partition's key_hash."
    )
    since = serializers.DateTimeField(required=False, help_text="Commits of the partition since.")


class BucketOutput(serializers.Serializer):
    start = serializers.DateTimeField()
    commits = serializers.IntegerField()


class LagPointOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    lag_records = serializers.IntegerField()
    lag_ms = serializers.IntegerField(allow_null=True)


class RewindOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    topic = serializers.CharField()
    key_hash = serializers.CharField()
    partition = serializers.DictField()
    kafka_partition = serializers.IntegerField()
    kafka_offset = serializers.IntegerField()
    from_progress = serializers.FloatField()
    to_progress = serializers.FloatField()
    edit = serializers.IntegerField(
        source="edit_id",
        allow_null=True,
        help_text="The applied offset edit that wrote this rewind (its id); null when no edit "
        "explains it (an alarm: the connector reads records again).",
    )


class CommitPointOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    progress = serializers.FloatField(allow_null=True)
    offset = serializers.DictField(allow_null=True)
    kafka_offset = serializers.IntegerField()
    rewind = serializers.BooleanField()
    position_age_ms = serializers.IntegerField(
        allow_null=True,
        help_text="The source position's age at this commit (CDC and JDBC-style offsets).",
    )


class PartitionHistoryOutput(serializers.Serializer):
    key_hash = serializers.CharField()
    partition = serializers.DictField()
    commits = CommitPointOutput(many=True)


class HistoryOutput(serializers.Serializer):
    commit_buckets = BucketOutput(many=True)
    rewinds = RewindOutput(many=True)
    lag_samples = LagPointOutput(many=True)
    partition_history = PartitionHistoryOutput(required=False)


# -------------------------------------------------------------------------------------------
# Views.


@extend_schema(parameters=[HistoryInput], responses={200: HistoryOutput, **errors(400, 404)})
@api_view(["GET"])
def connector_history(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Commits per time bucket, rewinds, lag over time and, for `?partition=`, its commits."""
    snapshot = get_connector(request, cluster_name, connector_name)
    cluster = snapshot.cluster
    params = HistoryInput(data=request.query_params)
    params.is_valid(raise_exception=True)
    body = {
        "commit_buckets": BucketOutput(
            snapshots.commit_buckets(cluster=cluster, connector=snapshot.name), many=True
        ).data,
        "rewinds": RewindOutput(
            snapshots.rewinds(cluster=cluster, connector=snapshot.name, limit=1000), many=True
        ).data,
        "lag_samples": LagPointOutput(
            snapshots.lag_series(cluster=cluster, connector=snapshot.name), many=True
        ).data,
    }
    key_hash = params.validated_data.get("partition")
    if key_hash:
        partition = snapshots.get_source_partition(
            cluster=cluster, connector=snapshot.name, key_hash=key_hash
        )
        if partition is None:
            raise Http404(f"No partition {key_hash} in {snapshot.name}.")
        from offsets.history import reading as history

        points = history.partition_history(
            cluster=cluster,
            connector=snapshot.name,
            key_hash=key_hash,
            since=params.validated_data.get("since"),
            connector_class=snapshot.connector_class,
        )
        body["partition_history"] = {
            "key_hash": key_hash,
            "partition": partition.partition,
            "commits": CommitPointOutput(points, many=True).data,
        }
    return Response(body)
