"""The one place that creates the SparkSession (master and settings from configuration)."""

import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from offsets import tuning
from offsets.spark.kafka_source import KafkaSnapshotSource

logger = logging.getLogger(__name__)

PROJECT_PACKAGE = Path(__file__).resolve().parent.parent  # offsets/
JSON_LOG4J = Path(__file__).resolve().with_name("log4j2-json.properties")

_session: SparkSession | None = None  # the session get_spark last returned
# A cancelled task whose Python worker does not notice (it waits on Kafka, say) ends when
# Spark kills that worker, spark.python.task.killTimeout (2 s by default) after the cancel:
# 1.7-2.9 s after a scheduler's stop in its tests. A stop waits up to this long for it, within
# the 10 s a container runtime gives before SIGKILL (SCHEDULER_STOP_SECONDS is 7: a refresh
# that takes that long to end has given its tasks the time already).
IDLE_STOP_SECONDS = 5.0


def current_session() -> SparkSession | None:
    """The session `get_spark` last returned in this process, or None before the first."""
    return _session


def get_spark(master: str = "local[*]", conf: dict[str, str] | None = None) -> SparkSession:
    """Return the process's SparkSession, creating it on first use."""
    global _session
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
    )
    for key, value in tuning.SESSION_CONF.items():
        builder = builder.config(key, value)
    if local:
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    java_options = {**tuning.SESSION_CONF, **(conf or {})}.get("spark.driver.extraJavaOptions", "")
    builder = builder.config(
        "spark.driver.extraJavaOptions", driver_java_options(java_options, settings.LOG_FORMAT)
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaSnapshotSource)
    if not local:
        _ship_project(spark)
    _session = spark
    return spark


def stop_when_idle(spark: SparkSession) -> None:
    """Stop the session once no task runs, waiting up to IDLE_STOP_SECONDS.

    A task that a cancel (a stopping scheduler, Ctrl-C) kills still runs for a moment after
    its job failed; stopping the context under it makes Spark log an internal error at ERROR
    ("Block broadcast_0 does not exist", from the task's completion listener) that is only the
    stop's doing.
    """
    deadline = time.monotonic() + IDLE_STOP_SECONDS
    while time.monotonic() < deadline and _running_tasks(spark):
        time.sleep(0.1)
    spark.stop()


def _running_tasks(spark: SparkSession) -> int:
    """The tasks the driver's task scheduler counts as running, killed ones until they end.

    Spark's internals, through the JVM: the public status tracker's count is not kept up to
    date without Spark's UI (it read 0 while two tasks ran). Where they cannot be read, 0.
    """
    try:
        counts = (
            spark.sparkContext._jsc.sc().taskScheduler().runningTasksByExecutors().valuesIterator()
        )
        total = 0
        while counts.hasNext():
            total += counts.next()
        return total
    except Py4JError:
        return 0


def driver_java_options(java_options: str, log_format: str) -> str:
    """The driver JVM's options: with JSON logs, its log4j lines are JSON objects too."""
    if log_format != "json":
        return java_options
    return f"{java_options} -Dlog4j2.configurationFile={JSON_LOG4J}".strip()


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
