"""Which offset edit wrote a source's rewind: a rewind an edit explains is that edit's work,
not an alarm. Pure.

An edit applied through the worker (PATCH /connectors/<name>/offsets) has the worker write
the rewinding record while the edit is being applied: after its claim (`apply_started_at`)
and before its finish is recorded (`finished_at`), which comes once the worker answered and
the offsets were read back. So the record's time falls inside that window, and its value is
the one the edit wrote for that partition. An edit written straight to Kafka is the same.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from offsets.domain.history import LagPoint

# The record's time is the worker's clock, in whole milliseconds; the window's ends are the
# dashboard's: a second either side covers the rounding and clocks kept by NTP.
CLOCK_SLACK = timedelta(seconds=1)


@dataclass(frozen=True)
class EditWrite:
    """What an edit whose apply began wrote, and when it could have been written."""

    edit: int
    started_at: datetime
    # None while the edit is still being applied: the window is still open.
    finished_at: datetime | None
    # The progress of the offset the edit wrote, by partition (its key's hash); a partition
    # it deleted has none.
    progress: Mapping[str, float]


def edit_for_rewind(
    key: str,
    at: datetime,
    to_progress: float,
    writes: Sequence[EditWrite],
    slack: timedelta = CLOCK_SLACK,
) -> int | None:
    """The edit (its id) whose write is this rewind: the rewind's record time lies in the
    edit's write window and it went to the value the edit wrote for that partition. The
    latest such edit when several do; None when none does (a reset by hand, a bug, a
    restart that lost progress: a rewind to look at)."""
    matched = [
        write.edit
        for write in writes
        if write.progress.get(key) == to_progress
        and write.started_at - slack <= at
        and (write.finished_at is None or at <= write.finished_at + slack)
    ]
    return max(matched, default=None)


def sink_key(topic: str, partition: int) -> str:
    """A sink's topic-partition as an `EditWrite.progress` key."""
    return f"{partition}:{topic}"


def edit_for_sink_drop(
    key: str,
    earlier: tuple[datetime | None, int],
    later: tuple[datetime | None, int],
    writes: Sequence[EditWrite],
    slack: timedelta = CLOCK_SLACK,
) -> int | None:
    """The edit (its id) that moved a sink partition's committed offset back between two lag
    samples, (sampled at, committed) each: its write window overlaps the time between them
    and it set the offset at or below the later one (the sink may have read on from it since)
    and below the earlier one. None when none did: a rewind to look at."""
    (earlier_at, before), (later_at, after) = earlier, later
    matched = [
        write.edit
        for write in writes
        if (target := write.progress.get(key)) is not None
        and target <= after < before
        and (later_at is None or write.started_at - slack <= later_at)
        and (
            earlier_at is None
            or write.finished_at is None
            or earlier_at <= write.finished_at + slack
        )
    ]
    return max(matched, default=None)


def sink_drops_edited(
    key: str, writes: Sequence[EditWrite]
) -> Callable[[LagPoint, LagPoint], bool]:
    """`partition_lag_status`'s `edited` for one sink partition: whether one of these edits
    moved its committed offset back between two samples (`edit_for_sink_drop`)."""

    def edited(earlier: LagPoint, later: LagPoint) -> bool:
        pair = ((earlier.at, earlier.committed), (later.at, later.committed))
        return edit_for_sink_drop(key, *pair, writes) is not None

    return edited
