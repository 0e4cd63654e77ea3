"""Benchmark the live loop at fleet size: what a round costs at 10 and at 1,000 connectors.

    make bench-live-scale   # or: python -m tests.bench.bench_live_scale [--records 10000000 ...]

On one embedded broker (no worker: Connect's topics are written as the Java runtime writes
them, by the demo's writer), for each scale in turn, emptied between them:
- the demo's dozen connectors alone (six hours of history), then with --connectors bulk
  sources of three partitions each (1,000 and 3,000 by default) and --records of their
  history in the offsets topic;
- a full refresh (its time and the records it read);
- `refresh_offsets --every 1` in a process of its own while a writer commits --rate new
  offsets a second (each a later value of a partition the runtime already wrote, to the
  offsets topic partition Connect's producer would choose), for --seconds after
  --warmup-seconds not counted (the loop's first Spark job): freshness (the
  commit's write -> the database holds it) p50/p95/p99/max, CPU seconds per round and the
  loop's share of a core (its process tree: Python, Spark's JVM, its Python workers), round
  times p50/p95/max, peak RSS and its first and last minute, where a round's time goes (its
  phases, from the loop's log);
- then --quiet-seconds with no writer: the CPU of a round that has nothing new.
--touch N commits to the partitions of N connectors only, at both scales: the same change in
a fleet of another size (by default the writer goes round all partitions, so at fleet size
the same commit rate touches more connectors a round).
Each figure has the load average beside it; the ratios between the two scales end the
report. Asserts nothing.
"""

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.bench.processes import django_workdir

WORK = django_workdir("offsets-bench-live-scale-")

from django.core.management import call_command  # noqa: E402
from django.db import OperationalError  # noqa: E402

from devkit.demo import DemoOptions, build_demo  # noqa: E402
from devkit.demo_writer import write_demo  # noqa: E402
from devkit.embedded import EmbeddedKafka  # noqa: E402
from offsets.models import Cluster, RefreshRun, SourceOffset  # noqa: E402
from offsets.refresh.run import run_refresh  # noqa: E402
from tests.bench.live_writer import Writer, offsets_to_move  # noqa: E402
from tests.bench.processes import ROOT, cuts, load, manage, stop, tree_usage  # noqa: E402
from tests.bench.seeding import kcat_read  # noqa: E402
from tests.support.scratch_broker import empty_broker  # noqa: E402

PHASE = re.compile(r"^\[\s*([\d.]+)s\] (.*)$")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=1000, help="bulk sources at scale")
    parser.add_argument("--records", type=int, default=2_000_000, help="history at scale")
    parser.add_argument("--rate", type=float, default=50, help="new commits a second")
    parser.add_argument("--seconds", type=float, default=180, help="the loop watched")
    parser.add_argument(
        "--ten-seconds", type=float, help="the loop watched at ten connectors (default --seconds)"
    )
    parser.add_argument("--quiet-seconds", type=float, default=30, help="no writer")
    parser.add_argument(
        "--touch",
        type=int,
        help="commit only to the partitions of this many connectors at both scales (the same "
        "change at both; default: every partition, round robin)",
    )
    parser.add_argument("--warmup-seconds", type=float, default=10, help="writing, not counted")
    parser.add_argument(
        "--streaming-probe",
        action="store_true",
        help="also run Structured Streaming's floor (tests/bench/streaming_probe.py) at each scale",
    )
    return parser.parse_args()


def settle(cluster: Cluster, writer: Writer, freshness: list[float]) -> None:
    """Record the commits the database now holds (the value written, or a later one)."""
    with writer.lock:
        keys = [key for key, pending in writer.pending.items() if pending]
    if not keys:
        return
    shown = dict(
        SourceOffset.objects.filter(cluster=cluster, key_bytes__in=keys).values_list(
            "key_bytes", "offset_text"
        )
    )
    now = time.time()
    with writer.lock:
        for key in keys:
            text = shown.get(bytes(key))
            if text is None:
                continue
            held = json.loads(text)
            pending = writer.pending[key]
            values = [offset for _, offset in pending]
            if held in values:
                upto = values.index(held) + 1
                freshness.extend(now - at for at, _ in pending[:upto])
                del pending[:upto]


