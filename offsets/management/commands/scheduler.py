"""manage.py scheduler: keep every cluster refreshed on its own period, until SIGTERM."""

import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from offsets.refresh.scheduler import Scheduler

logger = logging.getLogger("offsets.scheduler")


class Command(BaseCommand):
    help = (
        "Refresh every cluster on its own period (Cluster.refresh_every_seconds, editable in "
        "the admin; clusters added later are picked up), settle edits left applying, send "
        "alerts. One process for all clusters; stops within 10 s on SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--refreshes-at-once",
            type=int,
            default=settings.SCHEDULER_REFRESHES_AT_ONCE,
            help="Refreshes run side by side, each of another cluster "
            "(default SCHEDULER_REFRESHES_AT_ONCE: %(default)s)",
        )
        parser.add_argument(
            "--round-seconds",
            type=float,
            default=settings.SCHEDULER_ROUND_SECONDS,
            help="How often it looks for due clusters (default %(default)s)",
        )

    def handle(self, *args: object, refreshes_at_once: int, round_seconds: float, **options):
        if refreshes_at_once < 1:
            raise CommandError("--refreshes-at-once must be at least 1.")
        if round_seconds <= 0:
            raise CommandError("--round-seconds must be a positive number of seconds.")
        from offsets.spark.session import current_session, get_spark, stop_when_idle

        self.stop = threading.Event()
        self.handle_signals()
        if settings.SPARK_REMOTE:
            # Each refresh connects (again, after a server's restart): a server down now
            # fails its refreshes, not the scheduler.
            spark = None
            self.say("Refreshes run on Spark Connect (SPARK_REMOTE).")
        else:
            self.say("Starting Spark...")
            spark = get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
            # Again: Spark's context put its own SIGINT handler in place, which raises
            # KeyboardInterrupt wherever the main thread is; a stop here goes through `stop`.
            self.handle_signals()
        scheduler = Scheduler(spark=spark, refreshes_at_once=refreshes_at_once, say=self.say)
        self.say(
            f"Scheduler running: up to {refreshes_at_once} refreshes at once; "
            "SIGTERM or Ctrl-C stops it."
        )
        try:
            while not self.stop.is_set():
                self.round(scheduler)
                self.stop.wait(round_seconds)
        finally:
            try:
                interrupted = scheduler.stop(timeout=settings.SCHEDULER_STOP_SECONDS)
            except DatabaseError as exc:
                # Its runs stay RUNNING until their leases run out (tuning.REFRESH_LEASE_SECONDS).
                logger.warning("Stopping without the database, which did not answer: %s", exc)
                interrupted = 0
            if interrupted:
                self.say(f"{interrupted} running refresh(es) marked interrupted.")
            spark = spark or current_session()
            if spark is not None:
                stop_when_idle(spark)
        self.say("Stopped.")

    def round(self, scheduler: Scheduler) -> None:
        try:
            for run in scheduler.round():
                self.say(f"{run.cluster.name}: refresh #{run.pk} started")
        except DatabaseError as exc:
            # A database restarting or out of reach ends this round, not the process: the next
            # round asks again on a new connection.
            logger.warning("A round was skipped: the database did not answer: %s", exc)
            connections.close_all()

    def say(self, text: str) -> None:
        # Through logging: one line a refresh in the deployment's format (LOG_FORMAT), masked.
        logger.info("%s", text)

    def handle_signals(self) -> None:
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)

    def on_signal(self, signum: int, frame: object) -> None:
        self.say(f"Received {signal.Signals(signum).name}: stopping.")
        self.stop.set()
