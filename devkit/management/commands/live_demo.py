import signal
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from devkit.live_demo import RUNNING, LineWriter, LiveDemo
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError
from offsets.kafka.errors import KafkaUnavailable
from offsets.management.arguments import get_cluster
from offsets.models import Cluster, LagSample

# How often the loop wakes up to write the lines due.
TICK_SECONDS = 0.2


class Command(BaseCommand):
    help = (
        "Create live demo connectors on a cluster's Connect worker (file sources and sinks, "
        "MirrorMaker 2, an exactly-once source, the project's table source and external-offsets "
        "sink; one STOPPED, one PAUSED, one FAILED, one deleted) and keep them busy: append "
        "lines to the files the sources read and pause/resume one sink in turns, until "
        "SIGTERM/SIGINT. Connectors that exist already are kept, so it can be run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--cluster",
            required=True,
            help="Name of a cluster added with add_cluster --embedded (it needs a Connect URL)",
        )
        parser.add_argument(
            "--data-dir",
            type=Path,
            help=f"Where the source and sink files live (default {settings.RUN_DIR}/live-demo)",
        )
        parser.add_argument(
            "--namespace", default="", help="Prefix of every connector, topic and file name"
        )
        parser.add_argument(
            "--lines-per-second", type=float, default=5.0, help="Lines appended to the sources"
        )
        parser.add_argument(
            "--warm-up",
            type=float,
            default=5.0,
            metavar="SECONDS",
            help="How long new connectors run before taking their STOPPED/PAUSED/FAILED state",
        )
        parser.add_argument(
            "--flap-seconds",
            type=float,
            default=30.0,
            help="How long the flapping sink stays paused, then running",
        )
        parser.add_argument(
            "--setup-only",
            action="store_true",
            help="Create and settle the connectors, then exit instead of writing lines",
        )
        parser.add_argument(
            "--duration",
            type=float,
            metavar="SECONDS",
            help="Stop writing after this long (default: until SIGTERM/SIGINT)",
        )

    def handle(self, *args: object, **options: object) -> None:
        cluster = get_cluster(options["cluster"])
        if not cluster.connect_url:
            raise CommandError(
                f"Cluster {cluster.name} has no Connect URL: add it with add_cluster --embedded"
                " (or --connect-url)."
            )
        for name in ("lines_per_second", "flap_seconds"):
            if options[name] <= 0:
                raise CommandError(f"--{name.replace('_', '-')} must be positive.")
        demo = LiveDemo(
            ConnectRest.for_cluster(cluster),
            bootstrap_servers=cluster.bootstrap_servers,
            data_dir=options["data_dir"] or Path(settings.RUN_DIR) / "live-demo",
            namespace=options["namespace"],
            flap_seconds=options["flap_seconds"],
        )
        self.stop = threading.Event()
        try:
            demo.prepare_topics(cluster.kafka_settings())
            writer = LineWriter(
                demo.source_files,
                lines_per_second=options["lines_per_second"],
                topics={"clicks": demo.clicks_topic},
                kafka=cluster.kafka_settings(),
            )
        except KafkaUnavailable as exc:
            raise CommandError(f"The Kafka cluster of {cluster.name}: {exc}") from exc
        try:
            self.set_up(cluster, demo, writer, warm_up=options["warm_up"])
            if not options["setup_only"]:
                self.keep_busy(demo, writer, duration=options["duration"])
        except ConnectRestError as exc:
            raise CommandError(f"The Connect worker of {cluster.name}: {exc}") from exc
        finally:
            writer.close()

    def drop_old_lag_samples(self, cluster: Cluster, connectors: list[str]) -> None:
        """The worker had none of the connectors: it is a new one (every `make demo` starts an
        empty broker), so lag samples kept of connectors of these names are of groups and
        topics that are gone, and Burrow's window would judge the new ones against them (as
        seed_demo does for its cluster)."""
        dropped, _ = LagSample.objects.filter(cluster=cluster, connector__in=connectors).delete()
        if dropped:
            self.stdout.write(f"  dropped {dropped:,} lag samples of an earlier worker")

    def set_up(
        self, cluster: Cluster, demo: LiveDemo, writer: LineWriter, *, warm_up: float
    ) -> None:
        self.stdout.write(f"Live demo connectors on {demo.rest.url}, files in {demo.data_dir}")
        demo.prepare_files()
        outcome = demo.ensure()
        for name, what in outcome.items():
            self.stdout.write(f"  {name}: {what}")
        if set(outcome.values()) <= {"created"}:
            self.drop_old_lag_samples(cluster, list(outcome))
        warming = {
            connector.name: RUNNING
            for connector in demo.connectors()
            if connector.warms_up and outcome[connector.name] == "created"
        }
        if warming:
            self.stdout.write(f"Warming up {len(warming)} connectors before they change state...")
            self.wait_writing(demo, writer, warming)
            self.write_for(writer, warm_up)
        for name, change in demo.settle().items():
            self.stdout.write(f"  {name}: {change}")
        shown = self.wait_writing(demo, writer, demo.intended())
        wanted = demo.intended()
        for name, state in shown.items():
            line = f"  {name}: {state}"
            if state == wanted[name]:
                self.stdout.write(line)
            else:
                self.stdout.write(self.style.WARNING(f"{line} (meant to be {wanted[name]})"))
        if shown == wanted:
            self.stdout.write(self.style.SUCCESS(f"{len(shown)} live connectors as intended."))

    def wait_writing(self, demo: LiveDemo, writer: LineWriter, wanted: dict[str, str]):
        """Wait for the connectors' states, writing lines meanwhile (a second at a time)."""
        deadline = time.monotonic() + 90
        while True:
            shown = demo.wait_for(wanted, timeout=1)
            writer.write_due()
            if shown == wanted or time.monotonic() >= deadline:
                return shown

    def write_for(self, writer: LineWriter, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop.wait(TICK_SECONDS):
            writer.write_due()

    def keep_busy(self, demo: LiveDemo, writer: LineWriter, *, duration: float | None) -> None:
        handlers = self.catch_signals()
        started = time.monotonic()
        next_flap = started + demo.flap_seconds
        self.stdout.write(
            f"Writing {writer.lines_per_second:g} lines a second to {len(writer.files)} files"
            f" and {len(writer.topics)} topic"
            f" and flapping a sink every {demo.flap_seconds:g} s"
            + (f" for {duration:g} s" if duration else " until stopped")
        )
        try:
            while not self.stop.wait(TICK_SECONDS):
                writer.write_due()
                now = time.monotonic()
                if now >= next_flap:
                    self.stdout.write(f"  flapping sink: {demo.flap()}")
                    next_flap = now + demo.flap_seconds
                if duration is not None and now - started >= duration:
                    break
        finally:
            self.restore_signals(handlers)
        written = ", ".join(f"{name} {count:,}" for name, count in writer.written.items())
        self.stdout.write(f"Stopped. Lines in the files: {written}.")

    def catch_signals(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}
        handlers = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            handlers[signum] = signal.signal(signum, self.on_signal)
        return handlers

    def restore_signals(self, handlers: dict) -> None:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)

    def on_signal(self, signum: int, frame: object) -> None:
        self.stdout.write(f"Received {signal.Signals(signum).name}: stopping.")
        self.stop.set()
