"""A refresh's claim on its cluster is a lease: while it holds, and when another may take it.

The process running a refresh renews its run's lease every few seconds (`tuning`); a claim
whose lease ran out, or whose process is known to be gone, is taken over by the next claim of
the cluster. Times are the database's clock, which every process reads alike: the machines'
own clocks may disagree by more than a lease is worth.
"""

import enum
from datetime import datetime, timedelta


class TakeOver(enum.Enum):
    """Why a running claim no longer holds its cluster."""

    LEASE_EXPIRED = "its lease ran out"
    PROCESS_GONE = "its process is gone"


def lease_expiry(renewed_at: datetime, *, seconds: float) -> datetime:
    """When a lease renewed at `renewed_at` for `seconds` runs out."""
    return renewed_at + timedelta(seconds=seconds)


def lease_holds(expires_at: datetime | None, *, now: datetime) -> bool:
    """Whether a lease running out at `expires_at` still holds at `now`.

    A claim without one (never given a lease) holds nothing: no process renews it.
    """
    return expires_at is not None and now < expires_at


def take_over(expires_at: datetime | None, *, now: datetime, process_gone: bool) -> TakeOver | None:
    """Why a running claim may be taken over now, or None while it holds.

    Its lease running out is enough, wherever its process ran (killed, its machine gone, or
    cut off from the database). Before that, only a process known to be gone lets it go (one
    on this machine that no longer runs): a live lease is never taken because a process
    cannot be asked.
    """
    if not lease_holds(expires_at, now=now):
        return TakeOver.LEASE_EXPIRED
    if process_gone:
        return TakeOver.PROCESS_GONE
    return None
