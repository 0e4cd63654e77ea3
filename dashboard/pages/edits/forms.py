"""Forms of the offset-edit pages: every input, htmx POSTs included, goes through one."""

import re
from datetime import UTC, datetime, timedelta

from django import forms

from offsets.domain.edits import parse_duration
from offsets.edits.imports import IMPORT_MAX_BYTES
from offsets.edits.kinds.offset_changes.request import STORE_STRATEGIES, StageRequest
from offsets.formats import jackson, strimzi
from offsets.formats.offset_records import partition_identity
from offsets.formats.offsets_json import flat_map_problem
from offsets.models import OffsetEdit
from offsets.queries.offsets_export import requested_names

SOURCE_CHOICES = [
    ("set", "Set an existing partition's offset"),
    ("add", "Add a partition"),
    ("delete", "Delete a partition (tombstone)"),
    ("restore", "Restore every partition as of a time"),
]
SINK_CHOICES = [
    ("earliest", "To earliest"),
    ("latest", "To latest"),
    ("offset", "To an offset"),
    ("shift", "Shift by N"),
    ("datetime", "To a date-time"),
    ("duration", "Back by a duration"),
    ("copy-group", "Copy from another consumer group"),
    ("delete-offsets", "Delete committed offsets"),
]
# A sink whose offsets live in its own store: the sink strategies that set one offset each.
STORE_CHOICES = [(value, label) for value, label in SINK_CHOICES if value in STORE_STRATEGIES]


def _flat_object(text: str, what: str) -> dict:
    try:
        # jackson.loads keeps the field order, which decides a new key's bytes.
        value = jackson.loads(text)
    except jackson.JsonParseError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not value:
        raise forms.ValidationError(f"The {what} must be a non-empty JSON object.")
    problem = flat_map_problem(value)
    if problem is not None:
        raise forms.ValidationError(f"{problem[0]!r} {problem[1]}.")
    return value


