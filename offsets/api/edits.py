"""Offset edits over REST: stage, list, show with the diff, review, apply (imports are
`offsets/api/imports.py`, the serializers `offsets/api/edit_serializers.py`).

Thin views: an input serializer validates, a service of ``offsets.edits.workflow`` acts, an
output serializer renders. The services enforce the roles, so the API, the pages and the
commands answer the same way: 400 bad input (naming the field), 403 wrong role or
self-approval, 404 unknown cluster/connector/edit, 409 state conflicts, 503 Kafka down.
"""

from collections.abc import Callable

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.edit_serializers import (
    CommentInput,
    DiffPageInput,
    EditDetailOutput,
    EditFilter,
    EditInput,
    EditOutput,
)
from offsets.api.errors import errors, run_service
from offsets.api.parsers import JSONParser, request_data
from offsets.edits.kinds.offset_changes.writes import choose_route
from offsets.edits.roles import can_stage
from offsets.edits.workflow import (
    OffsetChange,
    StoreChange,
    apply_edit,
    approve_edit,
    cancel_edit,
    commit_back,
    reconcile_edit,
    reject_edit,
    restage_edit,
    stage,
    submit_edit,
)
from offsets.models import OffsetEdit
from offsets.rights.grants import sees_edit, visible_clusters


def _get_edit(request: Request, pk: int) -> OffsetEdit:
    """The edit, if the user sees its connector on its cluster; 404 as if it did not exist."""
    edit = get_object_or_404(
        OffsetEdit.objects.select_related("cluster").filter(
            cluster__in=visible_clusters(request.user)
        ),
        pk=pk,
    )
    if not sees_edit(request.user, edit):
        raise NotFound("No OffsetEdit matches the given query.")
    return edit


# --- Views ------------------------------------------------------------------------------------


def _stage(cluster, data: EditInput, user) -> OffsetEdit:
    """Stage an offset change, or offsets set in a sink's own store (store-offset)."""
    into = OffsetChange
    if data.validated_data["strategy"] == OffsetEdit.Strategy.STORE_OFFSET:
        into = StoreChange
    return stage(
        cluster=cluster,
        connector=data.validated_data["connector"],
        user=user,
        change=into(data.request()),
        comment=data.validated_data["comment"],
    )


@extend_schema(
    methods=["GET"],
    parameters=[EditFilter],
    responses={200: EditOutput(many=True), **errors(400, 404)},
    summary="List offset edits",
)
@extend_schema(
    methods=["POST"],
    request=EditInput,
    responses={201: EditDetailOutput, **errors(400, 404, 409, 413, 415, 503)},
)
@api_view(["GET", "POST"])
@parser_classes([JSONParser])  # nested partitions and maps do not fit a form
def edit_list(request: Request) -> Response:
    """List edits (newest first), or stage one: its diff against the live topics."""
    if request.method == "POST":
        data = EditInput(data=request_data(request))
        data.is_valid(raise_exception=True)
        cluster = get_cluster(request, data.validated_data["cluster"])
        if not can_stage(request.user, cluster, data.validated_data["connector"]):
            raise PermissionDenied("Staging offset edits needs the editor role.")
        edit = run_service(lambda: _stage(cluster, data, request.user))
        return Response(EditDetailOutput(edit).data, status=status.HTTP_201_CREATED)
    query = EditFilter(data=request.query_params)
    query.is_valid(raise_exception=True)
    found = OffsetEdit.objects.select_related(
        "cluster", "target_cluster", "created_by", "approved_by", "applied_by"
    ).filter(cluster__in=visible_clusters(request.user))
    if "cluster" in query.validated_data:
        # A connector outside the grants answers as an unknown one, not as an empty list.
        cluster = get_cluster(
            request, query.validated_data["cluster"], query.validated_data.get("connector")
        )
        found = found.filter(cluster=cluster)
    if "connector" in query.validated_data:
        found = found.filter(connector=query.validated_data["connector"])
    if "state" in query.validated_data:
        found = found.filter(state=query.validated_data["state"])
    shown = [edit for edit in found[:500] if sees_edit(request.user, edit)]
    return Response(EditOutput(shown, many=True).data)


@extend_schema(parameters=[DiffPageInput], responses={200: EditDetailOutput, **errors(400, 404)})
@api_view(["GET"])
def edit_detail(request: Request, pk: int) -> Response:
    """One edit with its diff's counts, one page of its rows (before -> after), and audit trail."""
    query = DiffPageInput(data=request.query_params)
    query.is_valid(raise_exception=True)
    edit = _get_edit(request, pk)
    return Response(EditDetailOutput(edit, context={"page": query.validated_data["page"]}).data)


class RouteOutput(serializers.Serializer):
    via = serializers.CharField(help_text='"worker" (KIP-875 through Connect) or "topic"')
    reason = serializers.CharField()
    refused = serializers.BooleanField(help_text="The worker's answer stops the apply (401, HTML).")


@extend_schema(responses={200: RouteOutput, **errors(404)})
@api_view(["GET"])
def edit_route(request: Request, pk: int) -> Response:
    """How the edit would be written now: through the Connect worker (KIP-875) or the topic, and why.

    Asks the worker for its version (a few seconds at most when it does not answer).
    """
    chosen = choose_route(_get_edit(request, pk))
    return Response(
        RouteOutput(
            {"via": chosen.via, "reason": chosen.reason, "refused": bool(chosen.refusal)}
        ).data
    )


def _action_view(service: Callable, summary: str, *, status: int = 200):
    """A POST {comment} view calling `service`; it answers with the edit the service returns."""

    @extend_schema(
        request=CommentInput,
        responses={status: EditDetailOutput, **errors(400, 403, 404, 409, 415, 503)},
        summary=summary,
    )
    @api_view(["POST"])
    def view(request: Request, pk: int) -> Response:
        data = CommentInput(data=request.data)
        data.is_valid(raise_exception=True)
        edit = _get_edit(request, pk)
        edit = run_service(
            lambda: service(edit=edit, user=request.user, comment=data.validated_data["comment"])
        )
        return Response(EditDetailOutput(edit).data, status=status)

    return view


edit_submit = _action_view(submit_edit, "Submit a draft for approval (its author)")
edit_approve = _action_view(approve_edit, "Approve (an approver, not the author)")
edit_reject = _action_view(reject_edit, "Reject (an approver, not the author)")
edit_cancel = _action_view(cancel_edit, "Cancel (the author or an approver)")
edit_apply = _action_view(
    apply_edit, "Run the lock check and apply (an approver); 200 with the final state"
)
edit_reconcile = _action_view(
    reconcile_edit,
    "Settle an edit stuck in applying from what Kafka holds (an approver); 409 while its "
    "apply may still be running",
)


edit_stage_restore = _action_view(
    commit_back,
    "Stage a new edit committing back what a failed partial sink delete lost (an editor); 201 "
    "with the new draft, 400 when nothing is left to commit back",
    status=201,
)


edit_restage = _action_view(
    restage_edit,
    "Stage a conflicted edit again with the same inputs (an editor): 201 with the new draft, "
    "its diff read now; the old edit links to it",
    status=201,
)
