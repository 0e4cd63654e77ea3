"""Benchmark freshness: how soon a live connector's commit shows in the API under a live loop.

    make bench-live      # or: python -m tests.bench.bench_live [--seconds 180]

Starts an embedded broker and Connect worker (offset.flush.interval.ms=1000), the live demo's
connectors and line writer (`live_demo`), and `refresh_offsets --every 1 -v 0`, each in a
process of its own, with a database and history of their own in a temporary folder. Then for
--seconds it watches, and asserts nothing:
- source commits: every record written to the worker's offsets topic (its timestamp is when
  the worker wrote it) until the API's offsets of its connector show that offset or a later
  one of the same partition;
- sink commits: each sink group's committed offsets, asked of the broker every --poll seconds
  (Kafka keeps no commit time a client can read, so a commit is dated when first seen: its
  figure is short by up to --poll), until the API's offsets show them;
and prints p50/p95/max of each, with the loop's CPU seconds per minute and peak RSS (its whole
process tree: Python, Spark's JVM and its Python workers).
"""

import argparse
import io
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

WORK = Path(tempfile.mkdtemp(prefix="offsets-bench-live-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ["OFFSETS_HISTORY_PATH"] = str(WORK / "history")
os.environ["RUN_DIR"] = str(WORK / "run")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from confluent_kafka import OFFSET_END, Consumer, TopicPartition  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from offsets.kafka import groups  # noqa: E402
from offsets.models import Cluster, ConnectorSnapshot, RefreshRun  # noqa: E402
from tests.bench.processes import manage, percentiles, stop, tree_usage  # noqa: E402

CLUSTER = "live"


class SourceCommits(threading.Thread):
    """Reads the worker's offsets topic from its end: every commit record, with its time."""

    def __init__(self, kafka: dict, topic: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({**kafka, "group.id": "bench-live", "enable.auto.commit": False})
        partitions = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in partitions])
        self.lock = threading.Lock()
        # {(connector, partition json): [(timestamp ms, offset), ...]} not yet seen in the API.
        self.pending: dict[tuple[str, str], list[tuple[int, dict]]] = {}
        self.running = True

    def run(self) -> None:
        while self.running:
            message = self.consumer.poll(0.2)
            if message is None or message.error() or message.value() is None:
                continue
            try:
                connector, partition = json.loads(message.key())
                offset = json.loads(message.value())
            except (ValueError, TypeError):
                continue
            slot = (connector, json.dumps(partition, sort_keys=True))
            with self.lock:
                self.pending.setdefault(slot, []).append((message.timestamp()[1], offset))


def api_offsets(client: Client, connector: str) -> dict[str, dict]:
    """The API's offsets of a connector: {partition json: offset}."""
    response = client.get(f"/api/v1/clusters/{CLUSTER}/connectors/{connector}/offsets/")
    if response.status_code != 200:
        return {}
    return {
        json.dumps(entry["partition"], sort_keys=True): entry["offset"]
        for entry in response.json()["offsets"]
    }


def settle_sources(client: Client, sources: SourceCommits, freshness: list[float]) -> None:
    """Record the commits the API now shows: a pending record is shown once the API's offset
    of its partition is it or one written after it."""
    with sources.lock:
        connectors = {connector for connector, _ in sources.pending}
    for connector in connectors:
        shown = api_offsets(client, connector)
        now_ms = time.time() * 1000
        with sources.lock:
            for (name, partition), records in sources.pending.items():
                if name != connector or partition not in shown:
                    continue
                offsets = [offset for _, offset in records]
                if shown[partition] in offsets:
                    upto = len(offsets) - offsets[::-1].index(shown[partition])
                    freshness.extend((now_ms - at) / 1000 for at, _ in records[:upto])
                    del records[:upto]


def settle_sinks(
    client: Client,
    kafka: dict,
    sinks: dict[str, str],
    pending: dict[tuple[str, str, int], tuple[int, float]],
    last: dict[tuple[str, str, int], int],
    freshness: list[float],
) -> None:
    """Date the sinks' new group commits as first seen, and record those the API shows."""
    committed = groups.committed_offsets_of(kafka, sinks.values())
    seen_at = time.time()
    for connector, group in sinks.items():
        for (topic, partition), offset in committed.get(group, {}).items():
            slot = (connector, topic, partition)
            if slot in last and offset > last[slot] and slot not in pending:
                pending[slot] = (offset, seen_at)
            last[slot] = offset
    for connector in {slot[0] for slot in pending}:
        shown = {
            (json.loads(p)["kafka_topic"], json.loads(p)["kafka_partition"]): o["kafka_offset"]
            for p, o in api_offsets(client, connector).items()
            if o is not None
        }
        now = time.time()
        for slot, (offset, at) in list(pending.items()):
            if slot[0] == connector and shown.get(slot[1:], -1) >= offset:
                freshness.append(now - at)
                del pending[slot]


def wait_for_first_refresh(cluster: Cluster, loop: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if loop.poll() is not None:
            raise SystemExit(f"The refresh loop ended (status {loop.returncode}); see its log.")
        if RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.SUCCEEDED).exists():
            return
        time.sleep(1)
    raise SystemExit("No refresh succeeded in time.")


def measure(args, cluster: Cluster, loop: subprocess.Popen) -> None:
    kafka = cluster.kafka_settings()
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password="bench-live-password"))
    sources = SourceCommits(kafka, cluster.offsets_topic)
    sources.start()
    sinks = {
        row.name: row.sink_group
        for row in ConnectorSnapshot.objects.filter(cluster=cluster, type="sink", deleted=False)
    }
    source_fresh: list[float] = []
    sink_fresh: list[float] = []
    sink_pending: dict = {}
    sink_last: dict = {}
    cpu_start, peak_rss = tree_usage(loop.pid)
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        tick = time.monotonic()
        settle_sources(client, sources, source_fresh)
        settle_sinks(client, kafka, sinks, sink_pending, sink_last, sink_fresh)
        peak_rss = max(peak_rss, tree_usage(loop.pid)[1])
        time.sleep(max(0.0, args.poll - (time.monotonic() - tick)))
    minutes = (time.monotonic() - started) / 60
    cpu = tree_usage(loop.pid)[0] - cpu_start
    sources.running = False
    rounds = RefreshRun.objects.filter(cluster=cluster).count()
    print(f"Freshness over {args.seconds:.0f} s (API polled every {args.poll} s):")
    print(f"  source commits (offsets topic record -> API): {percentiles(source_fresh)}")
    print(f"  sink group commits (first seen -> API):       {percentiles(sink_fresh)}")
    print(
        f"  still unseen at the end: {sum(map(len, sources.pending.values()))} source, "
        f"{len(sink_pending)} sink"
    )
    print(
        f"The loop (refresh_offsets --every 1, its process tree): {cpu / minutes:.1f} CPU s "
        f"per minute, peak RSS {peak_rss / 2**20:,.0f} MiB; {rounds} runs kept"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180, help="how long to watch")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between API polls")
    args = parser.parse_args()
    print(f"Working in {WORK}")
    call_command("migrate", verbosity=0)
    started: list[subprocess.Popen] = []
    try:
        call_command("embedded_kafka", "start")
        call_command("add_cluster", CLUSTER, "--embedded", stdout=io.StringIO())
        cluster = Cluster.objects.get(name=CLUSTER)
        call_command(
            "live_demo",
            cluster=CLUSTER,
            setup_only=True,
            data_dir=WORK / "live-demo",
            stdout=io.StringIO(),
        )
        started.append(
            manage(
                "live_demo",
                "--cluster",
                CLUSTER,
                "--data-dir",
                str(WORK / "live-demo"),
                log=WORK / "writer.log",
            )
        )
        loop = manage(
            "refresh_offsets",
            "--cluster",
            CLUSTER,
            "--every",
            "1",
            "-v",
            "0",
            log=WORK / "loop.log",
        )
        started.append(loop)
        wait_for_first_refresh(cluster, loop, timeout=300)
        print("The loop's first refresh is done; measuring.")
        measure(args, cluster, loop)
    finally:
        for process in reversed(started):
            stop(process)
        call_command("embedded_kafka", "stop")


if __name__ == "__main__":
    main()
