"""Benchmark the refresh over Spark Connect (SPARK_REMOTE) against local mode, on ~10,000,000
offsets records (issue 65).

    make bench-connect    # or: python -m tests.bench.bench_connect [--records 10000000 ...]

Seeds a bare embedded broker as `make bench-scale` does (tests/bench/seeding.py), then prints,
in one run:
- kcat's raw read of the offsets topics (the physical limit);
- two full refreshes in local mode (`local[2]`: the first with the session's start, then a
  warm one), in a child process that refreshes as the scheduler does
  (tests/support/connect_refresh.py), with the peak RSS of its process tree (its Spark JVM
  and Python workers included);
- the same two full refreshes on a Spark Connect server on this machine (tests/support/
  spark_connect.py: pyspark's own server, `local[2]`, the same two cores), the child's peak
  RSS and the server's apart;
- whether the two stored the same results (every result row, and the history's rows);
- `manage.py scheduler` itself, once in local mode and once with SPARK_REMOTE_FILE: its peak
  RSS (the process and its children) during its first refresh of the same records.

Ends with the ratios against the issue's goals; asserts nothing. The server runs on the same
two cores as everything else here: a company's Spark has cores of its own, so the times over
Connect are what the protocol and a second JVM cost, not what a cluster gains.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.processes import Peaks, tree_usage
from tests.support.production_env import loopback_production_env

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
CHILD_SECONDS = 3600
GOAL_SCHEDULER_BYTES = 250 * MIB
# Both modes' Spark: two task slots (the compose example's), the same driver heap.
LOCAL_MASTER = "local[2]"
# Settings of the bench process that must not reach a child of the other mode.
SPARK_VARIABLES = ("SPARK_MASTER", "SPARK_REMOTE", "SPARK_REMOTE_FILE", "SPARK_CONF")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument(
        "--skip-scheduler", action="store_true", help="leave out the two scheduler runs"
    )
    return parser.parse_args()


def configure(work: Path) -> None:
    """A database and history folder of our own, before anything imports the settings; the
    children inherit them."""
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
    os.environ.update(loopback_production_env())
    os.environ["OFFSETS_HISTORY_PATH"] = str(work / "history")
    os.environ["DJANGO_SETTINGS_MODULE"] = "dashboard.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for name in SPARK_VARIABLES:
        os.environ.pop(name, None)

    import django

    django.setup()


def tree_rss(pid: int):
    """The RSS of `pid`'s process tree now, for Peaks."""
    return lambda: tree_usage(pid)[1]


def child_env(mode: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SPARK_VARIABLES}
    env.update(PYTHONPATH=str(ROOT), **mode)
    return env


