"""Offset edits over REST: stage, list, show with the diff, review, apply, import.

Thin views: an input serializer validates, a service of ``offsets.edits.workflow`` acts, an
output serializer renders. The services enforce the roles, so the API, the pages and the
commands answer the same way: 400 bad input (naming the field), 403 wrong role or
self-approval, 404 unknown cluster/connector/edit, 409 state conflicts, 503 Kafka down.
"""

import base64
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.errors import errors, run_service
from offsets.api.parsers import JSONParser
from offsets.edits.workflow import (
    DIFF_PAGE_ROWS,
    Preview,
    StageRequest,
    apply_edit,
    approve_edit,
    can_stage,
    cancel_edit,
    choose_route,
    import_document,
    reconcile_edit,
    reject_edit,
    stage_edit,
    stage_restore,
    submit_edit,
)
from offsets.formats.edit_rules import SinkChange, SourceChange, parse_duration
from offsets.formats.masking import mask_secrets
from offsets.formats.offsets_json import flat_map_problem
from offsets.models import ChangeCounts, OffsetEdit

# An answer about a document holds its counts and the first rows of each diff: a document
# may name tens of thousands of partitions.
SHOWN = DIFF_PAGE_ROWS


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def _data(request: Request):
    """The request's JSON body; one larger than the API reads answers 413 saying so."""
    try:
        return request.data
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise PayloadTooLarge(
            f"The request body is larger than {limit:,} bytes, the most the API reads "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE). Split the document, or upload it on the import page."
        ) from None


def _get_edit(pk: int) -> OffsetEdit:
    return get_object_or_404(OffsetEdit.objects.select_related("cluster"), pk=pk)


# --- Serializers ------------------------------------------------------------------------------


