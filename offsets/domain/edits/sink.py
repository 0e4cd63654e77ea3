"""Sink edits: where each strategy puts a topic-partition's committed offset."""

from dataclasses import dataclass

from offsets.domain.edits.checks import CheckResult
from offsets.domain.edits.inputs import EditRuleError

SINK_STRATEGIES = ("earliest", "latest", "offset", "shift", "datetime", "duration", "copy-group")


@dataclass(frozen=True)
class PartitionLog:
    """A data topic partition's log: first offset still there, and the end (next offset)."""

    topic: str
    partition: int
    log_start: int
    log_end: int

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SinkTarget:
    """Where one partition goes: ``offset`` None with ``skip`` set means "leave it alone"."""

    offset: int | None
    warnings: tuple[str, ...] = ()
    skip: str = ""


def clamp(target: int, log: PartitionLog) -> SinkTarget:
    """Keep a target inside [log start, log end], with a visible warning when it was outside."""
    if target < log.log_start:
        return SinkTarget(
            log.log_start,
            (
                f"{target} is before the log start of {log.label} (records removed by retention); "
                f"clamped to {log.log_start}.",
            ),
        )
    if target > log.log_end:
        return SinkTarget(
            log.log_end,
            (f"{target} is beyond the log end of {log.label}; clamped to {log.log_end}.",),
        )
    return SinkTarget(target)


def sink_target(
    strategy: str,
    *,
    log: PartitionLog,
    committed: int | None,
    value: int | None = None,
    copied: int | None = None,
    time_offset: int | None = None,
) -> SinkTarget:
    """Compute one partition's new committed offset for a sink strategy, clamped to the log.

    ``value`` is the offset ("offset") or the signed amount ("shift"); ``copied`` the other
    group's committed offset ("copy-group"); ``time_offset`` the checked offsets-for-times
    answer ("datetime", "duration"), None meaning no record at or after the time.
    """
    if strategy == "earliest":
        return SinkTarget(log.log_start)
    if strategy == "latest":
        return SinkTarget(log.log_end)
    if strategy == "offset":
        if value is None:
            raise EditRuleError("offset", "is required")
        return clamp(value, log)
    if strategy == "shift":
        if value is None:
            raise EditRuleError("shift", "is required")
        if committed is None:
            # Like kafka-consumer-groups --shift-by: there is nothing to shift from.
            return SinkTarget(None, skip=f"{log.label} has no committed offset to shift from")
        return clamp(committed + value, log)
    if strategy in ("datetime", "duration"):
        if time_offset is None:
            # ListOffsets found no record at or after the time: everything is older, so the
            # sink resumes at the end (what kafka-consumer-groups --to-datetime does too).
            return SinkTarget(
                log.log_end, (f"No record of {log.label} is that recent; set to the log end.",)
            )
        return clamp(time_offset, log)
    if strategy == "copy-group":
        if copied is None:
            return SinkTarget(None, skip=f"the other group has no committed offset for {log.label}")
        return clamp(copied, log)
    raise EditRuleError("strategy", f"unknown sink strategy {strategy!r}")


@dataclass(frozen=True)
class SinkChange:
    topic: str
    partition: int
    before: int | None
    after: int | None  # None: delete the committed offset
    warnings: tuple[str, ...] = ()

    @property
    def is_delete(self) -> bool:
        return self.after is None

    @property
    def is_new(self) -> bool:
        return self.before is None and self.after is not None


def check_offset_for_time(
    *,
    at_ms: int,
    answer: int | None,
    log: PartitionLog,
    timestamp_at: int | None,
    timestamp_before: int | None,
) -> CheckResult:
    """Check a broker's offsets-for-times answer against the records around it.

    Kafka answers "the first offset whose timestamp is >= t" (None: no such record). So the
    record at the answer must be at or after t and the record before it before t. Brokers that
    answer nonsense (some Kafka-compatible brokers answer 0 for any time) are caught here
    instead of trusted.
    ``timestamp_at`` is None when there is no record at the answer (it is the log end);
    ``timestamp_before`` when there is none before it (it is the log start).
    """
    name = "offset-for-time"
    position = log.log_end if answer is None else answer
    if not log.log_start <= position <= log.log_end:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {answer} for {log.label}, outside its log "
            f"[{log.log_start}, {log.log_end}].",
        )
    if timestamp_at is not None and timestamp_at < at_ms:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {position} for {log.label}, but that record was written "
            f"at {timestamp_at} ms, before the requested {at_ms} ms.",
        )
    if timestamp_before is not None and timestamp_before >= at_ms:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {position} for {log.label}, but an earlier record was "
            f"written at {timestamp_before} ms, not before the requested {at_ms} ms.",
        )
    return CheckResult(name, True, f"Offset {position} of {log.label} checks out.")
