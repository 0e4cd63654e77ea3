"""Offsets imported over REST: a KIP-875/KIP-199 document or a Strimzi ConfigMap staged as
draft edits (never applied), or with `dry_run` only previewed.

Thin: an input serializer validates, `offsets.edits.workflow.import_document` acts, the
answer holds each diff's counts and first rows.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster
from offsets.api.edit_serializers import (
    SHOWN,
    ChangeOutput,
    CountsOutput,
    EditOutput,
    counts_output,
)
from offsets.api.errors import errors, run_service
from offsets.api.parsers import JSONParser, request_data
from offsets.domain.edits import SinkChange, SourceChange
from offsets.edits.kinds.offset_changes.request import Preview
from offsets.edits.roles import can_stage
from offsets.edits.workflow import import_document
from offsets.models import OffsetEdit


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


def _preview_output(preview: Preview) -> dict:
    counts = preview.counts()
    return {
        "connector": preview.context.name,
        "connector_type": preview.context.type,
        "warnings": preview.warnings,
        "counts": counts_output(counts),
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
        "counts": counts_output(counts),
        "changes": ChangeOutput(edit.changes.all()[:SHOWN], many=True).data,
        "changes_not_shown": max(0, counts.total - SHOWN),
    }


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
    data = ImportInput(data=request_data(request))
    data.is_valid(raise_exception=True)
    options = data.validated_data
    cluster = get_cluster(request, options["cluster"])
    if not options["dry_run"] and not can_stage(request.user, cluster):
        raise PermissionDenied("Importing offsets needs the editor role.")
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
