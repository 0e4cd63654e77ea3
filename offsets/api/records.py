"""A stuck sink's next records: the same answer as the connector page's, with the same gate
(the viewer role to see the positions, the record viewer role to see the contents)."""

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.edit_serializers import EditDetailOutput
from offsets.api.errors import errors, run_service
from offsets.domain.rights import Action
from offsets.edits.roles import can_stage
from offsets.edits.skip import stage_skip
from offsets.queries import next_records as records
from offsets.queries import snapshots
from offsets.queries.clusters import cluster_for_user
from offsets.rights import gate
from offsets.rights.gate import ROLE_NEEDED


class RecordBytesOutput(serializers.Serializer):
    kind = serializers.ChoiceField(
        ["null", "empty", "text", "json", "hex"],
        help_text="text/json: UTF-8 text (JSON re-indented), masked; hex: bytes not text.",
    )
    text = serializers.CharField(help_text="What is shown: secrets masked, at most the cap.")
    size = serializers.IntegerField(help_text="Bytes in the record.")
    cut = serializers.BooleanField(help_text="The text stops before the end (capped).")
    schema_id = serializers.IntegerField(
        allow_null=True, help_text="Confluent wire format (magic byte 0): its schema id."
    )


class HeaderOutput(serializers.Serializer):
    name = serializers.CharField()
    value = RecordBytesOutput()


class RecordOutput(serializers.Serializer):
    offset = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField(allow_null=True)
    timestamp_type = serializers.CharField(help_text="create time or log append time")
    timestamp_text = serializers.CharField(help_text="The timestamp in UTC (ISO 8601).")
    key = RecordBytesOutput()
    value = RecordBytesOutput()
    headers = HeaderOutput(many=True)


class NextRecordOutput(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    committed = serializers.IntegerField(allow_null=True)
    log_end = serializers.IntegerField()
    lag_records = serializers.IntegerField()
    status = serializers.CharField()
    position = serializers.IntegerField(
        allow_null=True, help_text="The offset the sink reads next; null: nothing to read."
    )
    note = serializers.CharField(help_text="Why the position or record differs, if it does.")
    error = serializers.CharField(help_text="Why the record could not be read, if it could not.")
    record = serializers.SerializerMethodField()

    @extend_schema_field(RecordOutput(allow_null=True))
    def get_record(self, row: records.NextRecord) -> dict | None:
        return None if row.offset is None else RecordOutput(row).data


class NextRecordsOutput(serializers.Serializer):
    shown = serializers.BooleanField(
        help_text="The sink is stuck (a FAILED task, or a partition STALL or STOP)."
    )
    may_read = serializers.BooleanField(
        help_text="The user has the record viewer role here: records' contents are included."
    )
    role_needed = serializers.SerializerMethodField()
    contact = serializers.CharField(help_text="Whom to ask for the record viewer role.")
    more = serializers.IntegerField(help_text="Lagging partitions beyond those listed.")
    partitions = NextRecordOutput(many=True, source="rows")

    @extend_schema_field(OpenApiTypes.STR)
    def get_role_needed(self, result: records.NextRecords) -> str:
        return "" if result.may_read else ROLE_NEEDED[Action.READ_RECORDS]


@extend_schema(
    responses={200: NextRecordsOutput, **errors(404, 503)},
    summary="A stuck sink's next record per lagging partition (contents: record viewer role)",
)
@api_view(["GET"])
def connector_next_records(request: Request, cluster_name: str, connector_name: str) -> Response:
    """For a sink whose task is FAILED or whose lag status is STALL or STOP: the record at the
    position it reads next in each lagging partition, read from the cluster now."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    snapshot = snapshots.connector_of(cluster, connector_name)
    if snapshot is None:
        raise Http404(gate.unknown_connector(cluster, connector_name))
    result = run_service(
        lambda: records.next_records(user=request.user, cluster=cluster, snapshot=snapshot)
    )
    return Response(NextRecordsOutput(result).data)


class SkipInput(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    partition = serializers.IntegerField(min_value=0)
    offset = serializers.IntegerField(min_value=0, help_text="The record's offset.")
    comment = serializers.CharField(required=False, default="", allow_blank=True, max_length=5000)


@extend_schema(
    request=SkipInput,
    responses={201: EditDetailOutput, **errors(400, 404, 409, 415, 503)},
    summary="Skip a record: stage an edit moving its partition to the offset after it",
)
@api_view(["POST"])
@parser_classes([JSONParser])
def connector_skip_record(request: Request, cluster_name: str, connector_name: str) -> Response:
    """Stage (as a draft, an editor) moving one of the sink's partitions to `offset` + 1; its
    comment and audit entry name the record and link to it."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    if not can_stage(request.user, cluster, connector_name):
        raise PermissionDenied(ROLE_NEEDED[Action.STAGE])
    data = SkipInput(data=request.data)
    data.is_valid(raise_exception=True)
    edit = run_service(
        lambda: stage_skip(
            cluster=cluster,
            connector=connector_name,
            user=request.user,
            absolute=request.build_absolute_uri,
            **data.validated_data,
        )
    )
    return Response(EditDetailOutput(edit).data, status=status.HTTP_201_CREATED)