def refresh_twice(label: str, cluster: str, now_ms: int, mode: dict, log: Path, **more) -> dict:
    """Two full refreshes of `cluster` in a child process of `mode`; its report and peaks."""
    step = f"{cluster}:full:{now_ms}"
    started = time.monotonic()
    with log.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.support.connect_refresh", step, step],
            cwd=ROOT,
            env=child_env(mode),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        trees = {"child": child.pid, **more}
        with Peaks(**{name: tree_rss(pid) for name, pid in trees.items()}) as peak:
            out, _ = child.communicate(timeout=CHILD_SECONDS)
    if child.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"{label}: the refreshing child failed:\n{tail}")
    report = json.loads(out.strip().splitlines()[-1])
    report["wall"] = time.monotonic() - started
    report["peaks"] = peak.peaks
    failed = [run for run in report["runs"] if run["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{label}: a refresh failed: {failed[0]['error']}")
    first, second = (run["seconds"] for run in report["runs"])
    print(
        f"  {label + ': first full refresh (session start + refresh)':<62} {first:8.2f} s",
        flush=True,
    )
    print(f"  {label + ': warm full refresh, same session':<62} {second:8.2f} s", flush=True)
    print(
        f"    the child's process tree peaked at {peak.peaks['child'] / MIB:,.0f} MiB"
        + (" (no JVM in it)" if not report["jvm"] else " (its Spark JVM included)")
        + "".join(f"; the {name}'s at {peak.peaks[name] / MIB:,.0f} MiB" for name in more),
        flush=True,
    )
    return report


def same_results(first: str, second: str) -> dict[str, bool]:
    """Whether the two clusters' refreshes stored the same rows, model by model, and the
    same history."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from offsets.history import store as history_store
    from offsets.models import Cluster
    from tests.support.refresh_digest import COMPARED, stored_rows

    clusters = [Cluster.objects.get(name=name) for name in (first, second)]
    equal = {
        model.__name__: stored_rows(model, clusters[0]) == stored_rows(model, clusters[1])
        for model in COMPARED
    }

    def history(cluster) -> pa.Table:
        paths = sorted(history_store.history_path(cluster).glob("run=*/connector=*/*.parquet"))
        table = pa.concat_tables([pq.read_table(path) for path in paths])
        return table.sort_by([(name, "ascending") for name in table.column_names])

    one, other = (history(cluster) for cluster in clusters)
    equal[f"history ({one.num_rows:,} rows)"] = one.equals(other)
    return equal


def scheduler_peak(label: str, cluster: str, mode: dict, log: Path) -> tuple[int, float]:
    """Start `manage.py scheduler` in `mode` with only `cluster` due; return its peak tree RSS
    until that cluster's first refresh ended, and the refresh's seconds."""
    from django.db import OperationalError

    from offsets.models import Cluster, RefreshRun

    Cluster.objects.filter(name=cluster).update(refresh_every_seconds=3600)
    with log.open("w") as out:
        scheduler = subprocess.Popen(
            [sys.executable, "manage.py", "scheduler", "--round-seconds", "1"],
            cwd=ROOT,
            env=child_env({**mode, "LOG_FORMAT": "plain"}),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    ended = RefreshRun.objects.filter(cluster__name=cluster, finished_at__isnull=False)

    def done() -> bool:
        try:
            return ended.exists()
        except OperationalError:  # SQLite: the scheduler's save holds the lock for a while
            return False

    try:
        with Peaks(scheduler=tree_rss(scheduler.pid)) as peak:
            deadline = time.monotonic() + CHILD_SECONDS
            while not done():
                if scheduler.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{label}: the scheduler ended or hung; see {log}")
                time.sleep(1)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(120)
        Cluster.objects.filter(name=cluster).update(refresh_every_seconds=0)
    run = ended.get()
    if run.status != RefreshRun.Status.SUCCEEDED:
        raise RuntimeError(f"{label}: the scheduler's refresh failed: {run.error}")
    print(
        f"  {label + ': its first refresh':<62} {run.seconds:8.2f} s   "
        f"peak {peak.peaks['scheduler'] / MIB:7,.0f} MiB",
        flush=True,
    )
    return peak.peaks["scheduler"], run.seconds


def seed(args: argparse.Namespace, bootstrap: str):
    """Seed the bare broker and time kcat's read; return the records and the read."""
    from tests.bench.seeding import OFFSETS_TOPICS, kcat_read, seed_bulk

    kafka = {"bootstrap.servers": bootstrap}
    commits = max(1, args.records // args.partitions)
    summary = seed_bulk(
        kafka, connectors=args.connectors, partitions=args.partitions, commits=commits
    )
    total = sum(summary.records_by_topic[topic] for topic in OFFSETS_TOPICS)
    kcat = kcat_read(bootstrap, OFFSETS_TOPICS)
    print(f"  {'kcat, raw read of ' + ', '.join(OFFSETS_TOPICS):<62} {kcat.text}", flush=True)
    return total, kcat


def measure(args: argparse.Namespace, work: Path, bootstrap: str) -> dict:
    from offsets.models import Cluster
    from tests.support.spark_connect import connect_server

    names = ("local", "connect", "scheduler-local", "scheduler-connect")
    for name in names:
        Cluster.objects.create(name=name, bootstrap_servers=bootstrap, refresh_every_seconds=0)
    total, kcat = seed(args, bootstrap)
    # One clock for both modes' refreshes: the stall rule reads it, so equal results need it.
    now_ms = int(time.time() * 1000)
    local_mode = {"SPARK_MASTER": LOCAL_MASTER}
    figures = {"records": total, "kcat": kcat.seconds}
    figures["local"] = refresh_twice("local[2]", "local", now_ms, local_mode, work / "local.log")
    root = work / "connect-server"
    root.mkdir()
    started = time.monotonic()
    with connect_server(root) as server:
        print(
            f"  {'Spark Connect server up (local[2], this machine)':<62} "
            f"{time.monotonic() - started:8.2f} s",
            flush=True,
        )
        connect_mode = {"SPARK_REMOTE_FILE": str(server.url_file)}
        figures["connect"] = refresh_twice(
            "Spark Connect",
            "connect",
            now_ms,
            connect_mode,
            work / "connect.log",
            server=server.process.pid,
        )
        figures["equal"] = same_results("local", "connect")
        print(f"  same results as local mode: {figures['equal']}", flush=True)
        if not args.skip_scheduler:
            figures["scheduler_local"] = scheduler_peak(
                "scheduler, local[2]", "scheduler-local", local_mode, work / "sched-local.log"
            )
            figures["scheduler_connect"] = scheduler_peak(
                "scheduler, SPARK_REMOTE_FILE",
                "scheduler-connect",
                connect_mode,
                work / "sched-connect.log",
            )
    return figures


def print_ratios(figures: dict) -> None:
    local = [run["seconds"] for run in figures["local"]["runs"]]
    connect = [run["seconds"] for run in figures["connect"]["runs"]]
    kcat = figures["kcat"]
    print(f"\nRatios ({figures['records']:,} offsets records; goals of issue 65, not asserted):")
    print(
        f"  full refresh over Connect / local[2]   first {connect[0] / local[0]:.2f}x, "
        f"warm {connect[1] / local[1]:.2f}x"
    )
    if kcat:
        print(
            f"  full refresh / kcat read               local warm {local[1] / kcat:.2f}x, "
            f"Connect warm {connect[1] / kcat:.2f}x"
        )
    same = all(figures["equal"].values())
    print(f"  stored results                         {'the same' if same else 'DIFFERENT'}")
    peaks = figures["connect"]["peaks"]
    print(
        f"  refreshing process, peak RSS           {peaks['child'] / MIB:,.0f} MiB over Connect "
        f"vs {figures['local']['peaks']['child'] / MIB:,.0f} MiB local "
        f"(the server: {peaks['server'] / MIB:,.0f} MiB)"
    )
    if "scheduler_connect" in figures:
        remote, local_peak = figures["scheduler_connect"][0], figures["scheduler_local"][0]
        print(
            f"  scheduler, peak RSS during a refresh   {remote / MIB:,.0f} MiB with SPARK_REMOTE "
            f"vs {local_peak / MIB:,.0f} MiB local ({remote / local_peak:.2f}x; "
            f"goal < {GOAL_SCHEDULER_BYTES / MIB:.0f} MiB)"
        )


def main() -> int:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="offsets-bench-connect-"))
    configure(work)
    from django.core.management import call_command

    from devkit.embedded import EmbeddedKafka
    from tests.support.spark_cluster import java_and_pyspark_missing

    missing = java_and_pyspark_missing()
    if missing:
        print(f"Not measured: {missing}")
        return 1
    call_command("migrate", verbosity=0, interactive=False)
    broker = EmbeddedKafka(work / "kafka")
    info = broker.start(worker=False)
    try:
        figures = measure(args, work, info.bootstrap_servers)
    finally:
        broker.stop()
    print_ratios(figures)
    print(f"(logs in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
