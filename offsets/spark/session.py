"""The one place that creates the SparkSession (master and settings from configuration)."""

import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from offsets import tuning
from offsets.spark.errors import ConnectUnreachable, python_worker_error
from offsets.spark.kafka_source import KafkaSnapshotSource

logger = logging.getLogger(__name__)
# A Spark Connect call that runs out of retries warns before it raises: the run's error says it.
warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")

PROJECT_PACKAGE = Path(__file__).resolve().parent.parent  # offsets/
JSON_LOG4J = Path(__file__).resolve().with_name("log4j2-json.properties")

_session: SparkSession | None = None  # the session get_spark last returned
# The scheduler's refresh threads ask for the Spark Connect session at once: one connects.
_connecting = threading.Lock()
# A cancelled task whose Python worker does not notice (it waits on Kafka, say) ends when
# Spark kills that worker, spark.python.task.killTimeout (2 s by default) after the cancel:
# 1.7-2.9 s after a scheduler's stop in its tests. A stop waits up to this long for it, within
# the 10 s a container runtime gives before SIGKILL (SCHEDULER_STOP_SECONDS is 7: a refresh
# that takes that long to end has given its tasks the time already).
IDLE_STOP_SECONDS = 5.0


def current_session() -> SparkSession | None:
    """The session `get_spark` last returned in this process, or None before the first."""
    return _session


def get_spark(
    master: str = "local[*]", conf: dict[str, str] | None = None, remote: str = ""
) -> SparkSession:
    """Return the process's SparkSession, creating it on first use.

    With `remote` (SPARK_REMOTE), a Spark Connect session of that server: no JVM here.
    """
    global _session
    if remote:
        return _connect(remote, conf or {})
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
    if not local:
        # Before the data source's registration: it keeps the Python files added so far as
        # its read tasks' path, and executors have no `offsets` but the shipped one.
        _ship_project(spark)
    spark.dataSource.register(KafkaSnapshotSource)
    _session = spark
    return spark


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect session (a gRPC client, no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def cancel_jobs(spark) -> None:
    """Cancel every job of the session: a stopping scheduler's, a SIGTERM's."""
    if is_connect(spark):
        spark.interruptAll()
    else:
        spark.sparkContext.cancelAllJobs()


def stop_when_idle(spark: SparkSession) -> None:
    """Stop the session once no task runs, waiting up to IDLE_STOP_SECONDS.

    A task that a cancel (a stopping scheduler, Ctrl-C) kills still runs for a moment after
    its job failed; stopping the context under it makes Spark log an internal error at ERROR
    ("Block broadcast_0 does not exist", from the task's completion listener) that is only the
    stop's doing.
    """
    if is_connect(spark):
        # The server kills what `cancel_jobs` interrupted; stopping releases the session.
        spark.stop()
        return
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
    if is_connect(spark):
        # The session's own Python path on the server: its executors' workers import it.
        spark.addArtifacts(archive, pyfile=True)
    else:
        spark.sparkContext.addPyFile(archive)
    logger.info("Shipped %s to the Spark executors", archive)


def _connect(url: str, conf: dict[str, str]) -> SparkSession:
    """The process's Spark Connect session: the last one while the server still knows it,
    else a new one (a server restarted since forgot the session, its artifacts and its data
    source)."""
    global _session
    with _connecting:
        if _session is not None and is_connect(_session):
            try:
                _session.conf.get("spark.sql.session.timeZone")
                return _session
            except Exception as exc:
                logger.info("A new Spark Connect session: the last one failed (%s)", exc)
                # Not released on the server: one that is down or forgot it would only make
                # the release wait out its retries too.
                _session.release_session_on_close = False
                _session.stop()  # best effort: it does not raise
                _session = None
        _session = _new_connect_session(url, conf)
        return _session


def _new_connect_session(url: str, conf: dict[str, str]) -> SparkSession:
    """A Spark Connect session set up as `get_spark` sets a local one: its SQL settings, the
    project's modules and the Kafka data source, and the history folder proven visible."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    static = sorted(key for key in conf if not key.startswith("spark.sql."))
    if static:
        raise ConnectUnreachable(
            f"SPARK_CONF sets {', '.join(static)}: with SPARK_REMOTE, settings other than "
            "spark.sql.* are the Spark Connect server's own; set them where it starts"
        )
    spark = SparkSession.builder.remote(url).create()
    # PySpark's default retries wait out ten minutes of an unreachable server; a refresh
    # fails in seconds instead, and the next one connects again.
    spark.client.set_retry_policies([DefaultPolicy(**tuning.CONNECT_RETRIES)])
    try:
        for key, value in {**CONNECT_SESSION_CONF, **conf}.items():
            spark.conf.set(key, value)
        _ship_project(spark)
        spark.dataSource.register(KafkaSnapshotSource)
        _check_history_visible(spark)
    except Exception as exc:
        spark.stop()
        if isinstance(exc, ConnectUnreachable):
            raise
        raise ConnectUnreachable(connect_error(url, exc)) from None
    return spark


# What `get_spark` sets of a local session that a Spark Connect session can set: its SQL
# settings (the driver's memory and JVM options, the UI and the log level are the server's).
CONNECT_SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    **{key: value for key, value in tuning.SESSION_CONF.items() if key.startswith("spark.sql.")},
}


def connect_error(url: str, exc: BaseException) -> str:
    """One line for a failed Spark Connect call: the server's host and port (never the URL's
    parameters, which may hold a token) and gRPC's details rather than its multi-line dump."""
    text = str(exc).strip()
    details = re.search(r'details = "(.*?)"', text)
    reason = (
        python_worker_error(text)
        or (details and details.group(1))
        or (text.splitlines() or [type(exc).__name__])[0]
    )
    where = urlsplit(url.split(";", 1)[0]).netloc
    return f"The Spark Connect server at {where}: {reason}"


def _check_history_visible(spark: SparkSession) -> None:
    """Fail unless the server's tasks see this process's history folder: they write the
    per-commit history there (offsets.history.files), and this process reads it."""
    folder = Path(settings.OFFSETS_HISTORY_PATH)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f".spark-connect-{uuid.uuid4().hex}"
    marker.write_text(marker.name)
    try:
        seen = spark.range(1).mapInArrow(_read_marker(str(marker)), "seen string").collect()
    finally:
        marker.unlink(missing_ok=True)
    if seen[0].seen != marker.name:
        raise ConnectUnreachable(
            f"The Spark Connect server's tasks cannot see OFFSETS_HISTORY_PATH={folder}: it "
            "must be storage shared with the server, mounted at the same path (docs/refresh.md)"
        )


def _read_marker(path: str):
    def read(batches):
        import pyarrow as pa

        try:
            text = Path(path).read_text()
        except OSError:
            text = ""
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"seen": [text]})

    return read
