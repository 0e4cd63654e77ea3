"""What an offset change asks for (StageRequest), the diff it makes before it is saved
(Preview), and a source connector's diff: the offset records a staged edit writes (a sink's
is `sink_diff`)."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from offsets.domain import edits as edit_rules
from offsets.domain.edits import EditRuleError, SinkChange, SourceChange, SourceDiff
from offsets.edits.errors import EditInputError
from offsets.edits.live import LiveReader, source_view
from offsets.formats.connectors import Connector
from offsets.formats.offset_records import SourceOffsetRecord, partition_identity
from offsets.formats.offsets_json import PartitionOffset
from offsets.kafka.errors import TopicNotFound
from offsets.models import ChangeCounts

SOURCE_STRATEGIES = ("set", "add", "delete", "restore")
SINK_STRATEGIES = (*edit_rules.SINK_STRATEGIES, "delete-offsets")
# What a sink's own store (store-offset) is set with: the sink strategies that compute one
# offset per partition from its log and the store's offsets (no other group, no deletion).
STORE_STRATEGIES = ("earliest", "latest", "offset", "shift", "datetime", "duration")

# How many rows of a diff one answer shows (a page of an edit, an import's preview): a
# connector may have tens of thousands.
DIFF_PAGE_ROWS = 100


@dataclass(frozen=True)
class StageRequest:
    """What to change; which fields matter depends on the strategy."""

    strategy: str
    partition: dict | None = None  # source set/add/delete
    offset: dict | None = None  # source set/add
    at: datetime | None = None  # source restore, sink datetime
    duration: timedelta | None = None  # sink duration
    value: int | None = None  # sink offset (target) or shift (signed amount)
    group: str = ""  # sink copy-group: the group to copy from
    partitions: tuple[tuple[str, int], ...] | None = None  # sink scope; None = all
    entries: tuple[PartitionOffset, ...] | None = None  # import

    def parameters(self) -> dict:
        """Return the inputs as JSON, for display and the audit log."""
        params: dict = {}
        if self.partition is not None:
            params["partition"] = self.partition
        if self.offset is not None:
            params["offset"] = self.offset
        if self.at is not None:
            params["at"] = self.at.isoformat()
        if self.duration is not None:
            params["duration_seconds"] = self.duration.total_seconds()
        if self.value is not None:
            params["value"] = self.value
        if self.group:
            params["group"] = self.group
        if self.partitions is not None:
            params["partitions"] = [f"{t}-{p}" for t, p in self.partitions]
        if self.entries is not None:
            params["entries"] = len(self.entries)
        return params

    @classmethod
    def from_parameters(
        cls, strategy: str, params: dict, entries: tuple[PartitionOffset, ...] | None = None
    ) -> "StageRequest":
        """The request whose `parameters()` are `params`: what staging the edit again asks.

        An import's parameters only count its entries, so the caller passes them.
        """
        partitions = params.get("partitions")
        seconds = params.get("duration_seconds")
        return cls(
            strategy=strategy,
            partition=params.get("partition"),
            offset=params.get("offset"),
            at=datetime.fromisoformat(params["at"]) if "at" in params else None,
            duration=None if seconds is None else timedelta(seconds=seconds),
            value=params.get("value"),
            group=params.get("group", ""),
            # "orders-3" is topic "orders", partition 3: topic names may hold "-" themselves.
            partitions=None
            if partitions is None
            else tuple((t, int(p)) for t, p in (item.rsplit("-", 1) for item in partitions)),
            entries=entries,
        )


@dataclass
class Preview:
    """A staged edit before it is saved: the diff and its warnings."""

    context: Connector
    strategy: str
    parameters: dict
    source_changes: list[SourceChange] = field(default_factory=list)
    sink_changes: list[SinkChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[SourceChange | SinkChange]:
        return [*self.source_changes, *self.sink_changes]

    @property
    def change_count(self) -> int:
        return len(self.source_changes) + len(self.sink_changes)

    def counts(self) -> ChangeCounts:
        changes = self.changes
        return ChangeCounts(
            total=len(changes),
            added=sum(change.is_new for change in changes),
            deleted=sum(change.is_delete for change in changes),
        )

    def as_text(self) -> str:
        """Return the diff as lines for a terminal (import --dry-run)."""
        lines = [f"{self.context.name} ({self.context.type}): {self.change_count} change(s)"]
        for warning in self.warnings:
            lines.append(f"  ! {warning}")
        for change in self.source_changes:
            before = (
                change.before_bytes.decode("utf-8", "backslashreplace")
                if change.before_bytes
                else "(none)"
            )
            after = (
                change.after_bytes.decode("utf-8", "backslashreplace")
                if change.after_bytes
                else "(delete)"
            )
            lines.append(
                f"  {_marker(change)} {change.key_bytes.decode('utf-8', 'backslashreplace')}"
            )
            lines.append(f"      {before} -> {after}")
            lines.extend(f"      ! {w}" for w in change.warnings)
        for change in self.sink_changes:
            before = "(none)" if change.before is None else change.before
            after = "(delete)" if change.after is None else change.after
            lines.append(
                f"  {_marker(change)} {change.topic}-{change.partition}: {before} -> {after}"
            )
            lines.extend(f"      ! {w}" for w in change.warnings)
        for note in self.unchanged:
            lines.append(f"  = {note}")
        return "\n".join(lines)


def _marker(change: SourceChange | SinkChange) -> str:
    return "+" if change.is_new else ("-" if change.is_delete else "~")


def preview_source(*, context: Connector, request: StageRequest, reader: LiveReader) -> Preview:
    """Diff the request against the offsets the connector's tasks would read now."""
    strategy = request.strategy
    view = source_view(context=context, reader=reader)
    if strategy == "restore":
        diff = _restore_diff(context, request, reader, view)
    else:
        entries = _source_entries(request, view, context.name)
        try:
            diff = edit_rules.source_diff(
                connector=context.name,
                current=view,
                entries=entries,
                allow_new=strategy in ("add", "import"),
            )
        except EditRuleError as exc:
            raise EditInputError(exc.message, field="partition") from None
    return Preview(
        context=context,
        strategy=strategy,
        parameters=request.parameters(),
        source_changes=diff.changes,
        unchanged=diff.unchanged,
    )


