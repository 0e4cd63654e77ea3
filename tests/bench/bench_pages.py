"""Page benchmark: server time of the pages and their htmx partials on a large cluster.

Seeds a fresh database directly (1,000 connector snapshots, one source connector with
10,000 partitions, commit buckets, sink partitions and lag samples), then times a few
hundred requests of each page and partial through Django's full request handler
(middleware, session, auth, template rendering), beside a trivial login-protected view on
the same stack as the baseline. Prints p50/p95 in ms, the ratio of p95 to the baseline's,
and the number of queries each request makes. It asserts nothing.

Two figures per page, in two tables: "uncached" empties the page cache before every request
(what the first request after a refresh costs), "cached" is the steady state between
refreshes (dashboard/pages/cache.py), which is what users see. The baseline is the same
trivial view in both, measured in the same interleaved loop.

    python -m tests.bench.bench_pages [--requests 300] [--database-url URL]

The database defaults to a new SQLite file in a temporary folder; with --database-url
postgres://... a test database is created beside the one named, and dropped at the end.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.support.production_env import loopback_production_env

GOAL_RATIO = 5.0
GOAL_MS = 150.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="timed requests per URL")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests per URL first")
    parser.add_argument("--connectors", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--database-url", help="default: a new SQLite file")
    return parser.parse_args()


def configure(args: argparse.Namespace) -> None:
    """Point Django at a database of our own before anything imports settings."""
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    else:
        folder = Path(tempfile.mkdtemp(prefix="bench-pages-"))
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    # Production-like: DEBUG would record every query and slow every request.
    os.environ.update(loopback_production_env())
    os.environ["OFFSETS_HISTORY_PATH"] = tempfile.mkdtemp(prefix="bench-pages-history-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django
    from django.conf import settings

    django.setup()
    settings.ROOT_URLCONF = "tests.bench.bench_pages"
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def trivial(request):
    """The baseline: what any logged-in request costs on this stack."""
    from django.http import HttpResponse

    return HttpResponse("ok", content_type="text/plain")


def _urlpatterns():
    from django.contrib.auth.decorators import login_required
    from django.urls import path

    from dashboard.urls import urlpatterns as dashboard

    return [path("bench/trivial/", login_required(trivial)), *dashboard]


def __getattr__(name: str):
    # ROOT_URLCONF points here; the patterns are built once Django is set up.
    if name == "urlpatterns":
        return _urlpatterns()
    raise AttributeError(name)


def seed(connectors: int, partitions: int) -> dict[str, str]:
    """Fill the database the way a refresh of a big cluster would; return names to request."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from offsets.models import (
        Cluster,
        CommitBucket,
        ConnectorSnapshot,
        LagSample,
        RefreshRun,
        RewindEvent,
        SinkPartitionLag,
        SourceOffset,
    )
    from offsets.models.refresh import key_hash

    now = timezone.now()
    cluster = Cluster.objects.create(name="bench", bootstrap_servers="127.0.0.1:9092")
    RefreshRun.objects.create(
        cluster=cluster,
        started_at=now - timedelta(seconds=60),
        finished_at=now - timedelta(seconds=30),
        status=RefreshRun.Status.SUCCEEDED,
        records_read=1_000_000,
        seconds=30,
    )
    states = ["RUNNING"] * 7 + ["PAUSED", "STOPPED", "FAILED"]
    statuses = ["OK"] * 8 + ["WARN", "ERR"]
    snapshots = []
    for index in range(connectors):
        sink = index % 3 == 0
        snapshots.append(
            ConnectorSnapshot(
                cluster=cluster,
                name=f"{'sink' if sink else 'source'}-{index:04d}",
                type="sink" if sink else "source",
                connector_class="io.example.SinkConnector"
                if sink
                else "io.example.SourceConnector",
                target_state="STARTED",
                runtime_state=states[index % len(states)],
                task_states={"0": "RUNNING", "1": "RUNNING"},
                task_count=2,
                deleted=index % 97 == 0,
                mirrormaker2=index % 50 == 1,
                own_offsets_topic="connect-offsets-eos" if index % 40 == 2 else "",
                sink_group=f"connect-sink-{index:04d}" if sink else "",
                config={"connector.class": "io.example.Connector", "tasks.max": "2"},
                partitions=4 if sink else 20,
                last_commit_at=now - timedelta(seconds=index),
                rewinds=int(index % 13 == 0),
                stalled_partitions=int(index % 17 == 0),
                malformed=int(index % 29 == 0),
                lag_records=index * 10 if sink else None,
                lag_ms=index * 1000 if sink else None,
                lag_status=statuses[index % len(statuses)],
                updated_at=now,
            )
        )
    big = "big-source"
    snapshots.append(
        ConnectorSnapshot(
            cluster=cluster,
            name=big,
            type="source",
            target_state="STARTED",
            runtime_state="RUNNING",
            task_states={str(i): "RUNNING" for i in range(8)},
            task_count=8,
            config={"connector.class": "io.example.JdbcSource", "connection.password": "x"},
            partitions=partitions,
            last_commit_at=now,
            lag_status="OK",
            updated_at=now,
        )
    )
    ConnectorSnapshot.objects.bulk_create(snapshots, batch_size=500)

    rows = []
    for index in range(partitions):
        partition = {"protocol": "1", "table": f"inventory.table_{index:05d}"}
        key = f'["{big}",{{"protocol":"1","table":"inventory.table_{index:05d}"}}]'.encode()
        rows.append(
            SourceOffset(
                cluster=cluster,
                connector=big,
                topic="connect-offsets",
                key_hash=key_hash(key),
                key_bytes=key,
                identity=f'{{"protocol":"1","table":"inventory.table_{index:05d}"}}',
                partition=partition,
                offset={"incrementing": index * 7, "timestamp": 1_790_000_000_000 + index},
                kafka_partition=index % 25,
                kafka_offset=index * 3,
                progress=float(index * 7),
                first_commit_at=now - timedelta(hours=8),
                last_commit_at=now - timedelta(seconds=index % 600),
                commits=480,
                rewinds=1 if index % 1000 == 0 else 0,
            )
        )
    SourceOffset.objects.bulk_create(rows, batch_size=1000)
    width = settings.COMMIT_BUCKET_SECONDS
    start = now.replace(second=0, microsecond=0) - timedelta(seconds=width * 288)
    CommitBucket.objects.bulk_create(
        CommitBucket(
            cluster=cluster,
            connector=big,
            bucket_start=start + timedelta(seconds=width * i),
            commits=partitions * width // 60,
        )
        for i in range(288)
    )
    RewindEvent.objects.bulk_create(
        RewindEvent(
            cluster=cluster,
            connector=big,
            topic="connect-offsets",
            key_hash=rows[i].key_hash,
            partition=rows[i].partition,
            at=now - timedelta(hours=1),
            kafka_partition=rows[i].kafka_partition,
            kafka_offset=i,
            from_progress=500.0,
            to_progress=100.0,
        )
        for i in range(0, partitions, 1000)
    )
    sink_names = [s.name for s in snapshots if s.type == "sink"]
    SinkPartitionLag.objects.bulk_create(
        (
            SinkPartitionLag(
                cluster=cluster,
                connector=name,
                group=f"connect-{name}",
                topic="orders",
                partition=p,
                committed=None if p == 3 else 1000 + p,
                log_start=0,
                log_end=1100 + p,
                lag_records=100,
                lag_ms=60_000,
                status=["OK", "OK", "WARN", "STALL"][p],
                sampled_at=now,
            )
            for name in sink_names
            for p in range(4)
        ),
        batch_size=1000,
    )
    lag_sink = sink_names[1]
    LagSample.objects.bulk_create(
        (
            LagSample(
                cluster=cluster,
                connector=lag_sink,
                topic="orders",
                partition=p,
                sampled_at=now - timedelta(minutes=500 - i),
                committed=1000 + i,
                log_end=1100 + 2 * i,
                lag_records=100 + i,
                lag_ms=60_000 + i * 100,
            )
            for i in range(500)
            for p in range(4)
        ),
        batch_size=1000,
    )
    write_history(cluster, big, rows, commits=HISTORY_COMMITS)
    return {"big": big, "sink": lag_sink, "rewound": rows[0].key_hash}


