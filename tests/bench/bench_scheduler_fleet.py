"""Benchmark one scheduler over many clusters: is every cluster refreshed within its period?

    make bench-scheduler-fleet   # or: python -m tests.bench.bench_scheduler_fleet [--clusters 20 ...]

On one embedded broker (no worker: Connect's topics are written as the Java runtime writes
them, by the demo's writer), --clusters clusters of --connectors connectors each (the demo's
dozen and bulk sources of three partitions), each with Connect topics of its own
(`cN.connect-offsets`, `-configs`, `-status`) and --records of history. Only the first
cluster has the demo's per-connector offsets topics: the others' configs name topics of the
same name, which would mix two clusters' records. Every cluster is registered with
--period seconds; `manage.py scheduler` (the deployment's, with its default refreshes at
once) runs in a process of its own while a writer per cluster commits --rate new offsets a
second in all, spread evenly. Once every cluster has been refreshed twice, --seconds are
watched: per cluster the time from one refresh's start to the next (the period it kept),
how late a start came after its period was up, failures, and the scheduler's CPU share and
peak RSS (its process tree, from /proc), with the load average beside them. Asserts nothing.
"""

import argparse
import itertools
import time
from datetime import timedelta

from tests.bench.processes import django_workdir

WORK = django_workdir("offsets-bench-scheduler-")

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from devkit.demo import DemoOptions, build_demo  # noqa: E402
from devkit.demo.options import (  # noqa: E402
    COMPACT,
    CONFIG_PARTITIONS,
    OFFSETS_PARTITIONS,
    STATUS_PARTITIONS,
)
from devkit.demo_writer import _write_connect_records, write_demo  # noqa: E402
from devkit.embedded import EmbeddedKafka  # noqa: E402
from offsets.kafka import admin  # noqa: E402
from offsets.models import Cluster, RefreshRun  # noqa: E402
from tests.bench.live_writer import Writer, offsets_to_move  # noqa: E402
from tests.bench.processes import cuts, load, manage, stop, tree_usage  # noqa: E402

DOZEN = 11  # the demo's own connectors, beside its bulk sources


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--connectors", type=int, default=50, help="per cluster")
    parser.add_argument("--records", type=int, default=20_000, help="history per cluster")
    parser.add_argument("--period", type=int, default=10, help="each cluster's, in seconds")
    parser.add_argument("--rate", type=float, default=50, help="new commits a second, in all")
    parser.add_argument("--seconds", type=float, default=300, help="watched")
    return parser.parse_args()


class ConnectTopicsOnly:
    """A demo's records bar those of its per-connector offsets topics."""

    def __init__(self, demo, topics: set[str]) -> None:
        self.demo, self.topics = demo, topics

    def records(self):
        return (record for record in self.demo.records() if record.topic in self.topics)


def seed(kafka: dict, index: int, args) -> Cluster:
    bulk = max(args.connectors - DOZEN, 0)
    prefix = f"c{index}."
    options = DemoOptions(
        end_ms=int(time.time() * 1000),
        hours=args.records / (max(bulk, 1) * 3 * 60),
        bulk_connectors=bulk,
        bulk_partitions=bulk * 3,
        offsets_topic=f"{prefix}connect-offsets",
        configs_topic=f"{prefix}connect-configs",
        status_topic=f"{prefix}connect-status",
    )
    demo = build_demo(options)
    if index == 0:
        write_demo(kafka, demo)
    else:
        sizes = {
            options.offsets_topic: OFFSETS_PARTITIONS,
            options.configs_topic: CONFIG_PARTITIONS,
            options.status_topic: STATUS_PARTITIONS,
        }
        admin.create_topics(
            kafka, [admin.TopicSpec(name, count, COMPACT) for name, count in sizes.items()]
        )
        _write_connect_records(kafka, ConnectTopicsOnly(demo, set(sizes)), sizes, lambda _: None)
    return Cluster.objects.create(
        name=f"fleet-{index:02d}",
        bootstrap_servers=kafka["bootstrap.servers"],
        offsets_topic=options.offsets_topic,
        configs_topic=options.configs_topic,
        status_topic=options.status_topic,
        refresh_every_seconds=args.period,
    )


def report(clusters: list[Cluster], since, args, cpu: float, wall: float, peak: int) -> None:
    gaps, late, kept, failed = [], [], 0, 0
    for cluster in clusters:
        runs = list(
            RefreshRun.objects.filter(cluster=cluster, started_at__gte=since)
            .order_by("started_at")
            .values_list("started_at", "status")
        )
        failed += sum(status == RefreshRun.Status.FAILED for _, status in runs)
        starts = [started for started, _ in runs]
        between = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
        gaps += between
        late += [max(0.0, gap - args.period) for gap in between]
        # The scheduler looks for due clusters once a second (SCHEDULER_ROUND_SECONDS).
        kept += bool(between) and max(between) <= args.period + 1
    print(
        f"\n== {len(clusters)} clusters of {args.connectors} connectors, period {args.period} s =="
    )
    print(f"  time between a cluster's refreshes: {cuts(gaps)} ({load()})")
    print(f"  how late after its period was up: {cuts(late)}")
    print(f"  clusters refreshed within their period (+1 s) every time: {kept} of {len(clusters)}")
    print(f"  refreshes: {len(gaps) + len(clusters)}, failed {failed}")
    print(f"  the scheduler's share of a core {cpu / wall:.2f}; peak RSS {peak / 2**30:.2f} GiB")


def main() -> None:
    args = parse_args()
    print(f"Working in {WORK}")
    call_command("migrate", verbosity=0)
    broker = EmbeddedKafka(WORK / "kafka")
    info = broker.start(worker=False)
    kafka = {"bootstrap.servers": info.bootstrap_servers}
    scheduler, writers = None, []
    try:
        started = time.monotonic()
        clusters = [seed(kafka, index, args) for index in range(args.clusters)]
        print(
            f"  seeded {len(clusters)} clusters in {time.monotonic() - started:.0f} s", flush=True
        )
        scheduler = manage("scheduler", log=WORK / "scheduler.log")
        while any(
            RefreshRun.objects.filter(cluster=c, status="succeeded").count() < 2 for c in clusters
        ):
            time.sleep(1)
        print(f"  every cluster refreshed twice after {time.monotonic() - started:.0f} s")
        rate = args.rate / len(clusters)
        for cluster in clusters:
            writers.append(Writer(kafka, cluster.offsets_topic, offsets_to_move(cluster), rate))
            writers[-1].start()
        since = timezone.now() + timedelta(seconds=args.period)
        time.sleep(args.period)
        cpu_start, wall_start, peak = tree_usage(scheduler.pid)[0], time.monotonic(), 0
        while time.monotonic() - wall_start < args.seconds:
            peak = max(peak, tree_usage(scheduler.pid)[1])
            time.sleep(0.5)
        cpu, wall = tree_usage(scheduler.pid)[0] - cpu_start, time.monotonic() - wall_start
        report(clusters, since, args, cpu, wall, peak)
    finally:
        for writer in writers:
            writer.running = False
        if scheduler:
            stop(scheduler)
        broker.stop()


if __name__ == "__main__":
    main()
