"""The serializers of the offset-edit API: what a request to stage or act on an edit may
hold, and what an edit looks like in an answer (with one page of its diff)."""

import base64

from django.core.paginator import Paginator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from offsets.domain.edits import parse_duration
from offsets.domain.masking import mask_secrets
from offsets.edits.kinds.offset_changes.request import (
    DIFF_PAGE_ROWS,
    STORE_STRATEGIES,
    StageRequest,
)
from offsets.formats.offsets_json import flat_map_problem
from offsets.models import ChangeCounts, OffsetEdit

# An answer about an edit or a document holds its counts and the first rows of each diff: a
# document may name tens of thousands of partitions.
SHOWN = DIFF_PAGE_ROWS


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
    value = serializers.IntegerField(
        required=False, help_text="offset, shift (signed); store-offset as offset or shift"
    )
    shift = serializers.IntegerField(
        required=False, help_text="shift, store-offset as shift: the signed amount (or value)"
    )
    group = serializers.CharField(required=False, max_length=255, help_text="copy-group")
    partitions = TopicPartitionInput(many=True, required=False, help_text="sink scope (all)")
    comment = serializers.CharField(required=False, allow_blank=True, default="")

    def validate_strategy(self, value: str) -> str:
        if value == OffsetEdit.Strategy.IMPORT:
            raise serializers.ValidationError("Imports go to /api/v1/edits/import/.")
        return value

    def validate(self, attrs: dict) -> dict:
        """A sink's own store is set with a sink strategy (`as`, "offset" when only `value` is
        given, as before); the other strategies' inputs are checked when staging."""
        store = attrs["strategy"] == OffsetEdit.Strategy.STORE_OFFSET
        sink_strategy = attrs.get("as", "offset") if store else attrs["strategy"]
        if "as" in attrs and not store:
            raise serializers.ValidationError({"as": "Only a store-offset edit takes it."})
        if "shift" in attrs and sink_strategy != "shift":
            raise serializers.ValidationError({"shift": "Only a shift takes it."})
        if "shift" in attrs and attrs.get("value", attrs["shift"]) != attrs["shift"]:
            raise serializers.ValidationError({"shift": "Give the amount once (shift or value)."})
        if store:
            attrs["as"] = sink_strategy
            _require_store_inputs(attrs)
        return attrs

    def validate_duration(self, value: str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def request(self) -> StageRequest:
        """What to stage; for a store-offset edit, the sink strategy it is set with (`as`)."""
        data = self.validated_data
        partitions = data.get("partitions")
        store = data["strategy"] == OffsetEdit.Strategy.STORE_OFFSET
        return StageRequest(
            strategy=data["as"] if store else data["strategy"],
            partition=data.get("partition"),
            offset=data.get("offset"),
            at=data.get("at"),
            duration=data.get("duration"),
            value=data.get("value", data.get("shift")),
            group=data.get("group", ""),
            partitions=(
                None
                if partitions is None
                else tuple((p["topic"], p["partition"]) for p in partitions)
            ),
        )


# "as" is a Python keyword, so it is declared by name: the sink strategy a store-offset edit
# is set with.
EditInput._declared_fields["as"] = serializers.ChoiceField(
    choices=STORE_STRATEGIES,
    required=False,
    help_text="store-offset: the sink strategy (offset when absent)",
)
# What each store strategy needs, and the field a missing one is reported on.
STORE_INPUTS = {"offset": "value", "shift": "value", "datetime": "at", "duration": "duration"}


def _require_store_inputs(attrs: dict) -> None:
    needed = STORE_INPUTS.get(attrs["as"])
    if needed == "value" and attrs.get("value", attrs.get("shift")) is None:
        field = "shift" if attrs["as"] == "shift" else "value"
        raise serializers.ValidationError({field: "A number is required."})
    if needed in ("at", "duration") and attrs.get(needed) is None:
        raise serializers.ValidationError({needed: "This field is required."})
    if attrs["as"] == "offset" and attrs["value"] < 0:
        raise serializers.ValidationError({"value": "An offset is 0 or more."})


class CommentInput(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class EditFilter(serializers.Serializer):
    cluster = serializers.CharField(required=False)
    connector = serializers.CharField(required=False)
    state = serializers.ChoiceField(choices=OffsetEdit.State.choices, required=False)


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
            "restaged_from",
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
        return counts_output(edit.change_counts())

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
                "actor_subject": event.actor_subject,
                "comment": event.comment,
                "details": event.details,
            }
            for event in edit.audit_events.order_by("at", "id")
        ]


def counts_output(counts: ChangeCounts) -> dict:
    return {
        "total": counts.total,
        "changed": counts.changed,
        "added": counts.added,
        "deleted": counts.deleted,
    }
