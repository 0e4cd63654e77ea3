"""A connector its owner paused or stopped: never an error, wherever a status is shown or counted.

An owner pauses or stops a connector on purpose (PUT /pause, /stop): its tasks stop, so its
sink lag turns STOP and its connector status ERR by Burrow's rules. That lag is by design, so
the list, its status filter, the overview, alerts and metrics all call it "paused" instead;
a failure in it (the connector or a task FAILED) still is an error.
"""

from collections.abc import Sequence

# Target states an owner sets to pause or stop a connector on purpose.
PLANNED_PAUSE_STATES = ("PAUSED", "STOPPED")
# The status a paused connector shows and is counted as, in place of its lag status.
PAUSED = "PAUSED"
# The lag statuses that are an error (ERR at connector level; its reasons).
ERROR_STATUSES = ("ERR", "STALL", "STOP", "REWIND")


def paused_by_owner(*, target_state: str, deleted: bool, failed: bool) -> bool:
    """Whether its owner paused or stopped it and nothing of it failed."""
    return not deleted and target_state in PLANNED_PAUSE_STATES and not failed


def shown_status(lag_status: str | None, *, paused: bool) -> str | None:
    """The status a connector shows and is counted by: PAUSED for a planned pause, else its
    lag status."""
    return PAUSED if paused else lag_status


def is_lag_error(lag_status: str | None, *, paused: bool) -> bool:
    """Whether a connector's lag status is an error: ERR (or a partition's STALL, STOP,
    REWIND), unless its owner paused it."""
    return not paused and lag_status in ERROR_STATUSES


def shown_reasons(reasons: Sequence[str], *, paused: bool) -> list[str]:
    """The reasons shown beside a status: a paused connector's STOP is its pause, not a reason."""
    return [reason for reason in reasons if not (paused and reason == "STOP")]
