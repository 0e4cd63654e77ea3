"""Load benchmark: 50 users on the real app server, idle and while a full refresh runs.

Starts the embedded broker, seeds the demo Connect cluster, refreshes it once with Spark
into a new SQLite database, creates the users and starts waitress over that database. Then
two runs of the same request mix (pages, htmx partials, API) from every user at once:
first with nothing else running (the baseline), then while a full refresh of the demo runs
with Spark in this process and writes to the same database. Prints p50/p95/max per kind of
request, the errors, and the ratio of each p95 to the baseline's. It asserts nothing.

    python -m tests.bench.bench_load [--users 50] [--requests 700]
"""

import argparse
import os
import shutil
import tempfile
import threading
from pathlib import Path

from tests.support.production_env import loopback_production_env


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50, help="concurrent logged-in users")
    parser.add_argument("--requests", type=int, default=700, help="requests per run")
    parser.add_argument("--threads", type=int, default=8, help="waitress worker threads")
    parser.add_argument("--hours", type=float, default=3, help="hours of demo offsets history")
    return parser.parse_args()


def configure(folder: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    os.environ.update(loopback_production_env())
    os.environ["OFFSETS_HISTORY_PATH"] = str(folder / "history")
    os.environ["RUN_DIR"] = str(folder / "run")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.support.load_settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def main() -> int:
    args = parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-load-"))
    configure(folder)

    import time

    from django.core.management import call_command

    from devkit.demo import DemoOptions, build_demo
    from devkit.demo_writer import write_demo
    from devkit.embedded import EmbeddedKafka
    from offsets.models import Cluster
    from offsets.refresh.run import run_refresh
    from offsets.spark.session import get_spark
    from tests.support.load import AppServer, create_users, demo_targets, report, run_load

    call_command("migrate", verbosity=0)
    broker = EmbeddedKafka(folder / "kafka")
    info = broker.start(worker=False)
    spark = None
    try:
        end_ms = int(time.time() * 1000) // 60_000 * 60_000
        write_demo(
            {"bootstrap.servers": info.bootstrap_servers},
            build_demo(DemoOptions(end_ms=end_ms, hours=args.hours, seed=7)),
        )
        cluster = Cluster.objects.create(name="demo", bootstrap_servers=info.bootstrap_servers)
        spark = get_spark("local[2]")
        first = run_refresh(cluster=cluster, spark=spark)
        print(
            f"seeded: first refresh {first.status} in {first.seconds:.1f}s, {first.records_read:,} records"
        )
        users = create_users(args.users)
        targets = demo_targets(cluster.name)
        server = AppServer(
            {
                "DATABASE_URL": os.environ["DATABASE_URL"],
                "OFFSETS_HISTORY_PATH": os.environ["OFFSETS_HISTORY_PATH"],
            },
            threads=args.threads,
            log=folder / "server.log",
        )
        with server:
            # Warm the server (imports, first queries) so the baseline measures steady state.
            run_load(server.base_url, users[:2], targets, requests=len(targets) * 2)
            idle = run_load(server.base_url, users, targets, requests=args.requests)
            print(report(idle, "baseline, nothing else running"))

            spark_started, done = threading.Event(), threading.Event()
            outcome = {}

            def refresh() -> None:
                try:
                    outcome["run"] = run_refresh(
                        cluster=cluster,
                        spark=spark,
                        full=True,
                        progress=lambda text: (
                            "computing offsets and history" in text and spark_started.set()
                        ),
                    )
                finally:
                    spark_started.set()
                    done.set()

            thread = threading.Thread(target=refresh, daemon=True)
            thread.start()
            spark_started.wait(300)
            busy = run_load(
                server.base_url,
                users,
                targets,
                requests=args.requests,
                busy=lambda: not done.is_set(),
            )
            thread.join()
            print(report(busy, "while a full refresh runs"))
            run = outcome.get("run")
            if run is not None:
                print(
                    f"the refresh: {run.status} in {run.seconds:.1f}s{f' ({run.error})' if run.error else ''}"
                )

        print("p95 while refreshing / p95 idle, per kind of request:")
        idle_by, busy_by = idle.by_label(), busy.by_label()
        from tests.support.load import percentile

        for label in idle_by:
            a = percentile([s.seconds for s in idle_by[label]], 0.95)
            b = percentile([s.seconds for s in busy_by.get(label, [])], 0.95)
            print(f"  {label:34} {b / a:6.2f}x")
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
