"""Compute a sink connector's diff: the committed offsets a staged edit changes in its group."""

from collections.abc import Iterable

from django.conf import settings
from django.utils import timezone

from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector
from offsets.domain.edits import PartitionLog, SinkChange
from offsets.edits.errors import EditInputError
from offsets.edits.kinds.offset_changes.request import Preview, StageRequest
from offsets.edits.live import LiveReader, sink_partitions
from offsets.formats.offsets_json import PartitionOffset
from offsets.kafka import admin, reading

TopicPartition = tuple[str, int]


def preview_sink(
    *,
    context: Connector,
    request: StageRequest,
    reader: LiveReader,
    committed: dict[TopicPartition, int] | None = None,
) -> Preview:
    """Diff the request against the group's committed offsets and the partitions' logs now.

    `committed` replaces the group's offsets for a sink that keeps them in its own store
    (store-offset): the same strategies, clamping and warnings, against what the store holds.
    """
    strategy = request.strategy
    in_group = committed is None
    committed = reader.committed(context.group_id) if committed is None else committed
    preview = Preview(context=context, strategy=strategy, parameters=request.parameters())
    if in_group and not committed:
        preview.warnings.append(
            f"Group {context.group_id} has no committed offsets: the connector may manage its "
            "offsets outside Kafka (KIP-875 'manages offsets externally'), in which case "
            "changing the group has no effect on where it resumes."
        )
    targets = _import_targets(request.entries or ()) if strategy == "import" else {}
    scope = _scope(context, request, reader, committed, targets)
    logs = {
        tp: PartitionLog(tp[0], tp[1], mark.low, mark.high)
        for tp, mark in reading.confirmed_watermarks(
            reader.kafka, scope, timeout=settings.KAFKA_READ_TIMEOUT
        ).items()
    }
    time_offsets: dict[TopicPartition, int | None] = {}
    if strategy in ("datetime", "duration"):
        time_offsets = _checked_offsets_for_times(reader.kafka, request, logs)
    copied = _copied_offsets(reader, request) if strategy == "copy-group" else {}
    if strategy in ("offset", "shift") and request.value is None:
        raise EditInputError("A number is required.", field="value")
    if strategy == "offset" and request.value is not None and request.value < 0:
        raise EditInputError("An offset is 0 or more.", field="value")
    for tp in scope:
        _add_partition(
            preview,
            request,
            logs[tp],
            before=committed.get(tp),
            target=targets.get(tp),
            copied=copied.get(tp),
            time_offset=time_offsets.get(tp),
        )
    preview.warnings += _sink_deletion_warnings(committed, preview.sink_changes)
    return preview


def _scope(
    context: Connector,
    request: StageRequest,
    reader: LiveReader,
    committed: dict[TopicPartition, int],
    targets: dict[TopicPartition, int | None],
) -> list[TopicPartition]:
    """Return the partitions the edit touches, each checked to exist on the cluster."""
    if request.strategy == "import":
        scope = sorted(targets)
    elif request.partitions is not None:
        scope = sorted(set(request.partitions))
        if not scope:
            raise EditInputError("Choose at least one partition.", field="partitions")
    else:
        scope = sink_partitions(context=context, reader=reader, committed=committed)
        if not scope:
            raise EditInputError(
                "The sink's topics have no partitions on this cluster.", field="partitions"
            )
    counts = reader.partition_counts()
    for topic, partition in scope:
        if topic not in counts or partition >= counts[topic]:
            raise EditInputError(
                f"{topic}-{partition} does not exist on this cluster.", field="partitions"
            )
    return scope


def _copied_offsets(reader: LiveReader, request: StageRequest) -> dict[TopicPartition, int]:
    if not request.group:
        raise EditInputError("The group to copy from is required.", field="group")
    copied = reader.committed(request.group)
    if not copied:
        raise EditInputError(f"Group {request.group} has no committed offsets.", field="group")
    return copied