class _UtcDateTimeField(forms.DateTimeField):
    """A date-time read as UTC (the browser's datetime-local input carries no zone)."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"})

    def to_python(self, value):
        result = super().to_python(value)
        if isinstance(result, datetime) and result.tzinfo is None:
            result = result.replace(tzinfo=UTC)
        return result


# How many unknown partitions an error names before it only counts the rest.
NAMED_IN_ERRORS = 5


def _named(labels: list[str]) -> str:
    named = ", ".join(labels[:NAMED_IN_ERRORS])
    rest = len(labels) - NAMED_IN_ERRORS
    return f"{named} and {rest:,} more" if rest > 0 else named


class SourceStageForm(forms.Form):
    strategy = forms.ChoiceField(choices=SOURCE_CHOICES)
    # Partitions are typed (or pasted from the table), never listed as options: a connector
    # may have tens of thousands. The view passes the live ones to check against.
    existing = forms.CharField(
        required=False,
        label="Partition (JSON, as in the table)",
        help_text="Start typing for the partitions of this page, or click “edit” on a row.",
        widget=forms.TextInput(
            attrs={"list": "partitions-on-page", "placeholder": '{"filename": "/var/log/x.log"}'}
        ),
    )
    partition = forms.CharField(
        required=False,
        label="New partition (JSON)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"filename": "/var/log/x.log"}'}),
    )
    offset = forms.CharField(
        required=False,
        label="Offset (JSON)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"position": 42}'}),
    )
    at = _UtcDateTimeField(required=False, label="As of (UTC)")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, partitions: set[str] = frozenset(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._partitions = partitions

    def clean(self):
        data = super().clean()
        strategy = data.get("strategy")
        if strategy in ("set", "delete"):
            if not data.get("existing"):
                self.add_error("existing", "Type the partition as a JSON object.")
            else:
                try:
                    data["partition_map"] = self._existing(data["existing"])
                except forms.ValidationError as exc:
                    self.add_error("existing", exc)
        if strategy == "add":
            if not data.get("partition"):
                self.add_error("partition", "Type the new partition as a JSON object.")
            else:
                try:
                    data["partition_map"] = _flat_object(data["partition"], "partition")
                except forms.ValidationError as exc:
                    self.add_error("partition", exc)
        if strategy in ("set", "add"):
            if not data.get("offset"):
                self.add_error("offset", "Type the offset as a JSON object.")
            else:
                try:
                    data["offset_map"] = _flat_object(data["offset"], "offset")
                except forms.ValidationError as exc:
                    self.add_error("offset", exc)
        if strategy == "restore" and not data.get("at"):
            self.add_error("at", "Choose the time to restore to.")
        return data

    def _existing(self, text: str) -> dict:
        partition = _flat_object(text, "partition")
        # Field order and spacing do not matter: the key bytes are read from the topic.
        identity = partition_identity(partition)
        if identity not in self._partitions:
            raise forms.ValidationError(
                f"{identity} has no offset in the topic: type a partition from the table "
                "(or add it as a new partition)."
            )
        return partition

    def stage_request(self) -> StageRequest:
        data = self.cleaned_data
        return StageRequest(
            strategy=data["strategy"],
            partition=data.get("partition_map"),
            offset=data.get("offset_map"),
            at=data.get("at"),
        )


class SinkStageForm(forms.Form):
    strategy = forms.ChoiceField(choices=SINK_CHOICES)
    partitions = forms.CharField(
        required=False,
        label="Partitions (none: all)",
        help_text="topic-partition as in the table (orders-0), separated by spaces, commas "
        "or lines",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "orders-0 orders-1"}),
    )
    value = forms.IntegerField(required=False, label="Offset, or N to shift by (signed)")
    at = _UtcDateTimeField(required=False, label="Date-time (UTC)")
    duration = forms.CharField(
        required=False, label="Duration back from now", help_text="PT1H30M, P2D or 90m"
    )
    group = forms.CharField(required=False, max_length=255, label="Group to copy from")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, partitions: set[tuple[str, int]] = frozenset(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._partitions = partitions

    def clean_partitions(self) -> tuple[tuple[str, int], ...] | None:
        """The typed topic-partitions (topic-N or topic/N) in order, or None for all."""
        chosen: dict[tuple[str, int], None] = {}
        malformed, unknown = [], []
        for token in re.split(r"[\s,]+", self.cleaned_data["partitions"].strip()):
            if not token:
                continue
            # Topic names hold no "/" and a partition is digits, so both forms split cleanly.
            topic, separator, number = token.rpartition("/" if "/" in token else "-")
            if not separator or not topic or not number.isdigit():
                malformed.append(repr(token))
            elif (topic, int(number)) not in self._partitions:
                unknown.append(f"{topic}-{int(number)}")
            else:
                chosen[(topic, int(number))] = None
        if malformed:
            raise forms.ValidationError(
                f"{_named(malformed)}: not a topic-partition such as orders-0."
            )
        if unknown:
            verb = "is not a partition" if len(unknown) == 1 else "are not partitions"
            raise forms.ValidationError(f"{_named(unknown)} {verb} of the sink's topics.")
        return tuple(chosen) or None

    def clean_duration(self) -> timedelta | None:
        text = self.cleaned_data.get("duration")
        if not text:
            return None
        try:
            return parse_duration(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        strategy = data.get("strategy")
        if strategy in ("offset", "shift") and data.get("value") is None:
            self.add_error("value", "A number is required.")
        if strategy == "offset" and (data.get("value") or 0) < 0:
            self.add_error("value", "An offset is 0 or more.")
        if strategy == "datetime" and not data.get("at"):
            self.add_error("at", "Choose the date-time.")
        if strategy == "duration" and not data.get("duration") and "duration" not in self.errors:
            self.add_error("duration", "Type a duration.")
        if strategy == "copy-group" and not data.get("group"):
            self.add_error("group", "Name the group to copy from.")
        return data

    def stage_request(self) -> StageRequest:
        data = self.cleaned_data
        return StageRequest(
            strategy=data["strategy"],
            value=data.get("value"),
            at=data.get("at"),
            duration=data.get("duration"),
            group=data.get("group") or "",
            partitions=data.get("partitions"),
        )


class StoreStageForm(SinkStageForm):
    """The sink form for a sink whose offsets live in its own store (a store-offset edit)."""

    strategy = forms.ChoiceField(choices=STORE_CHOICES)


class PageForm(forms.Form):
    """Which page of a long list to show; one past the last shows the last."""

    page = forms.IntegerField(required=False, min_value=1)

    def clean_page(self) -> int:
        return self.cleaned_data["page"] or 1


class OffsetsPageForm(PageForm):
    """Which page of a connector's live offsets to show, and a filter on the partitions."""

    q = forms.CharField(required=False, max_length=500, label="Filter partitions")


