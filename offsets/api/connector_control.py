"""Stop, pause, resume and restart a connector (or one task), and a cluster's Connect worker
version, over REST.

Thin views: an input serializer validates, `offsets.edits.connector_control` acts and audits,
an output serializer renders. Worker errors answer 404 (unknown connector), 409 (no worker
URL, or a rebalance), 502 (the worker refused or failed) and 503 (no worker answered), as
their classes say (`offsets.api.errors.run_service`).
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.errors import errors, run_service
from offsets.edits.connector_control import ACTIONS, control_connector
from offsets.kafka.connect_rest import ConnectRest


class ControlInput(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    include_tasks = serializers.BooleanField(
        required=False, default=False, help_text="restart: its tasks too"
    )
    only_failed = serializers.BooleanField(
        required=False, default=False, help_text="restart: only failed instances"
    )


class ControlOutput(serializers.Serializer):
    connector = serializers.CharField()
    action = serializers.ChoiceField(choices=list(ACTIONS))
    ok = serializers.BooleanField(help_text="The connector reached the asked state.")
    warning = serializers.BooleanField(
        help_text="After a restart: something failed again, or it is still restarting."
    )
    settled = serializers.BooleanField(
        help_text="After a restart: followed to its end (running steadily, failed again, or "
        "still restarting at the bound)."
    )
    message = serializers.CharField()
    state = serializers.CharField(allow_null=True, help_text="The worker's connector state.")
    tasks = serializers.ListField(child=serializers.CharField(), help_text="Task states.")
    answer = serializers.CharField(help_text="The worker's answer to the request, masked.")
    failed_again = serializers.SerializerMethodField()

    def get_failed_again(self, outcome) -> list[dict[str, str]]:
        """What FAILED after a restart: its name ("task 0"), its trace's first line."""
        return [{"name": name, "first_line": line} for name, line, _ in outcome.failed_again]


def _control(
    request: Request, cluster_name: str, connector_name: str, action: str, task: int | None = None
) -> Response:
    cluster = get_cluster(request, cluster_name, connector_name)
    form = ControlInput(data=request.data)
    form.is_valid(raise_exception=True)
    options = form.validated_data
    if action != "restart":
        options = {"comment": options["comment"]}
    if task is not None:
        options["task"] = task
    outcome = run_service(
        lambda: control_connector(
            cluster=cluster, connector=connector_name, action=action, user=request.user, **options
        )
    )
    return Response(ControlOutput(outcome).data)


CONTROL_SCHEMA = extend_schema(
    request=ControlInput, responses={200: ControlOutput, **errors(400, 404, 409, 415, 502, 503)}
)


@CONTROL_SCHEMA
@api_view(["POST"])
def connector_stop(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Stop the connector (PUT .../stop) and wait, up to 30 s, for STOPPED with no tasks."""
    return _control(request, cluster_name, connector_name, "stop")


@CONTROL_SCHEMA
@api_view(["POST"])
def connector_pause(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Pause the connector (PUT .../pause: its tasks stay assigned) and wait for PAUSED."""
    return _control(request, cluster_name, connector_name, "pause")


@CONTROL_SCHEMA
@api_view(["POST"])
def connector_resume(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Resume the connector (PUT .../resume, from PAUSED or STOPPED) and wait for RUNNING."""
    return _control(request, cluster_name, connector_name, "resume")


@CONTROL_SCHEMA
@api_view(["POST"])
def connector_restart(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Restart the connector (POST .../restart, optionally its tasks or only failed ones),
    then follow it, up to 20 s, until it runs steadily or fails again."""
    return _control(request, cluster_name, connector_name, "restart")


@CONTROL_SCHEMA
@api_view(["POST"])
def connector_task_restart(
    request: Request, cluster_name: str, connector_name: str, task: int
) -> Response:
    """Restart one task (POST .../tasks/{task}/restart), then follow it like a restart."""
    return _control(request, cluster_name, connector_name, "restart-task", task)


class CapabilitiesOutput(serializers.Serializer):
    kafka_version = serializers.CharField(allow_null=True)
    offsets_read = serializers.BooleanField(help_text="KIP-875 GET offsets (Connect 3.5+)")
    offsets_write = serializers.BooleanField(help_text="KIP-875 PATCH/DELETE (Connect 3.6+)")
    create_stopped = serializers.BooleanField(help_text="KIP-980 STOPPED at creation (3.7+)")


class WorkerOutput(serializers.Serializer):
    url = serializers.CharField(help_text="The worker URL that answered.")
    version = serializers.CharField()
    commit = serializers.CharField()
    kafka_cluster_id = serializers.CharField()
    capabilities = serializers.SerializerMethodField()

    def get_capabilities(self, info) -> CapabilitiesOutput:
        return CapabilitiesOutput(info.capabilities.as_dict()).data


@extend_schema(responses={200: WorkerOutput, **errors(404, 409, 502, 503)})
@api_view(["GET"])
def cluster_worker(request: Request, cluster_name: str) -> Response:
    """The cluster's Connect worker (GET / of the first that answers): version, capabilities."""
    cluster = get_cluster(request, cluster_name)
    info = run_service(lambda: ConnectRest.for_cluster(cluster, timeout=10).worker_info())
    return Response(WorkerOutput(info).data)
