"""Benchmark the refresh and the pages on ~10,000,000 offsets records (issue 36).

    make bench-scale      # or: python -m tests.bench.bench_scale [--records 10000000 ...]

Seeds a bare embedded broker (tests/bench/seeding.py, as bench_refresh does), then prints:
kcat's raw read of the offsets topics (the physical limit), the full refresh on `local[2]`
(cold: session start + refresh; then warm), the same full refresh on a Spark standalone master
with two workers (tests/support/spark_cluster.py; the driver in a child process, as
tests/support/standalone_refresh.py runs it) and whether its stored results equal local
mode's, an incremental refresh after 1% new records, the peak RSS of the whole process tree
(this process, the Spark driver JVMs and their Python workers, the standalone daemons and
executors; the broker excluded), the rows stored and the database size, and the pages'
p50/p95 on that data against a trivial view (bench_pages' timing), the first request after
the refresh included. The same refresh at --compare-records runs first, in a child process of
its own (a cold JVM, a broker and a database of its own), for the memory line "N vs M".
Ends with the ratios against the issue's goals; asserts nothing.
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.processes import Peaks
from tests.support.production_env import loopback_production_env

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30
# The standalone cluster's executors: one core each, two in all, as the standalone test runs.
EXECUTOR_CONF = "spark.executor.memory=512m,spark.executor.cores=1,spark.cores.max=2"
CHILD_SECONDS = 3600
GOAL_KCAT_RATIO = 2.0
GOAL_PEAK_BYTES = 3 * GIB
GOAL_PAGE_RATIO = 5.0
# The steps whose tree is this process, its local[2] JVM and its Python workers only.
LOCAL_STEPS = ("cold", "warm", "incremental")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument(
        "--compare-records",
        type=int,
        default=1_000_000,
        help="the smaller size of the memory line, run first (0 skips it)",
    )
    parser.add_argument("--skip-standalone", action="store_true")
    parser.add_argument("--requests", type=int, default=100, help="timed requests per URL")
    parser.add_argument("--database-url", help="default: a new SQLite file")
    # The compare run: this script in a child process, reporting to a JSON file.
    parser.add_argument("--memory-only", metavar="REPORT_JSON", help=argparse.SUPPRESS)
    return parser.parse_args()


def configure(args: argparse.Namespace, work: Path) -> None:
    """Point Django at a database and history folder of our own before anything imports settings."""
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{work / 'bench.sqlite3'}"
    # Production-like: DEBUG would record every query and slow every request.
    os.environ.update(loopback_production_env())
    os.environ["OFFSETS_HISTORY_PATH"] = str(work / "history")
    os.environ["DJANGO_SETTINGS_MODULE"] = "dashboard.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    import django
    from django.conf import settings

    django.setup()
    # bench_pages' URLs: the dashboard's, plus its trivial view as the baseline.
    settings.ROOT_URLCONF = "tests.bench.bench_pages"
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def tree_rss_bytes(root: int, exclude: int | None) -> int:
    """RSS of `root` and its descendants, except `exclude` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended between the listing and the read
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page
    total, todo = 0, [root]
    while todo:
        current = todo.pop()
        if current == exclude:
            continue
        total += rss.get(current, 0)
        todo.extend(children.get(current, []))
    return total