class PrefillForm(forms.Form):
    """A row's "edit" link: the partition it names, put in the stage form (checked at POST)."""

    existing = forms.CharField(required=False, max_length=10_000)
    partitions = forms.CharField(required=False, max_length=10_000)


class CommentForm(forms.Form):
    comment = forms.CharField(required=False, max_length=5000)


class EditFilterForm(forms.Form):
    state = forms.ChoiceField(
        choices=[("", "any state"), *OffsetEdit.State.choices], required=False
    )
    connector = forms.CharField(required=False, max_length=249)


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="KIP-199 {connector: [...]}, KIP-875 {offsets: [...]}, or a Strimzi "
        "offsets ConfigMap (YAML or JSON)"
    )
    connector = forms.CharField(
        required=False,
        max_length=249,
        help_text="For a KIP-875 document, or a ConfigMap that does not name its connector",
    )
    dry_run = forms.BooleanField(required=False, initial=True, label="Dry run: show the diff only")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > IMPORT_MAX_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size / 2**20:.1f} MB: an import takes at most "
                f"{IMPORT_MAX_BYTES // 2**20} MB. Split it into smaller documents."
            )
        return upload.read()


class ConnectorNamesField(forms.Field):
    """Names given one per parameter (`?connector=a&connector=b`), each kept exactly."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        return [str(name) for name in value or []]


class ExportForm(forms.Form):
    connectors = forms.CharField(required=False, help_text="a,b (none: all connectors)")
    connector = ConnectorNamesField(required=False)
    format = forms.ChoiceField(
        choices=[
            ("", "auto"),
            ("kip875", "KIP-875"),
            ("kip199", "KIP-199"),
            ("strimzi", "Strimzi ConfigMap"),
        ],
        required=False,
    )
    from_beginning = forms.BooleanField(required=False)
    configmap_name = forms.CharField(
        required=False, max_length=253, help_text="Strimzi: default <connector>-offsets"
    )
    namespace = forms.CharField(required=False, max_length=63, help_text="Strimzi: optional")

    def clean_configmap_name(self) -> str:
        name = self.cleaned_data["configmap_name"]
        if name and (problem := strimzi.name_problem(name)):
            raise forms.ValidationError(f"The ConfigMap name {problem}.")
        return name

    def clean_namespace(self) -> str:
        namespace = self.cleaned_data["namespace"]
        if namespace and (problem := strimzi.namespace_problem(namespace)):
            raise forms.ValidationError(f"The namespace {problem}.")
        return namespace

    def clean(self):
        data = super().clean()
        names = requested_names(data.get("connectors") or "", data.get("connector") or [])
        data["names"] = names
        data["format"] = data.get("format") or ("kip875" if len(names) == 1 else "kip199")
        if data["format"] in ("kip875", "strimzi") and len(names) != 1:
            self.add_error("connectors", "KIP-875 and Strimzi export exactly one connector.")
        if data["format"] == "strimzi" and data.get("from_beginning"):
            self.add_error("from_beginning", "A Strimzi ConfigMap holds the latest offsets only.")
        return data
