"""The diff an offset change makes, computed against the offsets read now: a source's offset
records (here), a sink's committed offsets (`sink_diff`), the warnings, and the draft it saves
as. Nothing is saved here; staging saves the draft (`drafts.save`)."""

from collections.abc import Sequence

from offsets import sink_stores
from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector
from offsets.domain.edits import EditRuleError, SourceDiff
from offsets.edits import drafts
from offsets.edits.errors import EditInputError, NothingToChange
from offsets.edits.kinds.offset_changes.request import (
    SINK_STRATEGIES,
    SOURCE_STRATEGIES,
    Preview,
    StageRequest,
)
from offsets.edits.kinds.offset_changes.sink_diff import preview_sink
from offsets.edits.live import LiveReader, read_connector, source_view
from offsets.formats.offset_records import SourceOffsetRecord, partition_identity
from offsets.formats.offsets_json import PartitionOffset
from offsets.kafka.errors import TopicNotFound
from offsets.models import Cluster, OffsetEdit

# How many per-partition notes a message quotes: a connector may have tens of thousands.
NOTES_QUOTED = 10


def preview_edit(
    *,
    cluster: Cluster,
    connector: str,
    request: StageRequest,
    reader: LiveReader | None = None,
    context: Connector | None = None,
) -> Preview:
    """Compute an edit's diff against the live topics without saving anything."""
    reader = reader or LiveReader(cluster)
    context = context or read_connector(cluster=cluster, connector=connector, reader=reader)
    strategies = SOURCE_STRATEGIES if context.is_source else SINK_STRATEGIES
    if request.strategy not in (*strategies, "import"):
        raise EditInputError(
            f"{request.strategy!r} is not a strategy for a {context.type} connector; use one "
            f"of {', '.join(strategies)}.",
            field="strategy",
        )
    if context.is_source:
        preview = preview_source(context=context, request=request, reader=reader)
    else:
        preview = preview_sink(context=context, request=request, reader=reader)
    preview.warnings = [
        *_context_warnings(context),
        *_store_warnings(cluster, context),
        *preview.warnings,
    ]
    if not preview.change_count:
        reason = _quote_notes(preview.unchanged) or "every partition already has that offset"
        raise NothingToChange(f"Nothing to change: {reason}.", field=_main_field(request))
    return preview


def draft(preview: Preview, cluster: Cluster) -> drafts.Draft:
    """The draft a preview saves as: one row per touched partition."""
    context = preview.context
    rows = [
        drafts.source_row(
            partition=change.partition,
            key=change.key_bytes,
            before=change.before,
            before_bytes=change.before_bytes,
            after=change.after,
            after_bytes=change.after_bytes,
            is_new=change.is_new,
            is_delete=change.is_delete,
            warnings=change.warnings,
        )
        for change in preview.source_changes
    ]
    rows += drafts.sink_change_rows(preview.sink_changes)
    return drafts.Draft(
        cluster=cluster,
        connector=context.name,
        connector_type=context.type,
        strategy=preview.strategy,
        parameters=preview.parameters,
        warnings=preview.warnings,
        rows=rows,
        primary_topic=context.primary_topic,
        mirror_topic=context.worker_topic if context.own_topic else "",
        group_id=context.group_id,
    )


def staged_request(edit: OffsetEdit, staged_as: str) -> StageRequest:
    """The request `edit` was staged with as `staged_as`, from its stored parameters (an
    import's entries from its rows' targets)."""
    entries = None
    if staged_as == OffsetEdit.Strategy.IMPORT:
        entries = tuple(
            PartitionOffset(partition=change.partition, offset=change.after)
            for change in edit.changes.all()
        )
    return StageRequest.from_parameters(staged_as, edit.parameters, entries)


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


def _quote_notes(notes: Sequence[str]) -> str:
    """Join the first notes, counting the rest: one per partition can be tens of thousands."""
    quoted = "; ".join(notes[:NOTES_QUOTED])
    rest = len(notes) - NOTES_QUOTED
    return f"{quoted}; and {rest:,} more" if rest > 0 else quoted


def _main_field(request: StageRequest) -> str:
    return {
        "set": "offset",
        "add": "partition",
        "delete": "partition",
        "restore": "at",
        "import": "document",
    }.get(request.strategy, "partitions")


def _store_warnings(cluster: Cluster, context: Connector) -> list[str]:
    """A sink whose offsets an admin placed outside Connect's group does not resume from it."""
    row = None if context.is_source else sink_stores.store_of(cluster, context.name)
    if row is None or row.kind == row.Kind.CONNECT_GROUP:
        return []
    return [
        f"This sink's offsets are read from {sink_stores.setting_of(row).where()}, not from "
        f"its group {context.group_id}: changing the group does not move it. Set them in its "
        "store instead (store-offset)."
    ]


# How the warning of a connector not stopped begins: its edit's page drops it once the
# connector is STOPPED.
TARGET_STATE_WARNING = "The connector's target state is "


def _context_warnings(context: Connector) -> list[str]:
    warnings = []
    if context.deleted:
        warnings.append(
            "The connector is deleted: its offsets remain and are used again if a connector "
            "with this name is created."
        )
    elif context.target_state != "STOPPED":
        warnings.append(
            f"{TARGET_STATE_WARNING}{context.target_state}: stop it before applying "
            "(the lock check refuses otherwise; PAUSED is not enough)."
        )
    if context.own_topic:
        warnings.append(
            f"The connector uses its own offsets topic {context.primary_topic} (KIP-618): the "
            f"edit is written there and mirrored to the worker topic {context.worker_topic} in "
            "the same transaction."
        )
    if context.mirrormaker2:
        warnings.append(
            "MirrorMaker 2: these offsets only say where replication resumes on the source "
            "cluster; offset syncs and checkpoints already written are not changed."
        )
    return warnings