class Results:
    """Each measured step's seconds and its peak tree memory, printed as it ends."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.seconds: dict[str, float] = {}
        self.peaks: dict[str, int] = {}

    def measure(self, key: str, label: str, func):
        started = time.monotonic()
        # This process's tree, the broker's excluded.
        tree = Peaks(tree=lambda: tree_rss_bytes(os.getpid(), self.broker_pid))
        with tree as memory:
            value = func()
        self.seconds[key] = time.monotonic() - started
        self.peaks[key] = memory.peaks["tree"]
        print(
            f"  {label:<52} {self.seconds[key]:8.2f} s   tree peak "
            f"{self.peaks[key] / 2**20:7.0f} MiB",
            flush=True,
        )
        return value

    def peak(self, *keys: str) -> int:
        return max((self.peaks[key] for key in keys if key in self.peaks), default=0)


def results_digest(cluster) -> tuple[str, dict[str, int]]:
    """A hash over the stored source offsets' key fields, sorted, and the rows per result
    model: equal for two refreshes with equal results, cheap at tens of thousands of rows."""
    from offsets.models import (
        CommitBucket,
        ConnectorSnapshot,
        KeyDrift,
        MalformedCount,
        RewindEvent,
        SourceOffset,
    )

    fields = (
        "topic",
        "key_hash",
        "connector",
        "identity",
        "offset_text",
        "kafka_partition",
        "kafka_offset",
        "progress",
        "commits",
        "rewinds",
        "stalled",
        "effective",
    )
    digest = hashlib.sha256()
    rows = SourceOffset.objects.filter(cluster=cluster).order_by("topic", "key_hash")
    for row in rows.values_list(*fields).iterator(chunk_size=5000):
        digest.update(repr(row).encode())
    counts = {
        model.__name__: model.objects.filter(cluster=cluster).count()
        for model in (
            SourceOffset,
            CommitBucket,
            RewindEvent,
            KeyDrift,
            MalformedCount,
            ConnectorSnapshot,
        )
    }
    return digest.hexdigest()[:16], counts


def refresh_on_standalone(spark_cluster, cluster_name: str, now_ms: int, log: Path) -> dict:
    """Two full refreshes (the session's first, then a warm one) in a child process whose
    session's master is the standalone cluster; return its report."""
    from tests.support.db_faults import database_url

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SPARK_MASTER": spark_cluster.master_url,
        "SPARK_CONF": EXECUTOR_CONF,
        # The driver on loopback, where the executors reach it.
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    with log.open("w") as stderr:
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.support.standalone_refresh",
                cluster_name,
                str(now_ms),
                str(now_ms),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=CHILD_SECONDS,
        )
    if child.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"the refresh on the standalone cluster failed:\n{tail}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def run_standalone(results: Results, cluster, now_ms: int, work: Path) -> dict:
    """Start a master and two workers, run the full refreshes on them, stop them; return
    the child's report with the cluster's start time."""
    from tests.support.spark_cluster import java_and_pyspark_missing, standalone_cluster

    missing = java_and_pyspark_missing()
    if missing:
        print(f"  standalone: not measured ({missing})", flush=True)
        return {}
    root = work / "standalone"
    root.mkdir()
    # This process's local[2] JVM stays up (idle) meanwhile: the tree's size now is what the
    # standalone phase's peak is read against.
    before = tree_rss_bytes(os.getpid(), results.broker_pid)
    started = time.monotonic()
    with standalone_cluster(root, workers=2, cores=1, memory="1g") as spark_cluster:
        start_seconds = time.monotonic() - started
        print(f"  {'standalone: master + 2 workers up':<52} {start_seconds:8.2f} s", flush=True)
        report = results.measure(
            "standalone",
            "standalone: child driver, 2 full refreshes",
            lambda: refresh_on_standalone(spark_cluster, cluster.name, now_ms, root / "driver.log"),
        )
    added = results.peaks["standalone"] - before
    print(
        f"    of which the cluster and its driver: {added / 2**20:.0f} MiB "
        f"(the tree held {before / 2**20:.0f} MiB before it started)",
        flush=True,
    )
    report["added_bytes"] = added
    for n, run in enumerate(report["runs"], start=1):
        label = "session start excluded; first of the session" if n == 1 else "warm"
        print(f"    full refresh {n} ({label}): {run['seconds']:.2f} s {run['status']}", flush=True)
    return report


def local_refreshes(results: Results, cluster, now_ms: int):
    """The cold and warm full refreshes on local[2]; return the session."""
    from django.conf import settings

    from offsets.refresh.run import run_refresh
    from offsets.spark.session import get_spark

    def cold():
        spark = get_spark("local[2]", settings.SPARK_CONF)
        return spark, run_refresh(cluster=cluster, full=True, spark=spark, now_ms=now_ms)

    spark, run = results.measure("cold", "local[2] cold: session start + full refresh", cold)
    assert run.status == "succeeded", run.error
    run = results.measure(
        "warm",
        "local[2] warm: full refresh, same session",
        lambda: run_refresh(cluster=cluster, full=True, spark=spark, now_ms=now_ms),
    )
    assert run.status == "succeeded", run.error
    return spark


def incremental(results: Results, cluster, spark, kafka: dict, new: int) -> None:
    """Write 1% new commits of the stored keys, then time an incremental refresh."""
    from offsets.models import SourceOffset
    from offsets.refresh.run import run_refresh
    from tests.bench.seeding import write_new_offsets

    keys = [
        bytes(key)
        for key in SourceOffset.objects.filter(cluster=cluster, topic="connect-offsets")
        .order_by("key_hash")
        .values_list("key_bytes", flat=True)
    ]
    write_new_offsets(kafka, keys, new, 10**9)
    run = results.measure(
        "incremental",
        f"local[2] incremental after {new:,} new records (1%)",
        lambda: run_refresh(cluster=cluster, spark=spark),
    )
    assert run.status == "succeeded" and run.records_read == new, (run.records_read, run.error)


