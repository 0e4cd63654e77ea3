"""Compute a source connector's diff: the offset records a staged edit writes."""

from offsets.domain.connectors import Connector
from offsets.edits.errors import EditInputError
from offsets.edits.live import LiveReader, source_view
from offsets.edits.preview import Preview, StageRequest
from offsets.formats import edit_rules
from offsets.formats.edit_rules import EditRuleError, SourceDiff
from offsets.formats.offset_records import SourceOffsetRecord, partition_identity
from offsets.formats.offsets_json import PartitionOffset
from offsets.kafka.errors import TopicNotFound


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