class TopicPartitionInput(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    partition = serializers.IntegerField(min_value=0)


class FlatMapField(serializers.JSONField):
    """A JSON object of primitives (a source partition or offset map)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict) or not value:
            raise serializers.ValidationError("Must be a non-empty JSON object.")
        problem = flat_map_problem(value)
        if problem is not None:
            raise serializers.ValidationError(f"{problem[0]!r} {problem[1]}.")
        return value


class EditInput(serializers.Serializer):
    cluster = serializers.CharField(max_length=63)
    connector = serializers.CharField(max_length=249)
    # The model's choices (one enum in the schema); "import" has its own endpoint.
    strategy = serializers.ChoiceField(choices=OffsetEdit.Strategy.choices)
    partition = FlatMapField(required=False)
    offset = FlatMapField(required=False)
    at = serializers.DateTimeField(required=False, help_text="restore, datetime")
    duration = serializers.CharField(
        required=False, help_text="ISO-8601 (PT1H30M) or short (90m): how far back"
    )
    value = serializers.IntegerField(required=False, help_text="offset, or shift (signed)")
    group = serializers.CharField(required=False, max_length=255, help_text="copy-group")
    partitions = TopicPartitionInput(many=True, required=False, help_text="sink scope (all)")
    comment = serializers.CharField(required=False, allow_blank=True, default="")

    def validate_strategy(self, value: str) -> str:
        if value == OffsetEdit.Strategy.IMPORT:
            raise serializers.ValidationError("Imports go to /api/v1/edits/import/.")
        return value

    def validate_duration(self, value: str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def request(self) -> StageRequest:
        data = self.validated_data
        partitions = data.get("partitions")
        return StageRequest(
            strategy=data["strategy"],
            partition=data.get("partition"),
            offset=data.get("offset"),
            at=data.get("at"),
            duration=data.get("duration"),
            value=data.get("value"),
            group=data.get("group", ""),
            partitions=(
                None
                if partitions is None
                else tuple((p["topic"], p["partition"]) for p in partitions)
            ),
        )


class CommentInput(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class EditFilter(serializers.Serializer):
    cluster = serializers.CharField(required=False)
    connector = serializers.CharField(required=False)
    state = serializers.ChoiceField(choices=OffsetEdit.State.choices, required=False)


class ImportInput(serializers.Serializer):
    cluster = serializers.CharField()
    connector = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="for a KIP-875 document"
    )
    document = serializers.JSONField(
        help_text="KIP-199 {connector: [...]}, KIP-875 {offsets: [...]}, or a Strimzi "
        "offsets ConfigMap: as an object, or its YAML as a string"
    )
    dry_run = serializers.BooleanField(required=False, default=False)
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class ChangeOutput(serializers.Serializer):
    partition = serializers.JSONField()
    key = serializers.SerializerMethodField(help_text="exact key bytes as text (sources)")
    key_base64 = serializers.SerializerMethodField(help_text="exact key bytes (sources)")
    topic = serializers.CharField()
    kafka_partition = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField()
    after = serializers.JSONField()
    is_new = serializers.BooleanField()
    is_delete = serializers.BooleanField()
    warnings = serializers.ListField(child=serializers.CharField())

    def get_key(self, change) -> str | None:
        return change.key_text if change.key_bytes is not None else None

    def get_key_base64(self, change) -> str | None:
        if change.key_bytes is None:
            return None
        return base64.b64encode(bytes(change.key_bytes)).decode()


class EditOutput(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name")
    created_by = serializers.CharField(source="created_by.username")
    approved_by = serializers.CharField(source="approved_by.username", allow_null=True)
    applied_by = serializers.CharField(source="applied_by.username", allow_null=True)
    target_cluster = serializers.CharField(
        source="target_cluster.name", allow_null=True, help_text="A move's target cluster"
    )
    connector_config = serializers.SerializerMethodField(
        help_text="A move's config to create on the target, masked as every config"
    )
    url = serializers.SerializerMethodField()

    class Meta:
        model = OffsetEdit
        fields = [
            "id",
            "url",
            "cluster",
            "connector",
            "connector_type",
            "strategy",
            "parameters",
            "state",
            "comment",
            "created_by",
            "approved_by",
            "applied_by",
            "created",
            "submitted_at",
            "approved_at",
            "apply_started_at",
            "finished_at",
            "primary_topic",
            "mirror_topic",
            "group_id",
            "warnings",
            "lock_checks",
            "error",
            "applied_via",
            "target_cluster",
            "connector_config",
        ]

    def get_url(self, edit) -> str:
        return f"/api/v1/edits/{edit.pk}/"

    def get_connector_config(self, edit) -> dict | None:
        config = edit.connector_config
        return None if config is None else mask_secrets(config)


class CountsOutput(serializers.Serializer):
    total = serializers.IntegerField(help_text="Partitions the diff touches")
    changed = serializers.IntegerField()
    added = serializers.IntegerField(help_text="New partitions (no offset before)")
    deleted = serializers.IntegerField(help_text="Offsets deleted")


class DiffPageInput(serializers.Serializer):
    page = serializers.IntegerField(
        required=False, default=1, min_value=1, help_text=f"Page of the diff, {SHOWN} rows a page"
    )


class DiffPageOutput(serializers.Serializer):
    number = serializers.IntegerField()
    pages = serializers.IntegerField()
    per_page = serializers.IntegerField()
    next = serializers.CharField(allow_null=True, help_text="The next page's URL")
    previous = serializers.CharField(allow_null=True, help_text="The previous page's URL")


class EditDetailOutput(EditOutput):
    """An edit with one page of its diff (context "page"): an edit may touch 50,000 partitions."""

    counts = serializers.SerializerMethodField()
    changes = serializers.SerializerMethodField(
        help_text=f"One page of the diff, {SHOWN} rows a page (?page=N)"
    )
    changes_page = serializers.SerializerMethodField()
    audit = serializers.SerializerMethodField()

    class Meta(EditOutput.Meta):
        fields = [*EditOutput.Meta.fields, "counts", "changes", "changes_page", "audit"]

    def _diff_page(self, edit):
        if getattr(self, "_shown", None) is None:
            number = self.context.get("page", 1)
            self._shown = Paginator(edit.changes.all(), SHOWN).get_page(number)
        return self._shown

    @extend_schema_field(CountsOutput)
    def get_counts(self, edit) -> dict:
        return _counts(edit.change_counts())

    @extend_schema_field(ChangeOutput(many=True))
    def get_changes(self, edit) -> list:
        return ChangeOutput(self._diff_page(edit).object_list, many=True).data

    @extend_schema_field(DiffPageOutput)
    def get_changes_page(self, edit) -> dict:
        shown = self._diff_page(edit)
        url = f"/api/v1/edits/{edit.pk}/?page="
        return {
            "number": shown.number,
            "pages": shown.paginator.num_pages,
            "per_page": SHOWN,
            "next": f"{url}{shown.next_page_number()}" if shown.has_next() else None,
            "previous": f"{url}{shown.previous_page_number()}" if shown.has_previous() else None,
        }

    def get_audit(self, edit) -> list[dict]:
        return [
            {
                "at": event.at.isoformat(),
                "action": event.action,
                "actor": event.actor_name,
                "comment": event.comment,
                "details": event.details,
            }
            for event in edit.audit_events.order_by("at", "id")
        ]


class PreviewChangeOutput(serializers.Serializer):
    partition = serializers.JSONField(
        help_text="A source partition map, or a sink's topic and partition"
    )
    key = serializers.CharField(required=False, help_text="The exact key bytes as text (sources)")
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    is_new = serializers.BooleanField()
    is_delete = serializers.BooleanField()
    warnings = serializers.ListField(child=serializers.CharField())


class PreviewOutput(serializers.Serializer):
    connector = serializers.CharField()
    connector_type = serializers.CharField(help_text="source or sink")
    warnings = serializers.ListField(child=serializers.CharField())
    counts = CountsOutput()
    changes = PreviewChangeOutput(many=True, help_text=f"The first changes, at most {SHOWN}")
    changes_not_shown = serializers.IntegerField(help_text="Changes left out of `changes`")
    unchanged = serializers.ListField(
        child=serializers.CharField(), help_text="The first entries that change nothing"
    )
    unchanged_not_shown = serializers.IntegerField()


class ImportPreviewOutput(serializers.Serializer):
    previews = PreviewOutput(many=True)
    unchanged = serializers.DictField(
        child=serializers.CharField(), help_text="Connectors whose offsets already match, and why"
    )


class ImportedEditOutput(EditOutput):
    """A staged edit, its diff's counts and first rows: its `url` has the whole diff."""

    counts = CountsOutput()
    changes = ChangeOutput(many=True, help_text=f"The first changes, at most {SHOWN}")
    changes_not_shown = serializers.IntegerField(help_text="Changes left out of `changes`")

    class Meta(EditOutput.Meta):
        fields = [*EditOutput.Meta.fields, "counts", "changes", "changes_not_shown"]


class ImportOutput(serializers.Serializer):
    edits = ImportedEditOutput(many=True)
    unchanged = serializers.DictField(child=serializers.CharField())


def _counts(counts: ChangeCounts) -> dict:
    return {
        "total": counts.total,
        "changed": counts.changed,
        "added": counts.added,
        "deleted": counts.deleted,
    }


def _preview_output(preview: Preview) -> dict:
    counts = preview.counts()
    return {
        "connector": preview.context.name,
        "connector_type": preview.context.type,
        "warnings": preview.warnings,
        "counts": _counts(counts),
        "changes": [_preview_change(change) for change in preview.changes[:SHOWN]],
        "changes_not_shown": max(0, counts.total - SHOWN),
        "unchanged": preview.unchanged[:SHOWN],
        "unchanged_not_shown": max(0, len(preview.unchanged) - SHOWN),
    }


def _preview_change(change: SourceChange | SinkChange) -> dict:
    if isinstance(change, SinkChange):
        return {
            "partition": {"kafka_topic": change.topic, "kafka_partition": change.partition},
            "before": None if change.before is None else {"kafka_offset": change.before},
            "after": None if change.after is None else {"kafka_offset": change.after},
            "is_new": change.is_new,
            "is_delete": change.is_delete,
            "warnings": list(change.warnings),
        }
    return {
        "partition": change.partition,
        "key": change.key_bytes.decode("utf-8", "backslashreplace"),
        "before": change.before,
        "after": change.after,
        "is_new": change.is_new,
        "is_delete": change.is_delete,
        "warnings": list(change.warnings),
    }


def _imported_output(edit: OffsetEdit) -> dict:
    counts = edit.change_counts()
    return {
        **EditOutput(edit).data,
        "counts": _counts(counts),
        "changes": ChangeOutput(edit.changes.all()[:SHOWN], many=True).data,
        "changes_not_shown": max(0, counts.total - SHOWN),
    }


# --- Views ------------------------------------------------------------------------------------


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
        data = EditInput(data=_data(request))
        data.is_valid(raise_exception=True)
        if not can_stage(request.user):
            raise PermissionDenied("Staging offset edits needs the editor role.")
        cluster = get_cluster(request, data.validated_data["cluster"])
        edit = run_service(
            lambda: stage_edit(
                cluster=cluster,
                connector=data.validated_data["connector"],
                user=request.user,
                request=data.request(),
                comment=data.validated_data["comment"],
            )
        )
        return Response(EditDetailOutput(edit).data, status=status.HTTP_201_CREATED)
    query = EditFilter(data=request.query_params)
    query.is_valid(raise_exception=True)
    found = OffsetEdit.objects.select_related("cluster", "created_by", "approved_by", "applied_by")
    if "cluster" in query.validated_data:
        found = found.filter(cluster=get_cluster(request, query.validated_data["cluster"]))
    if "connector" in query.validated_data:
        found = found.filter(connector=query.validated_data["connector"])
    if "state" in query.validated_data:
        found = found.filter(state=query.validated_data["state"])
    return Response(EditOutput(found[:500], many=True).data)


@extend_schema(parameters=[DiffPageInput], responses={200: EditDetailOutput, **errors(400, 404)})
@api_view(["GET"])
def edit_detail(request: Request, pk: int) -> Response:
    """One edit with its diff's counts, one page of its rows (before -> after), and audit trail."""
    query = DiffPageInput(data=request.query_params)
    query.is_valid(raise_exception=True)
    edit = _get_edit(pk)
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
    chosen = choose_route(_get_edit(pk))
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
        edit = _get_edit(pk)
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
    stage_restore,
    "Stage a new edit committing back what a failed partial sink delete lost (an editor); 201 "
    "with the new draft, 400 when nothing is left to commit back",
    status=201,
)


