"""The one place that creates the SparkSession (master and settings from configuration)."""

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from pyspark.sql import SparkSession

from offsets import tuning
from offsets.spark.kafka_source import KafkaSnapshotSource

logger = logging.getLogger(__name__)

PROJECT_PACKAGE = Path(__file__).resolve().parent.parent  # offsets/
JSON_LOG4J = Path(__file__).resolve().with_name("log4j2-json.properties")

_session: SparkSession | None = None  # the session get_spark last returned


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
