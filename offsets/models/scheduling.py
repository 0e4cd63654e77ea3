"""The scheduler's signs of life (`manage.py scheduler`), read by the readiness probe."""

from django.db import models


class SchedulerBeat(models.Model):
    """One running scheduler process: updated every round, deleted when it stops cleanly.

    Refreshes themselves need no row here: each is claimed as a RUNNING RefreshRun holding a
    lease on its cluster, under the cluster's row lock (offsets.refresh.background.claim_refresh),
    which is what keeps two schedulers from refreshing one cluster at once.
    """

    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "pid"], name="one_beat_per_scheduler_process")
        ]

    def __str__(self) -> str:
        return f"scheduler {self.pid} on {self.host}"
