"""What the pages say about freshness: a cluster's latest refresh and latest success."""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.timesince import timesince

from offsets.domain import staleness as rules
from offsets.domain.leases import lease_holds
from offsets.models import (
    Cluster,
    RefreshRun,
)


@dataclass(frozen=True)
class RefreshState:
    """The latest refresh of a cluster and the latest that succeeded (they may be the same)."""

    last_run: RefreshRun | None
    last_success: RefreshRun | None
    # The cluster's Cluster.refresh_every_seconds (0: refreshed by hand), which staleness
    # is judged against.
    every_seconds: int = 0

    @property
    def running(self) -> RefreshRun | None:
        run = self.last_run
        return run if run is not None and run.status == RefreshRun.Status.RUNNING else None

    @property
    def failed(self) -> RefreshRun | None:
        run = self.last_run
        return run if run is not None and run.status == RefreshRun.Status.FAILED else None

    @property
    def never_refreshed(self) -> bool:
        return self.last_success is None

    @property
    def snapshot_at(self) -> datetime | None:
        """When the results on show were computed (the end of the last successful run)."""
        run = self.last_success
        return (run.finished_at or run.started_at) if run else None

    @property
    def staleness(self) -> str:
        """ "fresh", "late" (amber) or "stale" (red): the age of the results on show against
        the cluster's own period (see offsets/domain/staleness.py)."""
        run = self.last_success
        return rules.staleness(
            self.age_seconds,
            every_seconds=self.every_seconds,
            run_seconds=run.seconds if run is not None else None,
            stale_seconds=settings.SNAPSHOT_STALE_SECONDS,
            stale_gaps=settings.READY_REFRESH_PERIODS,
        )

    @property
    def stale(self) -> bool:
        """True when the results on show are stale (red) for this cluster."""
        return self.staleness == rules.STALE

    @property
    def late(self) -> bool:
        """True when the results on show are late (amber) for this cluster, not yet stale."""
        return self.staleness == rules.LATE

    @property
    def silent_since(self) -> datetime | None:
        """The running refresh's last sign of life (its last renewal, or its start) once its
        lease ran out: its process may be gone, and the next refresh takes its cluster over.
        None otherwise."""
        run = self.running
        if run is None or lease_holds(run.lease_expires_at, now=timezone.now()):
            return None
        return run.heartbeat_at or run.started_at

    @property
    def age_seconds(self) -> int | None:
        """How old the results on show are, in whole seconds (None: there are none)."""
        at = self.snapshot_at
        return None if at is None else max(0, int((timezone.now() - at).total_seconds()))

    @property
    def warning(self) -> str | None:
        """Why the results on show may be out of date, in a sentence; None when they are not.

        The API says it in words, beside the fields, as the pages' banner does: a script that
        only reads the numbers should still be told that they are not current.
        """
        at = self.snapshot_at
        shown = (
            f"Showing the results of the last successful refresh, {timesince(at)} old "
            f"({at:%Y-%m-%d %H:%M:%S %Z})."
            if at is not None
            else "There are no earlier results to show."
        )
        failed = self.failed
        if failed is not None:
            ended = failed.finished_at or failed.started_at
            error = failed.error or "no error recorded"
            return f"The last refresh failed {timesince(ended)} ago: {error} {shown}"
        if self.stale:
            return f"Stale: no refresh has succeeded for {timesince(at)}. {shown}"
        if self.late:
            return (
                f"Late: no refresh has succeeded for {timesince(at)}, and this cluster "
                f"refreshes every {self.every_seconds} s. {shown}"
            )
        return None


def refresh_state(*, cluster: Cluster) -> RefreshState:
    """Return the latest refresh run and the latest successful one (two queries)."""
    runs = RefreshRun.objects.filter(cluster=cluster).order_by("-started_at", "-pk")
    last_run = runs.first()
    every = cluster.refresh_every_seconds
    if last_run is not None and last_run.status == RefreshRun.Status.SUCCEEDED:
        return RefreshState(last_run, last_run, every)
    return RefreshState(last_run, runs.filter(status=RefreshRun.Status.SUCCEEDED).first(), every)