def seed(kafka: dict, name: str, bulk: int, records: int) -> Cluster:
    empty_broker(kafka["bootstrap.servers"])
    # The demo's own dozen keep its six hours; the bulk sources' history is --records long.
    hours = records / (bulk * 3 * 60) if bulk else 6.0
    options = DemoOptions(
        end_ms=int(time.time() * 1000),
        hours=hours,
        bulk_connectors=bulk,
        bulk_partitions=bulk * 3,
    )
    started = time.monotonic()
    summary = write_demo(kafka, build_demo(options))
    total = summary.records_by_topic.get("connect-offsets", 0)
    print(
        f"  seeded {len(build_demo(options).connectors):,} connectors, {total:,} offsets "
        f"records in {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return Cluster.objects.create(name=name, bootstrap_servers=kafka["bootstrap.servers"])


def touching(rows: list[tuple[bytes, dict]], connectors: int | None) -> list[tuple[bytes, dict]]:
    """The writer's partitions: those of the first `connectors` connectors by name (all: None)."""
    if connectors is None:
        return rows
    names = sorted({json.loads(key)[0] for key, _ in rows})[:connectors]
    return [(key, offset) for key, offset in rows if json.loads(key)[0] in names]


def phases(log: Path) -> dict[str, float]:
    """Mean seconds per round of each phase of the loop's log (its time to the next line)."""
    spent: dict[str, list[float]] = defaultdict(list)
    previous: tuple[float, str] | None = None
    for line in log.read_text(errors="replace").splitlines():
        match = PHASE.match(line.strip())
        if not match:
            continue
        at, text = float(match[1]), re.sub(r"[\d,]+", "N", match[2])[:60]
        if previous and at >= previous[0]:
            spent[previous[1]].append(at - previous[0])
        previous = (at, text)
    return {text: statistics.mean(values) for text, values in spent.items() if values}


def watch(cluster: Cluster, loop, seconds: float, writer: Writer | None) -> dict:
    freshness: list[float] = []
    first = RefreshRun.objects.filter(cluster=cluster).order_by("-pk").first().pk
    cpu_start = tree_usage(loop.pid)[0]
    rss_samples: list[tuple[float, int]] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if writer:
            # The loop may hold SQLite's write lock: settled the next time.
            with contextlib.suppress(OperationalError):
                settle(cluster, writer, freshness)
        rss_samples.append((time.monotonic() - started, tree_usage(loop.pid)[1]))
        time.sleep(0.25)
    wall = time.monotonic() - started
    cpu = tree_usage(loop.pid)[0] - cpu_start
    runs = list(
        RefreshRun.objects.filter(cluster=cluster, pk__gt=first, status="succeeded").values_list(
            "seconds", flat=True
        )
    )
    return {
        "freshness": freshness,
        "cpu": cpu,
        "wall": wall,
        "rounds": len(runs),
        "round_seconds": runs,
        "rss": rss_samples,
        "load": load(),
    }


def scale(args, kafka: dict, name: str, bulk: int, records: int) -> dict:
    print(f"\n== {name}: the demo's dozen and {bulk:,} bulk sources ==", flush=True)
    cluster = seed(kafka, name, bulk, records)
    kcat = kcat_read(kafka["bootstrap.servers"], [cluster.offsets_topic])
    started = time.monotonic()
    run = run_refresh(cluster=cluster, full=True)
    took = time.monotonic() - started
    print(
        f"  full refresh: {run.status}, {run.records_read:,} records in {took:.1f} s ({load()})"
        f"; kcat's raw read of {cluster.offsets_topic}: {kcat.text}"
        + (f", the refresh {took / kcat.seconds:.2f}x it" if kcat.seconds else ""),
        flush=True,
    )
    rows = touching(offsets_to_move(cluster), args.touch)
    log = WORK / f"loop-{name}.log"
    loop = manage("refresh_offsets", "--cluster", name, "--every", "1", log=log)
    try:
        # Measured once the loop's Spark is warm: its first round starts a session.
        while (
            RefreshRun.objects.filter(cluster=cluster, pk__gt=run.pk, status="succeeded").count()
            < 3
        ):
            time.sleep(0.5)
        writer = Writer(kafka, cluster.offsets_topic, rows, args.rate)
        writer.start()
        # Not counted: the loop's first Spark job (a round with nothing new starts none).
        watch(cluster, loop, args.warmup_seconds, writer)
        seconds = args.seconds if bulk or args.ten_seconds is None else args.ten_seconds
        busy = watch(cluster, loop, seconds, writer)
        writer.running = False
        writer.join(30)
        time.sleep(3)
        quiet = watch(cluster, loop, args.quiet_seconds, None)
    finally:
        stop(loop)
    report(name, busy, quiet, phases(log))
    if args.streaming_probe:
        streaming_probe(args, kafka, cluster, rows)
    return {"busy": busy, "quiet": quiet, "connectors": len(rows)}


def streaming_probe(args, kafka: dict, cluster: Cluster, rows: list) -> None:
    """Structured Streaming's floor beside the same writer: CPU a micro-batch, commits' age."""
    out, log = WORK / f"probe-{cluster.name}.json", WORK / f"probe-{cluster.name}.log"
    warmup = 20 + args.warmup_seconds  # its session's start and first micro-batches
    command = [
        sys.executable,
        "-m",
        "tests.bench.streaming_probe",
        "--topic",
        cluster.offsets_topic,
    ]
    command += ["--bootstrap", kafka["bootstrap.servers"], "--out", str(out)]
    command += ["--seconds", str(warmup + args.seconds)]
    writer = Writer(kafka, cluster.offsets_topic, rows, args.rate)
    with open(log, "w") as sink:
        probe = subprocess.Popen(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
    writer.start()
    time.sleep(warmup)
    cpu_start, started_ms = tree_usage(probe.pid)[0], time.time() * 1000
    peak = 0
    while probe.poll() is None and time.time() * 1000 - started_ms < args.seconds * 1000:
        peak = max(peak, tree_usage(probe.pid)[1])
        time.sleep(0.25)
    cpu, wall = tree_usage(probe.pid)[0] - cpu_start, time.time() - started_ms / 1000
    probe.wait(120)
    writer.running = False
    writer.join(30)
    batches = [b for b in json.loads(out.read_text()) if b["ended_ms"] >= started_ms]
    ages = [age / 1000 for batch in batches for age in batch["ages"]]
    print(f"  Structured Streaming's floor (read and fold, no save), {len(batches)} micro-batches:")
    print(f"    commit -> its batch ended: {cuts(ages)} ({load()})")
    print(
        f"    CPU per micro-batch {cpu / max(len(batches), 1):.2f} s; share of a core "
        f"{cpu / wall:.2f}; peak RSS {peak / 2**30:.2f} GiB"
    )


def report(name: str, busy: dict, quiet: dict, spent: dict[str, float]) -> None:
    rounds = max(busy["rounds"], 1)
    print(f"  freshness (write -> stored): {cuts(busy['freshness'])} ({busy['load']})")
    print(
        f"  CPU per round {busy['cpu'] / rounds:.2f} s over {busy['rounds']} rounds; the loop's "
        f"share of a core {busy['cpu'] / busy['wall']:.2f} ({busy['load']})"
    )
    print(f"  round time: {cuts(busy['round_seconds'])}")
    rss = busy["rss"]
    first = max((r for t, r in rss if t < 60), default=0)
    last = max((r for t, r in rss if t > rss[-1][0] - 60), default=0)
    print(
        f"  peak RSS {max(r for _, r in rss) / 2**30:.2f} GiB (first minute "
        f"{first / 2**30:.2f}, last minute {last / 2**30:.2f})"
    )
    quiet_rounds = max(quiet["rounds"], 1)
    print(
        f"  nothing new: CPU per round {quiet['cpu'] / quiet_rounds:.2f} s over "
        f"{quiet['rounds']} rounds ({quiet['load']})"
    )
    print("  where a round goes (mean seconds, from the loop's log):")
    for text, seconds in sorted(spent.items(), key=lambda item: -item[1])[:8]:
        print(f"    {seconds:6.3f}  {text}")


def main() -> None:
    args = parse_args()
    print(f"Working in {WORK}")
    call_command("migrate", verbosity=0)
    broker = EmbeddedKafka(WORK / "kafka")
    info = broker.start(worker=False)
    kafka = {"bootstrap.servers": info.bootstrap_servers}
    try:
        small = scale(args, kafka, "ten", 0, 0)
        large = scale(args, kafka, "fleet", args.connectors, args.records)
    finally:
        broker.stop()
    per_round = [r["busy"]["cpu"] / max(r["busy"]["rounds"], 1) for r in (small, large)]
    print("\n== ratios (fleet / ten) ==")
    print(f"  CPU per round: {per_round[1] / per_round[0]:.2f}x (goal <= 1.5x)")
    share = large["busy"]["cpu"] / large["busy"]["wall"]
    print(f"  the loop's share of a core at fleet size: {share:.2f} (goal < 0.2)")
    print(
        f"  freshness at fleet size: {cuts(large['busy']['freshness'])} "
        "(goal p95 <= 2 s, p99 <= 4 s)"
    )


if __name__ == "__main__":
    main()
