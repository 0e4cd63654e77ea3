"""Which offset edit wrote a source's rewind: a rewind an edit explains is that edit's work,
not an alarm. Pure.

An edit applied through the worker (PATCH /connectors/<name>/offsets) has the worker write
the rewinding record while the edit is being applied: after its claim (`apply_started_at`)
and before its finish is recorded (`finished_at`), which comes once the worker answered and
the offsets were read back. So the record's time falls inside that window, and its value is
the one the edit wrote for that partition. An edit written straight to Kafka is the same.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

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
