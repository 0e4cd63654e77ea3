"""What an offset change asks for: its typed inputs (OffsetChange, CommitBack), the strategy
and values (StageRequest), and the diff it makes before it is saved (Preview)."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector
from offsets.domain.edits import SinkChange, SourceChange
from offsets.formats.offsets_json import PartitionOffset
from offsets.models import ChangeCounts, OffsetEdit

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


@dataclass(frozen=True)
class OffsetChange:
    """Change a connector's offsets as `request` says (its strategy and values)."""

    request: StageRequest


@dataclass(frozen=True)
class CommitBack:
    """Commit back what `lost_by`, a failed partial sink delete, lost: the offsets it stored
    (`sink_keep`) before deleting the group."""

    lost_by: OffsetEdit


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
