"""The one place that creates the SparkSession (master and settings from configuration)."""

import gc
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offsets.spark.kafka_source import KafkaSnapshotSource

logger = logging.getLogger(__name__)

PROJECT_PACKAGE = Path(__file__).resolve().parent.parent  # offsets/

# The driver's JVM compiles with C1 only (no C2). The JVM's share of a refresh is planning
# queries and merging folds, a little of a large code base each time, so C2 kept compiling:
# 1-2 s of CPU per incremental refresh even after several (on 2 cores, beside the read and
# the broker), 9-13 s in a session's first full refresh. Measured with the benchmark's data
# (issue 3's notes), alternating the two settings: the first full refresh of a session
# (the Refresh button's, `make demo`'s) 16.6-17.7 s instead of 20.5-26.9 s and 26 CPU
# seconds instead of 36-46; warm full refreshes and incrementals the same in wall time
# (10.0-10.3 s and 2.1-2.5 s), with about a quarter less CPU for an incremental. In local
# mode the tasks run in this JVM too; their Python work is unaffected. C1 alone would also
# shrink the code cache to 48 MB (the JVM's default without C2), which the test suite's one
# session filled ("Out of space in CodeCache for adapters", every later query failed): it
# keeps the 240 MB it has by default with both compilers. SPARK_CONF's
# spark.driver.extraJavaOptions replaces both.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


_startup_objects_frozen = False


def get_spark(master: str = "local[*]", conf: dict[str, str] | None = None) -> SparkSession:
    """Return the process's SparkSession, creating it on first use."""
    global _startup_objects_frozen
    local = master.startswith("local")
    if local:
        # Keep everything on loopback (Spark otherwise binds the external interface) and run
        # Python workers with this interpreter, so they import the same installed packages.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName("connect-offsets-refresh")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Small results; the default 200 shuffle partitions would each cost a task.
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
    )
    if local:
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaSnapshotSource)
    if not local:
        _ship_project(spark)
    if not _startup_objects_frozen:
        freeze_startup_objects()
        _startup_objects_frozen = True
    return spark


def freeze_startup_objects() -> None:
    """Keep the objects a refresh process holds for its whole life out of every later full
    garbage collection (`gc.freeze`).

    Once the session exists, the process has imported Django, PySpark, pyarrow and the
    project: ~126,000 objects (functions, types, module dicts) that every full collection
    traversed, 20-57 ms each time. A refresh allocates enough to set one off now and then:
    in two of the benchmark's five incremental refreshes in one run, 57 ms of ~0.4 s.
    Frozen, they are skipped: a full collection takes ~0.2-2 ms. A collection first, so
    that no garbage is frozen; what the refreshes leave behind is collected as before.
    """
    gc.collect()
    gc.freeze()


def fill(frame: DataFrame) -> None:
    """Compute every partition of a DataFrame (one task each; a cached one fills its cache),
    discarding the rows.

    Spark's no-op writer, not count(): a count adds a stage that gathers the partial counts
    (a shuffle, and with it a second stage of its own: ~0.5 s of an incremental refresh).
    """
    frame.write.format("noop").mode("overwrite").save()


# Spark stops every idle Python worker once none of them has been used for a minute
# (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS: hard-coded, no setting; its check runs every
# 10 s). A worker started anew imports pyarrow, pandas and this package again, and runs its
# code the first time: an incremental refresh of the benchmark's cluster took 0.98-1.05 s
# after 75 s without a refresh, against 0.42-0.49 s one minute or less after the last one
# (measured, issue 3's notes). An `--every` loop with a longer period uses a worker every
# KEEP_PYTHON_WORKERS_EVERY seconds while it waits.
KEEP_PYTHON_WORKERS_EVERY = 30.0


def _pass_through(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return batches


def keep_python_workers(spark: SparkSession) -> None:
    """Run one trivial Python task (~0.05-0.1 s), so that the session's idle Python workers
    count as used and Spark keeps them (KEEP_PYTHON_WORKERS_EVERY).

    The task is the kind the incremental refresh's merge runs (mapInArrow), so it uses the
    same pool of workers. On a Spark cluster it reaches one executor's workers only.
    """
    fill(spark.range(0, 1, 1, numPartitions=1).mapInArrow(_pass_through, "id long"))


def wait_keeping_python_workers(
    stop: threading.Event,
    seconds: float,
    keep: Callable[[], None],
    *,
    every: float = KEEP_PYTHON_WORKERS_EVERY,
) -> bool:
    """Wait `seconds`, calling `keep` (`keep_python_workers`) every `every` seconds of it;
    return True as soon as `stop` is set (False when the time is up).

    A failing `keep` is logged and the wait goes on: the next refresh reports a Spark that
    is really gone, as a failed run.
    """
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return stop.is_set()
        if stop.wait(min(left, every)):
            return True
        if deadline - time.monotonic() > 0:
            try:
                keep()
            except Exception:
                logger.warning("Could not keep Spark's Python workers warm", exc_info=True)


def _ship_project(spark: SparkSession) -> None:
    """Send the `offsets` package to the executors of a real cluster (they have no checkout)."""
    archive = shutil.make_archive(
        str(Path(tempfile.mkdtemp()) / "offsets"),
        "zip",
        PROJECT_PACKAGE.parent,
        PROJECT_PACKAGE.name,
    )
    spark.sparkContext.addPyFile(archive)
    logger.info("Shipped %s to the Spark executors", archive)
