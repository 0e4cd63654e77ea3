import signal
import threading
import time
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import DemoClusterError, keep_writing, write_demo
from offsets.kafka.errors import KafkaUnavailable
from offsets.management.arguments import add_cluster_argument, get_cluster
from offsets.models import Cluster, LagSample


class Command(BaseCommand):
    help = (
        "Write a realistic simulated Kafka Connect cluster (config, status and offsets topics, "
        "sink data and consumer groups) into an EMPTY Kafka cluster, as the Java runtime would."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_cluster_argument(parser)
        parser.add_argument(
            "--seed", type=int, default=42, help="Random seed (same seed, same records)"
        )
        parser.add_argument("--hours", type=float, default=6.0, help="Simulated hours of history")
        parser.add_argument(
            "--flush-interval-ms", type=int, default=60_000, help="offset.flush.interval.ms"
        )
        parser.add_argument(
            "--source-partitions", type=int, default=6, help="Tables of the JDBC source"
        )
        parser.add_argument(
            "--data-records-per-hour", type=int, default=120, help="Per sink data topic partition"
        )
        parser.add_argument(
            "--bulk-connectors", type=int, default=0, help="Extra source connectors (benchmarks)"
        )
        parser.add_argument(
            "--bulk-partitions", type=int, default=0, help="Source partitions spread over them"
        )
        parser.add_argument("--end-time", help="ISO time the simulation ends (default: now)")
        parser.add_argument(
            "--keep-writing",
            action="store_true",
            help="Do not seed: go on writing the commits of the still running connectors of a "
            "cluster seeded with the same options (the same --end-time), one flush interval at "
            "a time, until SIGTERM/SIGINT",
        )

    def handle(self, *args: object, **options: object) -> None:
        cluster = get_cluster(options["cluster"])
        demo_options = self.demo_options(cluster, options)
        if options["keep_writing"]:
            if not options["end_time"]:
                raise CommandError(
                    "--keep-writing needs the --end-time the cluster was seeded with."
                )
            self.keep_writing(cluster, demo_options)
        else:
            self.seed(cluster, demo_options)

    def demo_options(self, cluster: Cluster, options: dict) -> DemoOptions:
        for name in ("hours", "flush_interval_ms", "source_partitions"):
            if options[name] <= 0:
                raise CommandError(f"--{name.replace('_', '-')} must be positive.")
        if options["bulk_partitions"] and not options["bulk_connectors"]:
            raise CommandError("--bulk-partitions needs --bulk-connectors.")
        end_ms = int(time.time() * 1000)
        if options["end_time"]:
            try:
                end_ms = int(datetime.fromisoformat(options["end_time"]).timestamp() * 1000)
            except ValueError as exc:
                raise CommandError(f"--end-time: {exc}") from exc
        return DemoOptions(
            end_ms=end_ms,
            seed=options["seed"],
            hours=options["hours"],
            flush_interval_ms=options["flush_interval_ms"],
            source_partitions=options["source_partitions"],
            data_records_per_hour=options["data_records_per_hour"],
            bulk_connectors=options["bulk_connectors"],
            bulk_partitions=options["bulk_partitions"],
            offsets_topic=cluster.offsets_topic,
            configs_topic=cluster.configs_topic,
            status_topic=cluster.status_topic,
        )

    def seed(self, cluster: Cluster, demo_options: DemoOptions) -> None:
        demo = build_demo(demo_options)
        self.stdout.write(
            f"Seeding {cluster.name} ({cluster.bootstrap_servers}) with seed {demo_options.seed}, {demo_options.hours:g} h of history"
        )
        try:
            summary = write_demo(
                cluster.kafka_settings(), demo, progress=lambda text: self.stdout.write(f"  {text}")
            )
        except (DemoClusterError, KafkaUnavailable) as exc:
            raise CommandError(str(exc)) from exc
        for topic, count in sorted(summary.records_by_topic.items()):
            self.stdout.write(f"  {topic}: {count:,} records")
        # The cluster's Kafka held none of the demo's topics (write_demo refuses otherwise), so
        # lag samples kept from an earlier demo are of topics and groups that are gone (every
        # `make demo` starts a new, memory-only broker): Burrow's window would judge the new
        # groups against them. The offsets results rebuild themselves: the refresh sees the
        # offsets topics were created again (refresh.recreated_topics).
        dropped, _ = LagSample.objects.filter(cluster=cluster).delete()
        if dropped:
            self.stdout.write(f"  dropped {dropped:,} lag samples of an earlier demo")
        self.stdout.write(
            self.style.SUCCESS(
                f"Seeded {len(demo.connectors)} connectors in {summary.seconds:.1f}s: "
                f"{sum(summary.records_by_topic.values()):,} Connect records, {summary.transactions} transactions, "
                f"{summary.data_records:,} data records, {summary.groups} sink groups."
            )
        )

    def keep_writing(self, cluster: Cluster, demo_options: DemoOptions) -> None:
        self.stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self.on_signal)
        self.stdout.write(
            f"Writing the commits of {cluster.name}'s running connectors every "
            f"{demo_options.flush_interval_ms / 1000:g} s until stopped"
        )
        try:
            written = keep_writing(
                cluster.kafka_settings(),
                demo_options,
                stop=self.stop,
                progress=lambda text: self.stdout.write(f"  {text}"),
            )
        except KafkaUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Stopped after {written:,} records.")

    def on_signal(self, signum: int, frame: object) -> None:
        self.stdout.write(f"Received {signal.Signals(signum).name}: stopping.")
        self.stop.set()
