"""Run full refreshes of one cluster on the Spark master of SPARK_MASTER and report where the
tasks ran: a child process of the standalone cluster's test.

    python -m tests.support.standalone_refresh CLUSTER NOW_MS [NOW_MS ...] [--then OTHER]

A child, because a Python process holds one SparkSession and the test's own runs in local
mode. The session is the one refresh_offsets starts (get_spark with SPARK_MASTER and
SPARK_CONF). Each NOW_MS is one full refresh's clock, the same as the local-mode refreshes it
is compared with get, since the stall rule reads it. `--then OTHER` runs one more full
refresh, of the cluster OTHER (the secured one), in the same session: a second session would
cost a second Spark start. The report is the last line of stdout, as JSON.
"""

import json
import os
import sys


def executors(spark) -> list[dict]:
    """Spark's own account of the session's executors and the driver, from its status store
    (the session runs without its web UI)."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    return [
        {
            "id": summary.id(),
            "host_port": summary.hostPort(),
            "total_tasks": summary.totalTasks(),
        }
        for summary in (summaries.apply(n) for n in range(summaries.size()))
    ]


def _where_am_i(_rows):
    import os
    import sys

    import offsets

    yield {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "offsets": os.path.abspath(offsets.__file__),
        "no_site": sys.flags.no_site,
    }


def python_workers(spark) -> list[dict]:
    """The process, folder and `offsets` package of the Python workers that run tasks."""
    return spark.sparkContext.parallelize(range(4), 4).mapPartitions(_where_am_i).collect()


def environment(spark) -> str:
    """What the application's Environment page shows of its settings: Spark's and the JVM's."""
    conf = spark.sparkContext.getConf().getAll()
    system = spark.sparkContext._jvm.java.lang.System.getProperties().toString()
    return "\n".join(f"{key}={value}" for key, value in conf) + "\n" + system


def tasks_run(spark) -> int:
    return sum(executor["total_tasks"] for executor in executors(spark))


def main(cluster_name: str, clocks: list[int], then: str | None = None) -> dict:
    import django

    django.setup()
    from django.conf import settings

    from offsets.models import Cluster
    from offsets.refresh.run import run_refresh
    from offsets.spark.session import get_spark

    spark = get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
    try:
        cluster = Cluster.objects.get(name=cluster_name)
        runs = [
            run_refresh(cluster=cluster, spark=spark, full=True, now_ms=now_ms) for now_ms in clocks
        ]
        tasks_before_then = tasks_run(spark)
        if then:
            runs.append(run_refresh(cluster=Cluster.objects.get(name=then), spark=spark, full=True))
        return {
            "master": spark.sparkContext.master,
            "runs": [{"status": r.status, "error": r.error, "seconds": r.seconds} for r in runs],
            "tasks_before_then": tasks_before_then,
            "environment": environment(spark),
            "driver_pid": os.getpid(),
            "executors": executors(spark),
            # Not after a failed run: the test's report of it says why the run failed.
            "python_workers": python_workers(spark)
            if all(r.status == "succeeded" for r in runs)
            else [],
        }
    finally:
        spark.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    then = args[args.index("--then") + 1] if "--then" in args else None
    args = args[: args.index("--then")] if then else args
    report = main(args[0], [int(arg) for arg in args[1:]], then)
    print(json.dumps(report), flush=True)
