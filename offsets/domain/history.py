"""Rules over offset history and lag: rewinds, stalls and Burrow's lag evaluation. Pure."""

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# The field of an offset map that measures progress, by the names connectors use: sink
# offsets, MirrorMaker 2, file position, JDBC incrementing, Debezium LSN/SCN, then time.
PROGRESS_FIELDS = (
    "kafka_offset",
    "offset",
    "position",
    "incrementing",
    "lsn",
    "lsn_proc",
    "scn",
    "commit_scn",
    "pos",
    "ts_usec",
    "ts_ms",
    "timestamp",
)


def finite_number(value: object) -> float | None:
    """A JSON number as a finite float (None: not a number, a boolean, or too wide)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        # An integer wider than a double (JSON allows any number of digits; a bad writer
        # or garbage may hold one): it cannot be compared as progress.
        return None
    return number if math.isfinite(number) else None


def offset_progress(offset: Mapping[str, object] | None) -> float | None:
    """Return the number that should only grow as the connector makes progress, if any.

    A known field name first (PROGRESS_FIELDS); otherwise the first numeric field whose name
    does not end in "nanos" (JDBC's timestamp_nanos is a fraction that wraps, not progress).
    """
    if not offset:
        return None
    for name in PROGRESS_FIELDS:
        number = finite_number(offset.get(name))
        if number is not None:
            return number
    for name, value in offset.items():
        number = finite_number(value)
        if number is not None and not name.lower().endswith("nanos"):
            return number
    return None


@functools.lru_cache(maxsize=4096)
def progress_fields(names: tuple[str, ...]) -> tuple[str, ...]:
    """Return the fields `offset_progress` tries, in order, for an offset with these names.

    Offsets of one source partition keep the same field names from commit to commit, so a
    caller folding many commits works this out once per name set instead of per commit.
    """
    known = [name for name in PROGRESS_FIELDS if name in names]
    return (*known, *(name for name in names if not name.lower().endswith("nanos")))


def progress_field(offset: Mapping[str, object] | None) -> str | None:
    """The name of the field `offset_progress` reads the progress from, if any."""
    if not offset:
        return None
    fields = progress_fields(tuple(offset))
    return next((name for name in fields if finite_number(offset[name]) is not None), None)


def progress_of(offset: Mapping[str, object], fields: tuple[str, ...]) -> float | None:
    """`offset_progress(offset)`, given `progress_fields(tuple(offset))`."""
    for name in fields:
        number = finite_number(offset[name])
        if number is not None:
            return number
    return None


class LagStatus(StrEnum):
    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"


ERROR_STATUSES = {LagStatus.STALL, LagStatus.STOP, LagStatus.REWIND}


@dataclass(frozen=True)
class LagPoint:
    committed: int
    lag: int
    # When it was sampled: what edits it may follow, not what the rules compare.
    at: datetime | None = field(default=None, compare=False)


def _no_edit(earlier: LagPoint, later: LagPoint) -> bool:
    return False


def partition_lag_status(
    window: Sequence[LagPoint],
    *,
    consuming: bool,
    edited: Callable[[LagPoint, LagPoint], bool] = _no_edit,
) -> LagStatus:
    """Evaluate one partition's last N lag samples (oldest first) with Burrow's rules.

    Burrow's order (evaluator `calculatePartitionStatus`) adapted to what Connect exposes:
    Kafka keeps no commit timestamps we can read, so "the consumer stopped committing" (STOP)
    is decided from the connector's own status (its tasks are not running) instead of the age
    of the last commit.
    1. No lag now: OK.
    2. Lag and the connector is not consuming: STOP.
    3. The lag was zero at some point in the window: OK.
    4. The committed offset went backwards, and no offset edit moved it (`edited`): REWIND.
    5. The committed offset never moved: STALL.
    6. The offset moves but the lag grew at every sample: WARN.
    """
    if not window or window[-1].lag == 0:
        return LagStatus.OK
    if not consuming:
        return LagStatus.STOP
    if any(point.lag == 0 for point in window):
        return LagStatus.OK
    if len(window) < 2:
        return LagStatus.OK
    pairs = list(itertools.pairwise(window))
    if any(
        later.committed < earlier.committed and not edited(earlier, later)
        for earlier, later in pairs
    ):
        return LagStatus.REWIND
    if all(later.committed == earlier.committed for earlier, later in pairs):
        return LagStatus.STALL
    if all(later.lag > earlier.lag for earlier, later in pairs):
        return LagStatus.WARN
    return LagStatus.OK


def connector_lag_status(statuses: Sequence[LagStatus]) -> str:
    """Burrow's group status: ERR if any partition is STOP/STALL/REWIND, else WARN, else OK."""
    if any(status in ERROR_STATUSES for status in statuses):
        return "ERR"
    if LagStatus.WARN in statuses:
        return "WARN"
    return "OK"


def committed_moved_at(
    previous: tuple[int | None, datetime | None] | None,
    committed: int | None,
    sampled_at: datetime,
) -> datetime | None:
    """When a sink partition's committed offset last moved, as the refreshes saw it.

    Kafka keeps no commit times (OffsetFetch answers offsets only), so the move is dated by
    the refresh that first saw the offset as it is now: the commit happened after the refresh
    before it. `previous` is the last refresh's (committed, moved at), None for a partition it
    did not see. None when the group never committed.
    """
    if committed is None:
        return None
    if previous is not None and previous[0] == committed and previous[1] is not None:
        return previous[1]
    return sampled_at


def committed_move_seen(
    previous: tuple[int | None, datetime | None, bool] | None, committed: int | None
) -> bool:
    """Whether a refresh saw a sink partition's committed offset move to what it is now.

    True when the refresh before read another offset (or none): the commit happened between
    the two. False when this refresh is the first to read the partition (or the row predates
    dated moves): the offset is unchanged since at least then, and nothing says it moved
    then. Carried while the offset stays put, like `committed_moved_at`.
    """
    if committed is None or previous is None:
        return False
    if previous[0] is None:
        return True  # the refresh before read no commit
    if previous[1] is None:
        return False  # a row stored before moves were dated
    if previous[0] == committed:
        return previous[2]
    return True


def last_moved_at(moves: Sequence[datetime | None]) -> datetime | None:
    """A sink's last commit as the refreshes saw it: the latest move of any partition."""
    return max((moved for moved in moves if moved is not None), default=None)


def last_move_seen(moves: Sequence[tuple[datetime | None, bool]]) -> bool:
    """Whether a refresh saw a sink's last move (`last_moved_at`) happen: some partition with
    the latest date moved between two refreshes. Otherwise that date is only the first read
    of an offset that was already there."""
    latest = last_moved_at([moved for moved, _ in moves])
    return latest is not None and any(moved == latest and seen for moved, seen in moves)
