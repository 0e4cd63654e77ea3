"""Refresh runs of a cluster: the recent ones, and starting one in the background."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.errors import errors
from offsets.domain.rights import REFRESH_ROLE, WHOLE_CLUSTER, Action
from offsets.models import RefreshRun
from offsets.queries.clusters import cluster_for_user
from offsets.refresh import background
from offsets.rights.grants import may

RECENT_RUNS = 50


class RefreshRunOutput(serializers.ModelSerializer):
    malformed_by_reason = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="Malformed records by topic, then by reason (e.g. value-not-json).",
    )
    records_by_topic = serializers.DictField(child=serializers.IntegerField())
    heartbeat_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="A running refresh's last renewal of its lease: its last sign of life.",
    )

    class Meta:
        model = RefreshRun
        fields = [
            "id",
            "status",
            "full",
            "phase",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "seconds",
            "records_read",
            "records_by_topic",
            "malformed",
            "malformed_by_reason",
            "error",
        ]


class RefreshStartInput(serializers.Serializer):
    full = serializers.BooleanField(default=False, help_text="Rebuild from the beginning.")


class RefreshConflictOutput(serializers.Serializer):
    detail = serializers.CharField()
    running = RefreshRunOutput()


@extend_schema(methods=["GET"], responses={200: RefreshRunOutput(many=True), **errors(404)})
@extend_schema(
    methods=["POST"],
    request=RefreshStartInput,
    responses={
        202: RefreshRunOutput,
        409: OpenApiResponse(RefreshConflictOutput, description="A refresh is already running."),
        500: OpenApiResponse(RefreshRunOutput, description="The refresh could not be started."),
        **errors(400, 404, 415),
    },
)
@api_view(["GET", "POST"])
def refreshes(request: Request, cluster_name: str) -> Response:
    """GET: the cluster's recent refreshes, newest first. POST: start one in the background."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    if request.method == "GET":
        runs = RefreshRun.objects.filter(cluster=cluster).order_by("-started_at", "-pk")
        return Response(RefreshRunOutput(runs[:RECENT_RUNS], many=True).data)
    if not may(request.user, Action.REFRESH, cluster, WHOLE_CLUSTER):
        raise PermissionDenied(REFRESH_ROLE)
    data = RefreshStartInput(data=request.data)
    data.is_valid(raise_exception=True)
    run = background.start_refresh(cluster=cluster, full=data.validated_data["full"])
    if run is None:
        running = background.running_refresh(cluster=cluster)
        body = {"detail": f"A refresh of {cluster.name} is already running."}
        if running is not None:
            body = {
                "detail": background.AlreadyRunning(running).message,
                "running": RefreshRunOutput(running).data,
            }
        return Response(body, status=status.HTTP_409_CONFLICT)
    if run.status == RefreshRun.Status.FAILED:
        # The process could not even start (the error says why).
        return Response(RefreshRunOutput(run).data, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    return Response(RefreshRunOutput(run).data, status=status.HTTP_202_ACCEPTED)
