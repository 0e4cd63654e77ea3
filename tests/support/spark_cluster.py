"""A Spark standalone cluster on loopback: a master and workers from pyspark's own distribution.

    with standalone_cluster(tmp_path, workers=2) as cluster:
        ... SPARK_MASTER=cluster.master_url ...

Each daemon is a JVM of its own started with `spark-class` (the pip package has no
sbin/start-master.sh), and each worker starts its application's executor as one more JVM, so
the tasks run in processes apart from the driver's, as on a real cluster.

The executors' Python workers run `cluster.executor_python` (the driver's PYSPARK_PYTHON
names it: the driver, not the executor, picks its workers' Python), this virtualenv's
interpreter with its dependencies but without the project's editable install. A company's
executors have the dependencies and not the dashboard's package; with the install on their
path they would import `offsets` from it, and a session that shipped the project wrongly
would pass here and fail there.
"""

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from devkit.embedded import free_port

# A master and two workers take ~20 s to come up and register on the project's loaded 2-core
# machine; the bound leaves room for a slower CI runner.
START_SECONDS = 120
STOP_SECONDS = 15
# The master and workers only pass messages; the executors get their own memory setting.
DAEMON_MEMORY = "256m"

# The daemons' environment is their executors' and the executors' Python workers'. Without
# these, the project reaches the executors only as a user's would (its dependencies installed
# in their Python, `offsets` shipped with the job, the history path in the job's options),
# never through this checkout's path or the test's Django settings.
NOT_FOR_EXECUTORS = ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "OFFSETS_HISTORY_PATH")


# What the refresh's Python workers import beside `offsets` and the standard library, as
# docs/refresh.md lists it for a company's executors: the executors' Python has these and no
# other package of this virtualenv (not Django, not pandas), so a task that comes to need one
# more fails here first.
EXECUTOR_PACKAGES = ("pyspark", "py4j", "pyarrow", "numpy", "confluent_kafka")

# The executors' Python: this interpreter with -S (no `site`, so no .pth file runs, the
# editable install's finder of `offsets` and `dashboard` included) and a folder of links to
# EXECUTOR_PACKAGES in its site-packages appended to the PYTHONPATH Spark gives its workers.
# It has the refresh's dependencies, as a company's executors do, and not the project:
# `offsets` comes from what the driver ships or not at all.
EXECUTOR_PYTHON = """#!/bin/sh
PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}"{site_packages} exec {python} -S "$@"
"""


def executor_python(folder: Path) -> Path:
    """Write the executors' Python (EXECUTOR_PYTHON) into `folder`, for PYSPARK_PYTHON."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    site = folder / "executor-site-packages"
    shutil.rmtree(site, ignore_errors=True)  # links only: a restarted server writes it again
    site.mkdir()
    for name in EXECUTOR_PACKAGES:
        # The package, its distribution's metadata, and its vendored libraries (numpy.libs).
        for entry in [purelib / name, *purelib.glob(f"{name}[-.]*")]:
            (site / entry.name).symlink_to(entry)
    path = folder / "executor-python"
    path.write_text(
        EXECUTOR_PYTHON.format(
            site_packages=shlex.quote(str(site)), python=shlex.quote(sys.executable)
        )
    )
    path.chmod(0o755)
    return path


class MasterStarting(Exception):
    """The master's web UI answers, but not yet with its status."""


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:<port>
    master_json_url: str  # the master's status, as JSON
    root: Path  # the logs, and each worker's work dir (its executors' folders)
    # The driver's PYSPARK_PYTHON, which its executors run their Python workers with.
    executor_python: Path

    def status(self) -> dict:
        with urllib.request.urlopen(self.master_json_url, timeout=5) as response:
            kind = response.headers.get_content_type()
            if not kind.endswith("/json"):
                # While the master's web UI starts, /json/ can answer the HTML of its page at
                # "/" (seen in a whole run: Jetty listened 2 s before the UI said it was bound).
                raise MasterStarting(f"the master's status answered {kind}, not JSON")
            return json.load(response)

    def executor_dirs(self) -> list[Path]:
        """Each executor's folder, `<work dir>/<app id>/<executor id>/`, across the workers."""
        return sorted(self.root.glob("worker-*/work/app-*/*"))


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def java_and_pyspark_missing() -> str | None:
    """Why a standalone cluster cannot start here, or None when it can."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java to run Spark's master and workers"
    try:
        home = spark_home()
    except Exception as exc:  # pyspark is missing or broken
        return f"no pyspark distribution: {exc}"
    if not (home / "bin" / "spark-class").exists():
        return f"pyspark at {home} has no bin/spark-class"
    return None


def _daemon_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in NOT_FOR_EXECUTORS}
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
    )
    return env


def _start(command: list[str], log: Path, env: dict, cwd: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True
        )


def _tail(log: Path, lines: int = 30) -> str:
    text = log.read_text(errors="replace") if log.exists() else "(no log)"
    return f"--- {log.name} ---\n" + "\n".join(text.splitlines()[-lines:])


def _wait_for_workers(cluster: StandaloneCluster, workers: int, logs: list[Path]) -> None:
    deadline = time.monotonic() + START_SECONDS
    seen = None
    while time.monotonic() < deadline:
        try:
            seen = cluster.status().get("aliveworkers")
        except (OSError, MasterStarting):  # the master's web UI is not up yet, or not all of it
            seen = None
        if seen == workers:
            return
        time.sleep(0.5)
    tails = "\n".join(_tail(log) for log in logs)
    raise RuntimeError(
        f"The Spark standalone master at {cluster.master_url} had {seen} alive workers of "
        f"{workers} after {START_SECONDS} s.\n{tails}"
    )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_SECONDS)


def _master(spark_class: str, port: int, webui: int) -> list[str]:
    return [
        spark_class,
        "org.apache.spark.deploy.master.Master",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--webui-port",
        str(webui),
    ]


def _worker(spark_class: str, master_url: str, cores: int, memory: str, work_dir: Path) -> list:
    return [
        spark_class,
        "org.apache.spark.deploy.worker.Worker",
        master_url,
        "--host",
        "127.0.0.1",
        "--cores",
        str(cores),
        "--memory",
        memory,
        "--webui-port",
        str(free_port()),
        "--work-dir",
        str(work_dir),
    ]


@contextlib.contextmanager
def standalone_cluster(
    root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[StandaloneCluster]:
    """Start a master and `workers` workers on 127.0.0.1, wait until every worker has
    registered, and stop them all (workers first) on the way out."""
    home = spark_home()
    env = _daemon_env(home)
    spark_class = str(home / "bin" / "spark-class")
    port, webui = free_port(), free_port()
    cluster = StandaloneCluster(
        f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui}/json/", root, executor_python(root)
    )
    logs = [root / "master.log"]
    processes = [_start(_master(spark_class, port, webui), logs[0], env, root)]
    try:
        for n in range(workers):
            work_dir = root / f"worker-{n}" / "work"
            work_dir.mkdir(parents=True)
            logs.append(root / f"worker-{n}.log")
            command = _worker(spark_class, cluster.master_url, cores, memory, work_dir)
            processes.append(_start(command, logs[-1], env, work_dir.parent))
        _wait_for_workers(cluster, workers, logs)
        yield cluster
    finally:
        for process in reversed(processes):  # workers first: each stops its executors
            _stop(process)
