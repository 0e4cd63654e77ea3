"""Benchmark what a long `refresh_offsets --every` loop leaves behind: lag samples and history
run folders, and what they cost each refresh and each chart.

    make bench-loop      # or: python -m tests.bench.bench_long_loop [--refreshes 720]

A loop every minute for --refreshes minutes (default 12 hours) over --sink-partitions sink
partitions and one source connector of --keys partitions. Prints, each against a baseline run
in this process, and asserts nothing:
- the refresh's read of Burrow's lag window: every sample kept read and the older ones
  skipped (how the refresh read it before), against the window's samplings only;
- a progress chart over one run folder per refresh, against the same history after the
  refresh's merging of run folders (offsets.history.files.compact_runs);
- the refresh's update of the commit-rate buckets after --bucket-days days of 50 connectors,
  with and without the (cluster, bucket_start) index (dropped for the baseline, then made
  again).
"""

import argparse
import os
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

WORK = Path(tempfile.mkdtemp(prefix="offsets-bench-loop-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ["OFFSETS_HISTORY_PATH"] = str(WORK / "history")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

import pyarrow as pa  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from offsets.domain.history import LagPoint  # noqa: E402
from offsets.history import files as history_files  # noqa: E402
from offsets.history import reading as history  # noqa: E402
from offsets.history import store as history_store  # noqa: E402
from offsets.models import Cluster, CommitBucket, LagSample  # noqa: E402
from offsets.refresh import store  # noqa: E402


def timed(func, repeat: int = 3) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        value = func()
        best = min(best, time.perf_counter() - started)
    return best, value


def every_sample_window(cluster: Cluster, connectors: list[str]) -> dict:
    """The baseline: how the refresh read the window before (every sample kept, newest first,
    the last N-1 of each partition kept)."""
    window: dict = defaultdict(list)
    keep = settings.LAG_WINDOW_SAMPLES - 1
    samples = (
        LagSample.objects.filter(cluster=cluster, connector__in=connectors)
        .order_by("-sampled_at")
        .values_list("connector", "topic", "partition", "committed", "lag_records")
    )
    for connector, topic, partition, committed, lag in samples.iterator():
        points = window[(connector, topic, partition)]
        if len(points) < keep and committed is not None:
            points.insert(0, LagPoint(committed, lag))
    return window


def fill_lag_samples(cluster: Cluster, refreshes: int, partitions: int) -> None:
    table = LagSample._meta.db_table
    start = datetime.now(UTC) - timedelta(minutes=refreshes)
    rows_per_sink = 50
    with transaction.atomic(), connection.cursor() as cursor:
        for minute in range(refreshes):
            at = start + timedelta(minutes=minute)
            cursor.executemany(
                f"INSERT INTO {table} (cluster_id, connector, topic, partition, sampled_at, "
                "committed, log_end, lag_records, lag_ms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        cluster.pk,
                        f"sink-{p // rows_per_sink}",
                        "events",
                        p % rows_per_sink,
                        at.isoformat(sep=" "),
                        minute * 10,
                        minute * 10 + 5,
                        5,
                        100,
                    )
                    for p in range(partitions)
                ],
            )


