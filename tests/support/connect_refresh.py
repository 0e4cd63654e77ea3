"""Run refreshes of clusters on the Spark Connect server of SPARK_REMOTE (or SPARK_REMOTE_FILE)
and report how they went: a child process of the Spark Connect tests.

    python -m tests.support.connect_refresh CLUSTER:full:NOW_MS CLUSTER:incremental:NOW_MS ...

A child, because a Python process that opens a Spark Connect session turns PySpark's
functions into Connect's for good (PySpark's SPARK_CONNECT_MODE_ENABLED), and the test's own
process runs local mode. Each refresh is the one the scheduler and refresh_offsets run: no
session is passed, so the refresh connects (`offsets.refresh.inputs.start_spark`). A step
`pause` prints "paused" and waits for a line on stdin (a fault test changes the server
meanwhile). A step `where` reports the server's Python workers: where their `offsets` comes
from. The report is the last line of stdout, as JSON.
"""

import json
import sys
from pathlib import Path


def _where_am_i(batches):
    import os
    import sys

    import pyarrow as pa

    import offsets

    for _ in batches:
        yield pa.RecordBatch.from_pylist(
            [{"offsets": os.path.abspath(offsets.__file__), "no_site": bool(sys.flags.no_site)}]
        )


def python_workers(spark) -> list[dict]:
    """The `offsets` package and the `-S` flag of the server's Python workers."""
    frame = spark.range(2, numPartitions=2).mapInArrow(
        _where_am_i, "offsets string, no_site boolean"
    )
    return [row.asDict() for row in frame.collect()]


def peak_rss_mb() -> float:
    """This process's peak resident memory since its exec (VmHWM). Not `ru_maxrss`, which
    keeps the parent's size at the fork across the exec (the test's process, or a bench's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(steps: list[str]) -> dict:
    import django

    django.setup()
    from pyspark.core.context import SparkContext

    from offsets.models import Cluster
    from offsets.refresh.run import run_refresh
    from offsets.spark import session

    runs, workers = [], []
    try:
        for step in steps:
            if step == "where":
                # Not after a failed run: the test's report of it says why the run failed.
                if all(run["status"] == "succeeded" for run in runs):
                    workers = python_workers(session.current_session())
                continue
            if step == "pause":
                print("paused", flush=True)
                sys.stdin.readline()
                continue
            name, how, now_ms = step.split(":")
            run = run_refresh(
                cluster=Cluster.objects.get(name=name), full=how == "full", now_ms=int(now_ms)
            )
            runs.append(
                {
                    "status": run.status,
                    "error": run.error,
                    "full": run.full,
                    "phase": run.phase,
                    "seconds": run.seconds,
                }
            )
        spark = session.current_session()
        return {
            "runs": runs,
            "python_workers": workers,
            "connect": spark is not None and session.is_connect(spark),
            # No Spark JVM in this process: no gateway to one was ever opened.
            "jvm": SparkContext._gateway is not None,
            # This process's peak resident memory in MiB, for docs/performance.md.
            "max_rss_mb": peak_rss_mb(),
        }
    finally:
        spark = session.current_session()
        if spark is not None:
            session.stop_when_idle(spark)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