@extend_schema(
    request=ImportInput,
    responses={
        201: ImportOutput,
        200: ImportPreviewOutput,
        **errors(400, 404, 413, 415, 503),
    },
    summary="Stage edits from a KIP-875/KIP-199 document or Strimzi ConfigMap (never applies)",
)
@api_view(["POST"])
@parser_classes([JSONParser])  # the document is JSON; a file upload goes to the page
def import_offsets(request: Request) -> Response:
    data = ImportInput(data=_data(request))
    data.is_valid(raise_exception=True)
    options = data.validated_data
    if not options["dry_run"] and not can_stage(request.user):
        raise PermissionDenied("Importing offsets needs the editor role.")
    cluster = get_cluster(request, options["cluster"])
    result = run_service(
        lambda: import_document(
            cluster=cluster,
            user=request.user,
            data=options["document"],
            connector=options["connector"],
            dry_run=options["dry_run"],
            comment=options["comment"],
        )
    )
    if options["dry_run"]:
        return Response(
            {
                "previews": [_preview_output(p) for p in result.previews],
                "unchanged": result.unchanged,
            }
        )
    return Response(
        {
            "edits": [_imported_output(edit) for edit in result.edits],
            "unchanged": result.unchanged,
        },
        status=status.HTTP_201_CREATED,
    )