def _restore_diff(
    context: Connector,
    request: StageRequest,
    reader: LiveReader,
    view: dict[bytes, SourceOffsetRecord],
) -> SourceDiff:
    if request.at is None:
        raise EditInputError("A time to restore to is required.", field="at")
    at_ms = int(request.at.timestamp() * 1000)
    then = edit_rules.offsets_as_of(_history(reader, context.worker_topic), at_ms)
    own_then = None
    if context.own_topic:
        try:
            own_then = edit_rules.offsets_as_of(_history(reader, context.primary_topic), at_ms)
        except TopicNotFound:
            own_then = {}
    return edit_rules.restore_diff(
        connector=context.name,
        current=view,
        as_of=edit_rules.runtime_view(context.name, then, own_then),
        at_label=request.at.isoformat(timespec="seconds"),
    )


def _source_entries(
    request: StageRequest, view: dict[bytes, SourceOffsetRecord], connector: str
) -> list[PartitionOffset]:
    strategy = request.strategy
    if strategy == "import":
        return list(request.entries or ())
    if not isinstance(request.partition, dict) or not request.partition:
        raise EditInputError("A partition (a JSON object) is required.", field="partition")
    identity = partition_identity(request.partition)
    exists = any(
        record.connector == connector and record.partition_identity == identity
        for record in view.values()
    )
    if strategy == "add" and exists:
        raise EditInputError(
            "This partition has an offset already; use 'set' to change it.", field="partition"
        )
    if strategy in ("set", "delete") and not exists:
        raise EditInputError(
            f"{identity} has no offset in the topic"
            + ("; use 'add' to create it." if strategy == "set" else "."),
            field="partition",
        )
    if strategy == "delete":
        return [PartitionOffset(request.partition, None)]
    if not isinstance(request.offset, dict) or not request.offset:
        raise EditInputError("An offset (a JSON object) is required.", field="offset")
    return [PartitionOffset(request.partition, request.offset)]


def _history(reader: LiveReader, topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
    return [(r.key, r.value, r.timestamp_ms) for r in reader.records(topic)]
