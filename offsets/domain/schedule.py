"""When the scheduler refreshes a cluster: pure rules over what the database says."""

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class ClusterTurn:
    """What the scheduler knows of one cluster when it looks for work."""

    cluster_id: int
    every_seconds: int  # Cluster.refresh_every_seconds; 0: not scheduled
    last_started: datetime | None  # the start of its latest refresh run, by anyone
    running: bool  # a refresh of it is running (claimed, by anyone)


def due_clusters(turns: list[ClusterTurn], *, now: datetime, busy: set[int]) -> list[int]:
    """The clusters to refresh now: those never refreshed first, then the longest overdue.

    Rounds are spaced from one start to the next, whoever started the last one: a refresh by
    hand or by another scheduler counts, so a cluster is not refreshed twice in a row, and a
    cluster whose refreshes fail is tried once a period, not in a tight loop. Not a cluster
    that is not scheduled (period 0), running (anyone's refresh) or `busy` (this
    scheduler's, between its claim and the end of its round).
    """
    due = []
    for turn in turns:
        if turn.every_seconds <= 0 or turn.running or turn.cluster_id in busy:
            continue
        if turn.last_started is None:
            due.append((0, now, turn.cluster_id))
            continue
        at = turn.last_started + timedelta(seconds=turn.every_seconds)
        if at <= now:
            due.append((1, at, turn.cluster_id))
    return [cluster_id for *_, cluster_id in sorted(due)]


def overdue(turn: ClusterTurn, *, now: datetime, periods: float) -> bool:
    """Whether the cluster's last refresh is older than `periods` of its period (readiness).

    A cluster never refreshed by the scheduler is judged from when it could first have been:
    the caller gives `last_started` as its last success, or as the scheduler's start.
    """
    if turn.every_seconds <= 0 or turn.last_started is None:
        return False
    return now - turn.last_started > timedelta(seconds=periods * turn.every_seconds)
