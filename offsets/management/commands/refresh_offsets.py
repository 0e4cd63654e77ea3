import contextlib
import logging
import signal
import threading
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.alerts import delivery
from offsets.edits.reconcile import settle_stale
from offsets.history import store as history_store
from offsets.management.arguments import add_cluster_argument, get_cluster
from offsets.models import Cluster, RefreshRun
from offsets.refresh import background
from offsets.refresh.plan import has_read_before
from offsets.refresh.run import run_refresh

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """While one refresh runs, SIGTERM stops it as Ctrl-C does: Spark's jobs cancelled, then
    KeyboardInterrupt, so that its run is recorded as interrupted rather than left holding its
    cluster until its lease runs out. (Only the main thread may set a signal's handler.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: object) -> None:
    from offsets.spark import session

    spark = session.current_session()
    # A session already stopped (or never started) has no job to cancel.
    with contextlib.suppress(Exception):
        if spark is not None:
            session.cancel_jobs(spark)
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = (
        "Read a cluster's Connect topics with Spark and refresh the dashboard's offsets, commit "
        "history and sink lag. Incremental by default; --every keeps one Spark session and "
        "refreshes on that period until SIGTERM/SIGINT, and each round also reconciles the "
        "cluster's edits left applying by a dead process (see reconcile_edits). Alerts the refresh "
        "queues are sent on a thread of their own (see send_alerts)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_cluster_argument(parser)
        parser.add_argument(
            "--full", action="store_true", help="Rebuild from the beginning of the topics"
        )
        parser.add_argument(
            "--every", type=float, metavar="SECONDS", help="Refresh on this period until stopped"
        )
        parser.add_argument(
            "--run-id",
            type=int,
            help="Fill in this RUNNING refresh run, claimed by whoever started the command "
            "(the dashboard's Refresh button); not with --every",
        )

    def handle(
        self,
        *args: object,
        cluster: str,
        full: bool,
        every: float | None,
        run_id: int | None = None,
        **options: object,
    ) -> None:
        found = get_cluster(cluster)
        if every is not None and every <= 0:
            raise CommandError("--every must be a positive number of seconds.")
        self.verbosity = int(options.get("verbosity", 1))
        claimed = self.first_run(found, full=full, every=every, run_id=run_id)
        self.stop = threading.Event()
        if every is not None:
            signal.signal(signal.SIGTERM, self.on_signal)
            signal.signal(signal.SIGINT, self.on_signal)
        from offsets.spark import session

        before = session.current_session()
        try:
            # Spark starts with the first refresh that gets past Kafka (refresh.compute): a
            # loop keeps that session, and a cluster that does not answer never starts it.
            with contextlib.nullcontext() if every is not None else sigterm_as_ctrl_c():
                self.refresh_rounds(found, full=full, every=every, claimed=claimed)
            if every is None:
                # One refresh: its history merge (beside the next round in a loop) ends here.
                history_store.wait_for_merges()
        except KeyboardInterrupt:  # the run is recorded as interrupted (run_refresh)
            raise CommandError("Interrupted.") from None
        finally:
            started = session.current_session()
            if started is not None and started is not before:
                session.stop_when_idle(started)

    def first_run(
        self, cluster: Cluster, *, full: bool, every: float | None, run_id: int | None
    ) -> RefreshRun | None:
        """The run the first round fills in: the one named by --run-id, or one claimed now
        for a single refresh. A loop claims each round's run as the round starts."""
        if run_id is not None:
            return self.claimed_run(cluster, run_id, every)
        if every is not None:
            return None
        # Each refresh claims its run as the dashboard's button does: two refreshes of one
        # cluster at once (a loop beside a button press, two cron jobs) would each add the
        # same new commits to the counts. The refresh's save refuses the second one to
        # save; the claim keeps it from starting. Claimed before Spark starts (seconds),
        # so that a refresh that may not run says so at once.
        claimed = background.claim_refresh(cluster=cluster, full=full)
        if claimed is None:
            running = background.running_refresh(cluster=cluster)
            raise CommandError(f"{self.already_running(cluster, running)} Not started.")
        RefreshRun.objects.filter(pk=claimed.pk).update(phase="starting")
        return claimed

    def refresh_rounds(
        self,
        cluster: Cluster,
        *,
        full: bool,
        every: float | None,
        claimed: RefreshRun | None,
    ) -> None:
        """Refresh once, or every `every` seconds until stopped, skipping rounds while
        another refresh of the cluster runs."""
        skipped_for = None  # the other refresh this loop last said it skips rounds for
        while True:
            run = claimed or background.claim_refresh(cluster=cluster, full=full)
            claimed = None
            if run is None:
                # Said once per other refresh, not every round it lasts.
                running = background.running_refresh(cluster=cluster)
                if running is None or running.pk != skipped_for:
                    skipped_for = running.pk if running else None
                    self.stdout.write(
                        self.style.WARNING(
                            f"{self.already_running(cluster, running)} "
                            "Skipping rounds while it runs."
                        )
                    )
            else:
                with background.heartbeat(run):
                    run = self.refresh_once(cluster, full=full, run=run)
                full = False  # only the first round of a loop rebuilds
            # On a thread: a receiver that hangs holds neither this round nor the next.
            delivery.send_in_background()
            if every is None:
                if run.status != RefreshRun.Status.SUCCEEDED:
                    raise CommandError(f"Refresh failed: {run.error}")
                return
            self.reconcile_stale(cluster)
            if self.stop.wait(every):
                self.stdout.write("Stopped.")
                return

    def already_running(self, cluster: Cluster, running: RefreshRun | None) -> str:
        if running is None:  # it ended between the claim and this question
            return f"A refresh of {cluster.name} was running a moment ago."
        return background.AlreadyRunning(running).message

    def claimed_run(self, cluster: Cluster, run_id: int, every: float | None) -> RefreshRun:
        if every is not None:
            raise CommandError("--run-id fills in one run; it cannot be used with --every.")
        run = RefreshRun.objects.filter(
            pk=run_id, cluster=cluster, status=RefreshRun.Status.RUNNING
        ).first()
        if run is None:
            raise CommandError(f"No running refresh run #{run_id} of {cluster.name} to fill in.")
        # This process runs it from now on (the process that claimed it only launched it), and
        # renews its lease from here.
        RefreshRun.objects.filter(pk=run.pk).update(phase="starting", **background.this_process())
        if not background.renew_lease(run.pk):  # taken over while this process started
            raise CommandError(f"No running refresh run #{run_id} of {cluster.name} to fill in.")
        return run

    def refresh_once(
        self, cluster: Cluster, *, full: bool, run: RefreshRun | None = None
    ) -> RefreshRun:
        started = time.monotonic()
        if full:
            how = "full"
        elif has_read_before(cluster):
            how = "incremental"
        else:
            # An incremental refresh with nothing read before reads every record.
            how = "first refresh: reading the topics from the beginning"
        # -v 0 says one line a round: a loop of a round a second would log its phases 86,400
        # times a day.
        quiet = self.verbosity == 0
        if not quiet:
            self.stdout.write(f"Refreshing {cluster.name} ({how})")
        run = run_refresh(
            cluster=cluster,
            full=full,
            progress=None if quiet else self.stdout.write,
            run=run,
        )
        style = (
            self.style.SUCCESS if run.status == RefreshRun.Status.SUCCEEDED else self.style.ERROR
        )
        topics = ", ".join(
            f"{topic} {count:,}" for topic, count in sorted(run.records_by_topic.items())
        )
        self.stdout.write(
            style(
                f"Refresh #{run.pk} {run.status} in {time.monotonic() - started:.1f}s: "
                f"{run.records_read:,} records ({topics or 'none new'}), {run.malformed:,} malformed"
                + (f"; error: {run.error}" if run.error else "")
            )
        )
        return run

    def reconcile_stale(self, cluster: Cluster) -> None:
        """Settle the cluster's edits left "applying" by a process that died (settle_stale)."""
        try:
            lines = settle_stale(cluster)
        except Exception:
            # The refresh loop must outlive a bad round of reconciliation (a database hiccup).
            logger.exception("Reconciling the stale edits of %s failed", cluster.name)
            self.stdout.write(self.style.ERROR("Reconciling stale edits failed; see the log."))
            return
        for message, settled in lines:
            self.stdout.write(message if settled else self.style.WARNING(message))

    def on_signal(self, signum: int, frame: object) -> None:
        self.stdout.write(f"Received {signal.Signals(signum).name}: stopping after this round.")
        self.stop.set()