def _add_partition(
    preview: Preview,
    request: StageRequest,
    log: PartitionLog,
    *,
    before: int | None,
    target: int | None,
    copied: int | None,
    time_offset: int | None,
) -> None:
    """Add the partition's change to the preview, or the note saying why it has none."""
    strategy = request.strategy
    if strategy == "delete-offsets" or (strategy == "import" and target is None):
        if before is None:
            preview.unchanged.append(f"{log.label}: no committed offset to delete")
        else:
            preview.sink_changes.append(SinkChange(log.topic, log.partition, before, None))
        return
    moved = edit_rules.sink_target(
        "offset" if strategy == "import" else strategy,
        log=log,
        committed=before,
        value=target if strategy == "import" else request.value,
        copied=copied,
        time_offset=time_offset,
    )
    if moved.skip:
        preview.unchanged.append(moved.skip)
    elif moved.offset == before:
        preview.unchanged.append(f"{log.label}: already {before}")
    else:
        preview.sink_changes.append(
            SinkChange(log.topic, log.partition, before, moved.offset, warnings=moved.warnings)
        )


def _sink_deletion_warnings(
    committed: dict[TopicPartition, int], changes: list[SinkChange]
) -> list[str]:
    """Say so when the apply will take two steps (see ``writes.write_sink``)."""
    deleting = {(c.topic, c.partition) for c in changes if c.is_delete}
    if not deleting:
        return []
    recommitted = (set(committed) - deleting) | {
        (c.topic, c.partition) for c in changes if not c.is_delete
    }
    if not recommitted:
        return []
    return [
        "Deleting the committed offsets of only some partitions: the Kafka client used here "
        "cannot delete single partitions' offsets, so the apply deletes the whole group and "
        f"commits {len(recommitted)} partition(s) again. That is two steps, not one atomic "
        "write: if the second fails, the edit is marked failed and its error and the audit "
        "log hold every offset to restore."
    ]


def _import_targets(entries: Iterable[PartitionOffset]) -> dict[TopicPartition, int | None]:
    targets: dict[TopicPartition, int | None] = {}
    for entry in entries:
        key = (str(entry.partition["kafka_topic"]), int(entry.partition["kafka_partition"]))
        targets[key] = None if entry.offset is None else int(entry.offset["kafka_offset"])
    return targets


def _checked_offsets_for_times(
    kafka: dict, request: StageRequest, logs: dict[TopicPartition, PartitionLog]
) -> dict[TopicPartition, int | None]:
    """Ask the broker which offset each partition had at the time, and check each answer."""
    field = "at" if request.strategy == "datetime" else "duration"
    at_ms = _time_asked(request, field)
    timeout = settings.KAFKA_READ_TIMEOUT
    answers = admin.offsets_for_times(kafka, dict.fromkeys(logs, at_ms), timeout=timeout)
    for tp, answer in answers.items():
        log = logs[tp]
        position = log.log_end if answer is None else answer
        around = reading.RecordsAround(None, None)
        if log.log_start < log.log_end and log.log_start <= position <= log.log_end:
            around = reading.records_around(
                kafka, tp[0], tp[1], position, log_start=log.log_start, timeout=timeout
            )
        check = edit_rules.check_offset_for_time(
            at_ms=at_ms,
            answer=answer,
            log=log,
            timestamp_at=around.at.timestamp_ms if around.at else None,
            timestamp_before=around.before.timestamp_ms if around.before else None,
        )
        if not check.passed:
            raise EditInputError(
                f"{check.message} The broker's offsets-for-times answer cannot be trusted, so "
                "nothing was staged; use 'to an offset' instead.",
                field=field,
            )
    return answers


def _time_asked(request: StageRequest, field: str) -> int:
    """Return the time a datetime or duration request names, in ms since 1970."""
    if request.strategy == "datetime":
        if request.at is None:
            raise EditInputError("A date-time is required.", field="at")
        at = request.at
    else:
        if request.duration is None:
            raise EditInputError("A duration is required.", field="duration")
        at = timezone.now() - request.duration
    at_ms = int(at.timestamp() * 1000)
    if at_ms < 0:
        # Record timestamps are milliseconds since 1970; the client refuses a negative one
        # (-1 and -2 even mean "latest" and "earliest" in ListOffsets).
        raise EditInputError(
            f"{at.isoformat(timespec='seconds')} is before 1970-01-01 UTC, where Kafka's record "
            "timestamps begin; use 'to earliest' instead.",
            field=field,
        )
    return at_ms