# Commits per partition in the Parquet history the progress chart reads (10,000 partitions:
# 480,000 commits, 8 hours of 1-minute flushes would be 4.8 million).
HISTORY_COMMITS = 48


def write_history(cluster, connector: str, offsets: list, *, commits: int) -> None:
    """Write per-commit history the way the refresh does (offsets.history.files): Parquet in
    run=/connector= folders, rows sorted by key_hash, in row groups of what Spark puts in
    1 MiB for these rows (~8,700 measured; 8,192 here), so the chart reads what it would."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from offsets.history.store import history_path

    folder = history_path(cluster) / "run=1" / f"connector={connector}"
    folder.mkdir(parents=True)
    start_ms = int(time.time() * 1000) - commits * 60_000
    columns: dict[str, list] = {
        "topic": [],
        "key_hash": [],
        "kafka_partition": [],
        "kafka_offset": [],
        "timestamp_ms": [],
        "progress": [],
        "offset_json": [],
    }
    for row in offsets:
        for commit in range(commits):
            progress = row.progress + commit * 7 - (500 if commit == commits // 2 else 0)
            columns["topic"].append(row.topic)
            columns["key_hash"].append(row.key_hash)
            columns["kafka_partition"].append(row.kafka_partition)
            columns["kafka_offset"].append(row.kafka_offset * commits + commit)
            columns["timestamp_ms"].append(start_ms + commit * 60_000)
            columns["progress"].append(progress)
            columns["offset_json"].append(json.dumps({"incrementing": int(progress)}))
    schema = pa.schema(
        [
            ("topic", pa.string()),
            ("key_hash", pa.string()),
            ("kafka_partition", pa.int32()),
            ("kafka_offset", pa.int64()),
            ("timestamp_ms", pa.int64()),
            ("progress", pa.float64()),
            ("offset_json", pa.string()),
        ]
    )
    table = pa.table(columns, schema=schema).sort_by(
        [("key_hash", "ascending"), ("timestamp_ms", "ascending"), ("kafka_offset", "ascending")]
    )
    pq.write_table(table, folder / "part-00000.snappy.parquet", row_group_size=8192)


def count_queries(client, url: str, headers: dict, *, cached: bool) -> tuple[int, int]:
    """Request the URL once; return its query count and response size."""
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if not cached:
        cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    # Counted now: each request (request_started) empties the connection's query log.
    return len(captured), len(response.content)


def measure(
    client, cases: list[tuple[str, str, dict]], requests: int, *, cached: bool
) -> dict[str, list[float]]:
    """Time every URL `requests` times, interleaved: a load spike on this shared machine
    then hits every URL alike instead of skewing one of them. Uncached, the page cache is
    emptied before each request, outside the timed part."""
    from django.core.cache import cache

    times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for _ in range(requests):
        for label, url, headers in cases:
            if not cached:
                cache.clear()
            started = time.perf_counter()
            client.get(url, headers=headers)
            times[label].append((time.perf_counter() - started) * 1000)
    return times


def main() -> int:
    args = parse_args()
    configure(args)

    from django.core.management import call_command
    from django.db import connection

    started = time.perf_counter()
    if args.database_url:
        original_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    else:
        call_command("migrate", verbosity=0, interactive=False)
    try:
        return run(args, started)
    finally:
        if args.database_url:
            connection.creation.destroy_test_db(original_name, verbosity=0)


def run(args: argparse.Namespace, started: float) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    names = seed(args.connectors, args.partitions)
    print(
        f"Seeded {args.connectors:,} connectors and one of {args.partitions:,} partitions "
        f"(history: {args.partitions * HISTORY_COMMITS:,} commits in Parquet) "
        f"on {connection.vendor} in {time.perf_counter() - started:.1f} s; "
        f"{args.requests} timed requests per URL after {args.warmup} to warm up."
    )
    user = get_user_model().objects.create_superuser("bench", password="bench-password")
    client = Client()
    client.force_login(user)

    base = "/clusters/bench/connectors/"
    big = f"{base}{names['big']}/"
    sink = f"{base}{names['sink']}/"

    def htmx(target: str) -> dict:
        return {"HX-Request": "true", "HX-Target": target}

    cases = [
        ("trivial view (baseline)", "/bench/trivial/", {}),
        ("clusters overview", "/", {}),
        ("  partial: clusters (poll)", "/", htmx("clusters")),
        ("connectors list (1,000)", base, {}),
        ("connectors list sorted by lag, sinks", f"{base}?type=sink&sort=-lag_records", {}),
        ("  partial: table (poll)", f"{base}?sort=-status", htmx("connectors-table")),
        ("  partial: table, search", f"{base}?q=source-09", htmx("connectors-table")),
        ("  partial: table, page 5", f"{base}?page=5", htmx("connectors-table")),
        ("connector detail (10,000 partitions)", big, {}),
        ("  partial: partitions, page 100", f"{big}?page=100", htmx("partitions")),
        ("  partial: partitions, search", f"{big}?q=table_0999", htmx("partitions")),
        ("  partial: partitions, sort commits", f"{big}?sort=-last_commit", htmx("partitions")),
        ("  partial: progress chart", f"{big}?partition={names['rewound']}", htmx("progress")),
        ("sink detail (lag charts)", sink, {}),
    ]
    for cached in (False, True):
        report(client, cases, args, cached=cached)
    print(f"\nGoal: p95 at most {GOAL_RATIO:g}x the trivial view's and under {GOAL_MS:g} ms.")
    return 0


def report(client, cases: list, args: argparse.Namespace, *, cached: bool) -> None:
    measured = []
    for label, url, headers in cases:
        try:
            for _ in range(args.warmup):
                queries, size = count_queries(client, url, headers, cached=cached)
        except Exception as exc:
            # A missing piece is reported; the rest is measured.
            print(f"{label}: not measured: {type(exc).__name__}: {exc}")
            continue
        measured.append((label, url, headers, queries, size))
    times = measure(
        client,
        [(label, url, headers) for label, url, headers, *_ in measured],
        args.requests,
        cached=cached,
    )
    title = (
        "cached (steady state between refreshes: what users see)"
        if cached
        else "uncached (page cache emptied before every request)"
    )
    print(f"\n{title}")
    print(
        f"{'page':40} {'p50 ms':>7} {'p95 ms':>7} {'p50/base':>8} {'p95/base':>8} "
        f"{'queries':>7} {'KiB':>6}  goal"
    )
    base50 = base95 = None
    for label, url, _, queries, size in measured:
        p50 = statistics.median(times[label])
        p95 = statistics.quantiles(times[label], n=20)[-1]
        if base95 is None:
            base50, base95 = p50, p95
        ratio = p95 / base95
        met = ratio <= GOAL_RATIO and p95 < GOAL_MS
        goal = "" if url == "/bench/trivial/" else ("ok" if met else "missed")
        print(
            f"{label:40} {p50:7.1f} {p95:7.1f} {p50 / base50:7.1f}x {ratio:7.1f}x "
            f"{queries:7d} {size / 1024:6.1f}  {goal}"
        )


if __name__ == "__main__":
    sys.exit(main())
