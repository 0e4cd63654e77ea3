import signal
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.models import Cluster, RefreshRun
from offsets.services.refresh import run_refresh


class Command(BaseCommand):
    help = (
        "Read a cluster's Connect topics with Spark and refresh the dashboard's offsets, commit "
        "history and sink lag. Incremental by default; --every keeps one Spark session and "
        "refreshes on that period until SIGTERM/SIGINT."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--cluster", required=True, help="Name of a cluster added with add_cluster"
        )
        parser.add_argument(
            "--full", action="store_true", help="Rebuild from the beginning of the topics"
        )
        parser.add_argument(
            "--every", type=float, metavar="SECONDS", help="Refresh on this period until stopped"
        )

    def handle(
        self, *args: object, cluster: str, full: bool, every: float | None, **options: object
    ) -> None:
        found = Cluster.objects.filter(name=cluster).first()
        if found is None:
            raise CommandError(f"Unknown cluster {cluster!r}: add it with add_cluster first.")
        if every is not None and every <= 0:
            raise CommandError("--every must be a positive number of seconds.")
        from offsets.spark.session import get_spark

        self.stop = threading.Event()
        if every is not None:
            signal.signal(signal.SIGTERM, self.on_signal)
            signal.signal(signal.SIGINT, self.on_signal)
        spark = get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
        try:
            while True:
                run = self.refresh_once(found, full=full, spark=spark)
                full = False  # only the first round of a loop rebuilds
                if every is None:
                    if run.status != RefreshRun.Status.SUCCEEDED:
                        raise CommandError(f"Refresh failed: {run.error}")
                    return
                if self.stop.wait(every):
                    self.stdout.write("Stopped.")
                    return
        finally:
            spark.stop()

    def refresh_once(self, cluster: Cluster, *, full: bool, spark) -> RefreshRun:
        started = time.monotonic()
        self.stdout.write(f"Refreshing {cluster.name} ({'full' if full else 'incremental'})")
        run = run_refresh(cluster=cluster, full=full, spark=spark, progress=self.stdout.write)
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

    def on_signal(self, signum: int, frame: object) -> None:
        self.stdout.write(f"Received {signal.Signals(signum).name}: stopping after this round.")
        self.stop.set()
