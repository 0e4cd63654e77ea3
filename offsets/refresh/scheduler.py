"""One process that keeps every cluster refreshed on its own period (`manage.py scheduler`).

Each round it looks for due clusters (offsets.domain.schedule), claims each one's refresh as
the Refresh button does (a RUNNING run holding a lease on the cluster, created under its row
lock: two schedulers, or a scheduler and a button, never refresh one cluster at once, and a
killed one's claims are taken over once their leases run out) and runs it on a thread of a
small pool, in the process's one Spark session. A slow or failing cluster holds one thread,
never the rounds or the other clusters. After each refresh it settles the cluster's edits
left "applying" by a dead process and sends the alerts that are due; retention is applied by
the refresh itself.
"""

import logging
import threading
import time
from collections.abc import Callable

from django.db import connections
from django.db.models import Max
from django.db.models.functions import Now
from django.utils import timezone

from offsets.alerts import delivery
from offsets.domain.schedule import ClusterTurn, due_clusters
from offsets.edits.reconcile import settle_stale
from offsets.models import Cluster, RefreshRun, SchedulerBeat
from offsets.refresh import background, run_records
from offsets.refresh.run import run_refresh

logger = logging.getLogger(__name__)


def cluster_turns() -> list[ClusterTurn]:
    """What the schedule rules need of every cluster, in three queries."""
    last = dict(RefreshRun.objects.values_list("cluster_id").annotate(last=Max("started_at")))
    # A run whose claim no longer holds (its lease ran out, or its process is known to be
    # gone: a scheduler killed mid-refresh) does not count: the claim takes it over.
    running = {
        run.cluster_id
        for run in RefreshRun.objects.filter(status=RefreshRun.Status.RUNNING).annotate(
            database_now=Now()
        )
        if background.holds_claim(run, now=run.database_now)
    }
    return [
        ClusterTurn(
            cluster_id=pk,
            every_seconds=every,
            last_started=last.get(pk),
            running=pk in running,
        )
        for pk, every in Cluster.objects.values_list("pk", "refresh_every_seconds")
    ]


class Scheduler:
    def __init__(self, *, spark, refreshes_at_once: int, say: Callable[[str], None]) -> None:
        self.spark = spark
        self.say = say
        self.refreshes_at_once = refreshes_at_once
        # Daemon threads, not a pool's: a refresh stuck in a Kafka call must not keep a stopped
        # scheduler's process alive (its run is marked interrupted by `stop`).
        self.busy: dict[int, threading.Thread] = {}
        self.stopping = threading.Event()
        now = timezone.now()
        me = {key: background.this_process()[key] for key in ("host", "pid")}
        # A scheduler killed on this host left its row: it beats no more.
        for beat in SchedulerBeat.objects.filter(host=me["host"]).exclude(pid=me["pid"]):
            if background.pid_gone(beat.host, beat.pid):
                beat.delete()
        self.beat, _ = SchedulerBeat.objects.update_or_create(
            **me, defaults={"started_at": now, "beat_at": now}
        )

    def round(self) -> list[RefreshRun]:
        """Start the refreshes that are due (as many as threads are free); return their runs."""
        SchedulerBeat.objects.filter(pk=self.beat.pk).update(beat_at=timezone.now())
        self.busy = {pk: thread for pk, thread in self.busy.items() if thread.is_alive()}
        started = []
        for cluster_id in due_clusters(cluster_turns(), now=timezone.now(), busy=set(self.busy)):
            if len(self.busy) >= self.refreshes_at_once or self.stopping.is_set():
                break
            cluster = Cluster.objects.filter(pk=cluster_id).first()
            if cluster is None:  # deleted since the look
                continue
            run = background.claim_refresh(cluster=cluster, full=False)
            if run is None:  # someone else claimed it since the look
                continue
            thread = threading.Thread(
                target=self._refresh,
                args=(cluster, run),
                name=f"refresh-{cluster.name}",
                daemon=True,
            )
            self.busy[cluster_id] = thread
            thread.start()
            started.append(run)
        return started

    def _refresh(self, cluster: Cluster, run: RefreshRun) -> None:
        try:
            with background.heartbeat(run):
                run = run_refresh(
                    cluster=cluster, spark=self.spark, run=run, stopping=self.stopping
                )
            if run.error == run_records.STOPPED:
                return  # `stop` cut it short: said once, as a warning (record_interrupted)
            self.say(
                f"{cluster.name}: refresh #{run.pk} {run.status} in {run.seconds or 0:.1f}s, "
                f"{run.records_read:,} records" + (f"; error: {run.error}" if run.error else "")
            )
            if not self.stopping.is_set():
                self._settle_edits(cluster)
                delivery.send_in_background()
        except Exception:
            # The thread must outlive a bad round (a database hiccup); the run says the rest.
            logger.exception("The scheduled refresh of %s failed", cluster.name)
        finally:
            connections.close_all()  # this thread's own connections

    def _settle_edits(self, cluster: Cluster) -> None:
        for message, settled in settle_stale(cluster):
            if settled:
                self.say(f"{cluster.name}: {message}")

    def stop(self, *, timeout: float) -> int:
        """Stop within `timeout` seconds: cancel Spark's jobs, wait for the refreshes to end,
        and mark the runs still going as interrupted. Return how many were."""
        from offsets.spark import session

        self.stopping.set()
        spark = self.spark or session.current_session()
        if self.busy and spark is not None:
            session.cancel_jobs(spark)
        deadline = time.monotonic() + timeout
        for thread in self.busy.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        interrupted = sum(
            run_records.record_interrupted(run.cluster, run, error=run_records.STOPPED)
            for run in RefreshRun.objects.filter(
                status=RefreshRun.Status.RUNNING, **background.this_process()
            ).select_related("cluster")
        )
        SchedulerBeat.objects.filter(pk=self.beat.pk).delete()
        return interrupted
