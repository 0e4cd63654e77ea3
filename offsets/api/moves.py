"""Move a connector to another cluster over REST (KIP-980): stage the move, resume it there.

Thin views: an input serializer validates, `offsets.edits.workflow` acts and audits. The edit is
approved and applied like any other (/api/v1/edits/<id>/approve/, .../apply/).
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.edit_serializers import CommentInput, EditDetailOutput
from offsets.api.errors import errors, run_service
from offsets.api.parsers import JSONParser
from offsets.edits.roles import can_stage
from offsets.edits.workflow import Move, resume_on_target, stage
from offsets.models import Cluster, OffsetEdit
from offsets.rights.grants import sees_edit, visible_clusters


class MoveInput(serializers.Serializer):
    target = serializers.CharField(max_length=63, help_text="The cluster to move it to")
    secrets = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
        help_text="The masked secret values of the config, supplied again: {key: value}",
    )
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


# Every edit's output names a move's target and its masked config.
MoveEditOutput = EditDetailOutput


def _target(request: Request, name: str) -> Cluster:
    # A cluster the user does not see reads as one that does not exist.
    target = visible_clusters(request.user).filter(name=name).first()
    if target is None:
        raise serializers.ValidationError({"target": [f"No cluster {name!r}."]})
    return target


@extend_schema(
    request=MoveInput,
    responses={201: MoveEditOutput, **errors(400, 404, 409, 415, 502, 503)},
    summary="Stage moving the connector to another cluster (KIP-980), as a draft edit",
)
@api_view(["POST"])
@parser_classes([JSONParser])
def connector_move(request: Request, cluster_name: str, connector_name: str) -> Response:
    cluster = get_cluster(request, cluster_name, connector_name)
    if not can_stage(request.user, cluster, connector_name):
        raise PermissionDenied("Staging a move needs the editor role.")
    data = MoveInput(data=request.data)
    data.is_valid(raise_exception=True)
    options = data.validated_data
    target = _target(request, options["target"])
    edit = run_service(
        lambda: stage(
            cluster=cluster,
            connector=connector_name,
            user=request.user,
            change=Move(target, options["secrets"]),
            comment=options["comment"],
        )
    )
    return Response(MoveEditOutput(edit).data, status=status.HTTP_201_CREATED)


@extend_schema(
    request=CommentInput,
    responses={200: MoveEditOutput, **errors(400, 404, 409, 415, 502, 503)},
    summary="Resume an applied move's connector on its target cluster (an approver)",
)
@api_view(["POST"])
def edit_resume_target(request: Request, pk: int) -> Response:
    data = CommentInput(data=request.data)
    data.is_valid(raise_exception=True)
    edit = OffsetEdit.objects.select_related("cluster", "target_cluster").filter(pk=pk).first()
    if edit is None or not sees_edit(request.user, edit):
        raise NotFound(f"No edit #{pk}.")
    edit = run_service(
        lambda: resume_on_target(
            edit=edit, user=request.user, comment=data.validated_data["comment"]
        )
    )
    return Response(MoveEditOutput(edit).data)