def write_run(root: Path, run: int, keys: int) -> None:
    """A refresh's run folder with one commit of every key (a read task's file)."""
    rows = pa.table(
        {
            "connector": ["jdbc"] * keys,
            "topic": ["connect-offsets"] * keys,
            "key_hash": [f"{index:040x}" for index in range(keys)],
            "kafka_partition": [index % 25 for index in range(keys)],
            "kafka_offset": [run * keys + index for index in range(keys)],
            "timestamp_ms": [1_790_000_000_000 + run * 60_000] * keys,
            "progress": [float(run)] * keys,
            "offset_json": [f'{{"position":{run}}}'] * keys,
        }
    )
    history_files.write_commits(rows, root / f"run={run}", "part-0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refreshes", type=int, default=720, help="refreshes, a minute apart")
    parser.add_argument("--sink-partitions", type=int, default=1000)
    parser.add_argument(
        "--keys", type=int, default=2000, help="source partitions of the chart's connector"
    )
    parser.add_argument("--bucket-days", type=int, default=90, help="days of commit buckets")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    cluster = Cluster.objects.create(name="bench", bootstrap_servers="127.0.0.1:9")
    sinks = sorted({f"sink-{p // 50}" for p in range(args.sink_partitions)})

    print(
        f"Lag samples: {args.refreshes} refreshes x {args.sink_partitions} sink partitions ...",
        flush=True,
    )
    fill_lag_samples(cluster, args.refreshes, args.sink_partitions)
    before, old = timed(lambda: every_sample_window(cluster, sinks))
    after, new = timed(lambda: sinks.recent_samples(cluster, sinks))
    assert dict(old) == dict(new), "the two windows differ"
    print(f"  {LagSample.objects.count():,} samples kept")
    print(f"  window read, every sample (before)   {before * 1000:8.1f} ms")
    print(
        f"  window read, last samplings (now)    {after * 1000:8.1f} ms   {before / after:6.1f}x faster"
    )
    started = time.perf_counter()
    sinks.drop_expired_lag_samples(cluster, now_ms=int(time.time() * 1000) + 7 * 86_400_000)
    print(
        f"  retention: dropping all but the window's samples took {time.perf_counter() - started:.2f} s, "
        f"{LagSample.objects.count():,} left"
    )

    root = history_store.history_path(cluster)
    print(f"History: {args.refreshes} run folders of {args.keys} commits ...", flush=True)
    for run in range(1, args.refreshes + 1):
        write_run(root, run, args.keys)

    def chart(of: Cluster = cluster):
        return history.partition_history(cluster=of, connector="jdbc", key_hash=f"{7:040x}")

    before, old = timed(chart)
    started = time.perf_counter()
    merges = 0
    # As the loop would have: a merge check after each refresh. Here all at once, so repeat
    # until the folders are as few as the loop would have left.
    while history_files.compact_runs(root, history_files.MAX_RUN_FOLDERS) is not None:
        merges += 1
    merged_in = time.perf_counter() - started
    after, new = timed(chart)
    assert [p.kafka_offset for p in old] == [p.kafka_offset for p in new], "the charts differ"
    folders = len(history_files.run_folders(root))
    print(
        f"  chart of one partition, {args.refreshes} folders (before)   {before * 1000:8.1f} ms  ({len(old)} points)"
    )
    print(
        f"  chart after merging into {folders} folders (now)  {after * 1000:8.1f} ms   {before / after:6.1f}x faster"
    )
    print(f"  merging: {merges} merges, {merged_in:.2f} s")

    # The loop's own cost of merging: folders written one refresh at a time, merged as they come.
    looping = Cluster(name="loop")
    loop_root = history_store.history_path(looping)
    spent, merges = 0.0, 0
    for run in range(1, args.refreshes + 1):
        write_run(loop_root, run, args.keys)
        started = time.perf_counter()
        merges += history_files.compact_runs(loop_root, history_files.MAX_RUN_FOLDERS) is not None
        spent += time.perf_counter() - started
    loop_chart, points = timed(lambda: chart(looping))
    assert len(points) == args.refreshes
    print(
        f"  in a loop: {merges} merges over {args.refreshes} refreshes, {spent:.2f} s in all "
        f"({spent / args.refreshes * 1000:.1f} ms per refresh); "
        f"{len(history_files.run_folders(loop_root))} folders left, a chart over them "
        f"{loop_chart * 1000:.1f} ms"
    )

    print(f"Commit buckets: {args.bucket_days} days of 50 connectors ...", flush=True)
    fill_buckets(cluster, args.bucket_days)
    with_index = timed(lambda: add_bucket_counts(cluster))[0]
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX offsets_bucket_time")
    without_index = timed(lambda: add_bucket_counts(cluster))[0]
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX offsets_bucket_time ON {CommitBucket._meta.db_table} "
            "(cluster_id, bucket_start)"
        )
    print(f"  {CommitBucket.objects.count():,} buckets kept")
    print(f"  adding a refresh's counts, no time index (before) {without_index * 1000:8.1f} ms")
    print(
        f"  adding a refresh's counts, time index (now)       {with_index * 1000:8.1f} ms"
        f"   {without_index / with_index:6.1f}x faster"
    )


def fill_buckets(cluster: Cluster, days: int) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    with transaction.atomic(), connection.cursor() as cursor:
        for connector in range(50):
            cursor.executemany(
                f"INSERT INTO {CommitBucket._meta.db_table} "
                "(cluster_id, connector, bucket_start, commits) VALUES (%s, %s, %s, %s)",
                [
                    (
                        cluster.pk,
                        f"source-{connector}",
                        (end - timedelta(minutes=5 * i)).isoformat(sep=" "),
                        10,
                    )
                    for i in range(1, 288 * days + 1)
                ],
            )


def add_bucket_counts(cluster: Cluster) -> None:
    """What a refresh does with its new commits' buckets (rolled back, to repeat it)."""
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    counts = {(f"source-{connector}", start): 5 for connector in range(50)}
    with transaction.atomic():
        store.add_commit_buckets(cluster, counts)
        transaction.set_rollback(True)


if __name__ == "__main__":
    main()
