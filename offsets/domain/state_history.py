"""A connector's state history: which refreshes saw its state change. Pure.

A refresh keeps only the latest snapshot of each connector; comparing it with the one it
replaces finds the pauses, stops, failures and returns to running that the charts mark.
"""

from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple


class State(NamedTuple):
    target_state: str
    runtime_state: str
    failed_tasks: int

    def key(self) -> tuple[str, str, bool]:
        # One more failed task is no new event: the connector was failing already.
        return (self.target_state, self.runtime_state, self.failed_tasks > 0)

    @property
    def failing(self) -> bool:
        return self.runtime_state == "FAILED" or self.failed_tasks > 0


def state_changes(
    previous: Mapping[str, State], current: Mapping[str, State]
) -> list[tuple[str, State, bool]]:
    """(connector, its state now, whether it is new to the refreshes) for each connector
    whose state differs from the last refresh's, or that the last refresh did not see; by
    name."""
    changes = []
    for name in sorted(current):
        state, before = current[name], previous.get(name)
        if before is None or before.key() != state.key():
            changes.append((name, state, before is None))
    return changes


def change_time(
    state: State, failed_at: datetime | None, seen_at: datetime
) -> tuple[datetime, bool]:
    """When a state change happened, and whether the status topic says so.

    A failure is dated by the status record the worker wrote FAILED in (its Kafka timestamp,
    `failed_at`), never after the refresh that saw it (`seen_at`: the worker's clock may run
    ahead). Any other change, or a failure whose record has no time, is dated by the refresh
    that saw it: it happened after the refresh before.
    """
    if state.failing and failed_at is not None:
        return min(failed_at, seen_at), True
    return seen_at, False