def database_size() -> int:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return cursor.fetchone()[0]
    name = Path(connection.settings_dict["NAME"])
    return sum(path.stat().st_size for path in name.parent.glob(f"{name.name}*"))


def print_storage() -> int:
    """Print the rows stored per model (the empty ones left out) and the database size."""
    from django.apps import apps

    counts = {
        model.__name__: model.objects.count()
        for model in apps.get_app_config("offsets").get_models()
    }
    print(
        "Rows stored: " + ", ".join(f"{name} {n:,}" for name, n in counts.items() if n), flush=True
    )
    size = database_size()
    print(f"Database size: {size / 2**20:,.1f} MiB", flush=True)
    return size


def page_cases(cluster) -> list[tuple[str, str, dict]]:
    """The trivial view, the connectors list, the largest connector and its progress chart."""
    from offsets.models import ConnectorSnapshot, SourceOffset

    largest = (
        ConnectorSnapshot.objects.filter(cluster=cluster).order_by("-partitions", "name").first()
    )
    key_hash = (
        SourceOffset.objects.filter(cluster=cluster, connector=largest.name, effective=True)
        .order_by("key_hash")
        .values_list("key_hash", flat=True)
        .first()
    )
    base = f"/clusters/{cluster.name}/connectors/"
    detail = f"{base}{largest.name}/"
    progress = {"HX-Request": "true", "HX-Target": "progress"}
    return [
        ("trivial view (baseline)", "/bench/trivial/", {}),
        ("connectors list", base, {}),
        (f"largest connector ({largest.partitions:,} partitions)", detail, {}),
        ("  its progress chart (htmx)", f"{detail}?partition={key_hash}", progress),
    ]


def logged_in_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_superuser("bench", password="bench-password")
    client = Client()
    client.force_login(user)
    return client


def warm_pages(client, cases: list) -> None:
    """Request every page a few times, so the timed ones find a running server (templates
    compiled, connections open), as the first request after a refresh would."""
    from tests.bench.bench_pages import count_queries

    for _ in range(3):
        for _, url, headers in cases:
            count_queries(client, url, headers, cached=False)


def time_pages(client, cases: list, requests: int) -> dict[str, float]:
    """Each URL's first request after the refresh, then `requests` uncached ones: print
    p50/p95 against the trivial view's; return the p95 ratios."""
    from tests.bench.bench_pages import measure

    first = {}
    for label, url, headers in cases:
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        first[label] = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
    times = measure(client, cases, requests, cached=False)
    print(f"  {'page (uncached)':<44} {'first':>7} {'p50 ms':>7} {'p95 ms':>7} {'p95/base':>8}")
    ratios, base95 = {}, None
    for label, _, _ in cases:
        samples = [first[label], *times[label]]
        p50, p95 = statistics.median(samples), statistics.quantiles(samples, n=20)[-1]
        base95 = base95 or p95
        ratios[label] = p95 / base95
        print(f"  {label:<44} {first[label]:7.1f} {p50:7.1f} {p95:7.1f} {p95 / base95:7.1f}x")
    return ratios


def run_compare(args: argparse.Namespace, work: Path) -> dict:
    """The same seeding and local refreshes at --compare-records, in a child process."""
    report = work / "compare.json"
    command = [
        sys.executable,
        "-m",
        "tests.bench.bench_scale",
        f"--connectors={args.connectors}",
        f"--partitions={args.partitions}",
        f"--records={args.compare_records}",
        f"--memory-only={report}",
    ]
    print(
        f"== {args.compare_records:,} records (child process, for the memory line) ==", flush=True
    )
    subprocess.run(command, cwd=ROOT, check=True, timeout=CHILD_SECONDS)
    print(f"== {args.records:,} records ==", flush=True)
    return json.loads(report.read_text())


