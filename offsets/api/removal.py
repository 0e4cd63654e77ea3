"""Delete a connector with its offsets, clean up offsets that outlived one, list those, over REST.

Thin views: `offsets.edits.workflow.stage` stages a draft edit (submitted, approved
and applied like any other through /api/v1/edits/{id}/...); `offsets.queries.orphans` lists
what the last refresh stored, without reading Kafka.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.edit_serializers import EditDetailOutput
from offsets.api.errors import errors, run_service
from offsets.api.parsers import JSONParser
from offsets.edits.workflow import Cleanup, Removal, stage
from offsets.queries.orphans import orphans
from offsets.rights.grants import only_visible


class StrictCharField(serializers.CharField):
    """A JSON string, and only that: DRF's CharField would take 0 or true as "0", "True"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class RemovalInput(serializers.Serializer):
    comment = StrictCharField(required=False, allow_blank=True, default="", max_length=5000)


def _stage(request: Request, cluster_name: str, connector_name: str, change) -> Response:
    cluster = get_cluster(request, cluster_name, connector_name)
    data = RemovalInput(data=request.data)
    data.is_valid(raise_exception=True)
    edit = run_service(
        lambda: stage(
            cluster=cluster,
            connector=connector_name,
            user=request.user,
            change=change,
            comment=data.validated_data["comment"],
        )
    )
    return Response(EditDetailOutput(edit).data, status=status.HTTP_201_CREATED)


STAGE_SCHEMA = extend_schema(
    request=RemovalInput, responses={201: EditDetailOutput, **errors(400, 404, 409, 415, 503)}
)


@STAGE_SCHEMA
@api_view(["POST"])
@parser_classes([JSONParser])
def connector_delete(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Stage deleting the connector with every offset it has (an editor): a draft edit.

    409 when it does not exist any more (stage a clean-up instead).
    """
    return _stage(request, cluster_name, connector_name, Removal())


@STAGE_SCHEMA
@api_view(["POST"])
@parser_classes([JSONParser])
def connector_cleanup(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Stage tombstoning the offsets a deleted connector left (an editor): a draft edit.

    409 when the connector still exists, 400 when it has nothing left to clean up.
    """
    return _stage(request, cluster_name, connector_name, Cleanup())


class OrphanOutput(serializers.Serializer):
    connector = serializers.CharField()
    type = serializers.ChoiceField(choices=["source", "sink"])
    topics = serializers.DictField(
        child=serializers.IntegerField(), help_text="Source: live keys per offsets topic."
    )
    group = serializers.CharField(help_text="Sink: its consumer group.")
    partitions = serializers.IntegerField(help_text="Sink: committed partitions.")


@extend_schema(responses={200: OrphanOutput(many=True), **errors(404)})
@api_view(["GET"])
def cluster_orphans(request: Request, cluster_name: str) -> Response:
    """Connectors that are gone but whose offsets remain, as of the last refresh."""
    cluster = get_cluster(request, cluster_name)
    shown = only_visible(request.user, cluster, orphans(cluster), lambda orphan: orphan.connector)
    return Response(OrphanOutput(shown, many=True).data)