def seed_and_read(args: argparse.Namespace, kafka: dict):
    """Seed the bare broker and time kcat's read; return the offsets records and the read."""
    from tests.bench.seeding import OFFSETS_TOPICS, kcat_read, seed_bulk

    commits = max(1, args.records // args.partitions)
    summary = seed_bulk(
        kafka, connectors=args.connectors, partitions=args.partitions, commits=commits
    )
    total = sum(summary.records_by_topic[topic] for topic in OFFSETS_TOPICS)
    kcat = kcat_read(kafka["bootstrap.servers"], OFFSETS_TOPICS)
    print(f"  {'kcat, raw read of ' + ', '.join(OFFSETS_TOPICS):<52} {kcat.text}", flush=True)
    return total, kcat


def measure_all(args: argparse.Namespace, work: Path, info) -> dict:
    """Everything at --records on the running broker; return the figures the ratios need."""
    from offsets.models import Cluster

    kafka = {"bootstrap.servers": info.bootstrap_servers}
    total, kcat = seed_and_read(args, kafka)
    cluster = Cluster.objects.create(name="scale", bootstrap_servers=info.bootstrap_servers)
    results = Results(broker_pid=info.pid)
    # One clock for every full refresh: the stall rule reads it, so equal results need it.
    now_ms = int(time.time() * 1000)
    spark = local_refreshes(results, cluster, now_ms)
    figures = {"records": total, "kcat": kcat.seconds, "results": results}
    if args.memory_only:
        spark.stop()
        return figures
    local = results_digest(cluster)
    print(f"  local results: digest {local[0]}, rows {local[1]}", flush=True)
    if not args.skip_standalone:
        report = run_standalone(results, cluster, now_ms, work)
        if report:
            standalone = results_digest(cluster)
            print(f"  standalone results: digest {standalone[0]}, rows {standalone[1]}")
            figures["standalone_runs"] = [run["seconds"] for run in report["runs"]]
            figures["standalone_equal"] = standalone == local
            figures["standalone_bytes"] = report["added_bytes"]
    client = logged_in_client()
    cases = page_cases(cluster)
    warm_pages(client, cases)
    incremental(results, cluster, spark, kafka, max(1, total // 100))
    spark.stop()
    figures["database_bytes"] = print_storage()
    print(f"Pages after the incremental refresh ({args.requests} uncached requests per URL)")
    figures["page_ratios"] = time_pages(client, cases, args.requests)
    return figures


def print_ratios(args: argparse.Namespace, figures: dict, compare: dict | None) -> None:
    """The issue's goals, as ratios measured in this run."""
    results = figures["results"]
    warm, peak = results.seconds["warm"], results.peak(*LOCAL_STEPS)
    print(f"\nRatios ({figures['records']:,} offsets records; goals of issue 36, not asserted):")
    if figures["kcat"]:
        ratio = warm / figures["kcat"]
        print(
            f"  warm full refresh / kcat read       {ratio:6.2f}x   (goal <= {GOAL_KCAT_RATIO:g}x)"
        )
        print(
            f"  cold full refresh / kcat read       {results.seconds['cold'] / figures['kcat']:6.2f}x"
        )
    else:
        print("  full refresh / kcat read            not measured (no kcat)")
    print(f"  incremental / warm full refresh     {results.seconds['incremental'] / warm:6.1%}")
    print(f"  peak memory of the tree, local[2]   {peak / GIB:6.2f} GiB (goal < 3 GiB)")
    if compare:
        print(
            f"  peak memory, {figures['records']:,} vs {compare['records']:,} records "
            f"{peak / GIB:.2f} vs {compare['peak'] / GIB:.2f} GiB "
            f"({peak / compare['peak']:.2f}x for {figures['records'] / compare['records']:.1f}x "
            "the records; goal: not growing)"
        )
    if "standalone_equal" in figures:
        same = "same as local" if figures["standalone_equal"] else "DIFFERENT FROM LOCAL"
        first, second = figures["standalone_runs"]
        print(
            f"  standalone cluster results          {same} (goal: the same); "
            f"warm {second:.2f} s = {second / warm:.2f}x local's, first {first:.2f} s"
        )
        print(
            f"  peak memory, standalone phase       {results.peaks['standalone'] / GIB:6.2f} GiB "
            f"(the cluster and its driver: {figures['standalone_bytes'] / GIB:.2f} GiB, "
            "beside this process's idle local[2] JVM)"
        )
    else:
        print("  standalone cluster                  skipped")
    for label, ratio in list(figures["page_ratios"].items())[1:]:
        print(
            f"  p95 / trivial: {label.strip():<36} {ratio:5.1f}x   (goal <= {GOAL_PAGE_RATIO:g}x)"
        )
    print(f"  database size                       {figures['database_bytes'] / 2**20:,.1f} MiB")


def main() -> int:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="offsets-bench-scale-"))
    configure(args, work)
    from django.core.management import call_command

    from devkit.embedded import EmbeddedKafka

    compare = None
    if args.compare_records and not args.memory_only:
        compare = run_compare(args, work)
    call_command("migrate", verbosity=0, interactive=False)
    broker = EmbeddedKafka(work / "kafka")
    info = broker.start(worker=False)
    try:
        figures = measure_all(args, work, info)
    finally:
        broker.stop()
    results = figures["results"]
    if args.memory_only:
        report = {"records": figures["records"], "peak": results.peak(*LOCAL_STEPS)}
        Path(args.memory_only).write_text(json.dumps(report))
        return 0
    print_ratios(args, figures, compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
