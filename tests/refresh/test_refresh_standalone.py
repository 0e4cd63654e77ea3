"""The refresh on a real Spark standalone cluster gives exactly the results of local mode.

A master and two workers from pyspark's own distribution (tests/support/spark_cluster.py) run on
loopback, each a JVM of its own, and each worker starts one executor JVM for the refresh. The
refresh runs in a child process with SPARK_MASTER=spark://... (standalone_refresh.py) against
the same database and history folder as a local-mode refresh of the same topics, here; every
stored result and every history row must be the same. The executors get the project as a user
would have it: their Python has the dependencies and not the project's install
(spark_cluster.executor_python), no PYTHONPATH leads to this checkout and they run in the
workers' folders, so `offsets` comes from the zip the session ships with the job or not at all.

The same child then refreshes the secured runtime's Connect cluster over SASL_SSL as the
dashboard's SCRAM user, which holds exactly SECURITY.md's viewing set: the credentials reach
the executors in the read's options (the executors, not the driver, run its reads), and no
password shows in the master's, the workers', the executors' or the driver's logs, or in the
application's settings (its Environment page). In this test, not one of its own: a second
test would start a second master and workers wherever pytest-xdist sent it.
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from devkit.secured import create_acls
from offsets.models import (
    Cluster,
    KeyDrift,
    MalformedCount,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh.run import run_refresh
from tests.support import secured_runtime
from tests.support.connect_rest import canonical
from tests.support.connect_topics import write_records
from tests.support.db_faults import database_url
from tests.support.refresh_digest import COMPARED, GARBAGE, history_rows, stored_rows
from tests.support.spark_cluster import (
    StandaloneCluster,
    java_and_pyspark_missing,
    standalone_cluster,
)
from tests.support.worker_files import file_sink, file_source, write_lines

_MISSING = java_and_pyspark_missing()

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.engine_independent(
        "its rows are committed only so that the child process sees them; what it compares is"
        " Spark's standalone and local results, stored by the same refresh code that the"
        " scheduler, refresh-fault and load tests run on PostgreSQL"
    ),
    pytest.mark.skipif(_MISSING is not None, reason=f"No Spark standalone cluster: {_MISSING}"),
]

# Small executors: two of them share this machine with the driver, the broker and the tests.
EXECUTOR_CONF = "spark.executor.memory=512m,spark.executor.cores=1,spark.cores.max=2"
CHILD_SECONDS = 300

# The secured worker's connectors of this test (the worker is shared: names of its own).
RUN = uuid.uuid4().hex[:8]
SECURED_SOURCE = f"ssa-{RUN}-source"
SECURED_SINK = f"ssa-{RUN}-sink"
SECURED_DATA = f"ssa-{RUN}-data"


def refresh_on_the_cluster(
    spark_cluster: StandaloneCluster, name: str, clocks: list[int], then: str
) -> dict:
    """Full refreshes of `name`, then one of `then`, in a child process whose session's master
    is the cluster."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": database_url(),
        "OFFSETS_HISTORY_PATH": django_settings.OFFSETS_HISTORY_PATH,
        "SPARK_MASTER": spark_cluster.master_url,
        "SPARK_CONF": EXECUTOR_CONF,
        # The driver on loopback, where the executors reach it.
        "SPARK_LOCAL_IP": "127.0.0.1",
        # The executors' Python has the dependencies and not the project (spark_cluster.py).
        "PYSPARK_PYTHON": str(spark_cluster.executor_python),
    }
    log = spark_cluster.root / "driver.log"
    with log.open("w") as stderr:
        child = subprocess.run(
            [sys.executable, "-m", "tests.support.standalone_refresh", name]
            + [str(now_ms) for now_ms in clocks]
            + ["--then", then],
            cwd=django_settings.BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=CHILD_SECONDS,
        )
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert child.returncode == 0, f"the refresh on the cluster failed:\n{tail}"
    return json.loads(child.stdout.strip().splitlines()[-1])


def assert_tasks_ran_in_the_executors(report: dict, spark_cluster: StandaloneCluster) -> None:
    assert report["master"] == spark_cluster.master_url
    by_id = {executor["id"]: executor for executor in report["executors"]}
    executors = [executor for name, executor in by_id.items() if name != "driver"]
    # Two executor JVMs (one per worker, each on a port of its own) ran the refresh's tasks;
    # the driver ran none.
    assert len({executor["host_port"] for executor in executors}) == 2, report["executors"]
    assert sum(executor["total_tasks"] for executor in executors) > 0, report["executors"]
    assert by_id["driver"]["total_tasks"] == 0
    assert {
        path.relative_to(spark_cluster.root).parts[0] for path in spark_cluster.executor_dirs()
    } == {
        "worker-0",
        "worker-1",
    }
    # Their Python workers are processes of their own, in the executors' folders, and import
    # the project from the zip shipped with the job.
    for worker in report["python_workers"]:
        assert worker["pid"] != report["driver_pid"]
        assert Path(worker["cwd"]).is_relative_to(spark_cluster.root), worker
        assert worker["no_site"], worker  # spark_cluster.EXECUTOR_PYTHON: no editable install
        package = Path(worker["offsets"])
        assert package.parts[-3:] == ("offsets.zip", "offsets", "__init__.py"), worker
        assert package.is_relative_to(spark_cluster.root), worker


def secured_cluster(secured_kafka, folder: Path, monkeypatch) -> Cluster:
    """A file source and a file sink with offsets committed on the secured worker, and its
    Connect cluster registered with SECURITY.md's SASL_SSL settings for the dashboard's SCRAM
    user, which holds exactly the viewing set."""
    rest = secured_kafka.rest()
    folder.mkdir()
    write_lines(folder / "in.txt", ["one", "two"])
    rest.create(SECURED_SOURCE, file_source(folder / "in.txt", SECURED_DATA))
    rest.wait_for_offsets(SECURED_SOURCE, lambda o: o and o[0]["offset"]["position"] == 8)
    rest.create(SECURED_SINK, file_sink(folder / "out.txt", SECURED_DATA))
    rest.wait_for_offsets(SECURED_SINK, lambda o: o and o[0]["offset"]["kafka_offset"] == 2)
    # The other secured modules' refreshes read every connector of the shared worker: the
    # dashboard's mutual-TLS principal may view these too.
    bindings = [
        binding
        for principal, connect_topics in (
            (f"User:{secured_runtime.DASHBOARD_USER}", secured_runtime.WORKER_TOPICS.values()),
            (secured_kafka.dashboard_cert.principal, []),
        )
        for binding in secured_runtime.viewing_acls(
            principal,
            connect_topics=connect_topics,
            data_topics=[SECURED_DATA],
            sink_groups=[f"connect-{SECURED_SINK}"],
        ).values()
    ]
    create_acls(secured_kafka.setup, bindings)
    settings = secured_kafka.sasl()
    del settings["bootstrap.servers"]
    return secured_runtime.register(
        "secured", secured_kafka.info.sasl_bootstrap, settings, secured_kafka, monkeypatch
    )


def assert_the_secured_refresh(report, spark_cluster, secured_kafka, client) -> None:
    """It succeeded with its reads in the executors, stored what the worker holds, and left
    no password in the cluster's logs or the application's settings."""
    assert report["runs"][-1]["status"] == "succeeded", report["runs"][-1]
    executors = [e for e in report["executors"] if e["id"] != "driver"]
    assert sum(e["total_tasks"] for e in executors) > report["tasks_before_then"]
    rest = secured_kafka.rest()
    for connector in (SECURED_SOURCE, SECURED_SINK):
        stored = client.get(reverse("api-connector-offsets", args=["secured", connector]))
        assert stored.status_code == 200, stored.content
        worker = rest.offsets(connector)["offsets"]
        assert worker and canonical(stored.json()["offsets"]) == canonical(worker), connector
    executor_logs = [
        path for folder in spark_cluster.executor_dirs() for path in folder.glob("std*")
    ]
    assert {path.name for path in executor_logs} == {"stderr", "stdout"}
    seen = {
        str(path.relative_to(spark_cluster.root)): path.read_text(errors="replace")
        for path in [*spark_cluster.root.glob("*.log"), *executor_logs]
    }
    seen["environment"] = report["environment"]
    secrets = [
        secured_kafka.users.passwords[secured_runtime.DASHBOARD_USER],
        secured_kafka.rest_password,
    ]
    leaks = [what for what, text in seen.items() for secret in secrets if secret in text]
    assert not leaks, leaks


def print_seconds(local_seconds: list[float], report: dict) -> None:
    print(
        "\nfull refresh seconds (1st, 2nd of a session): "
        f"local[2] {local_seconds[0]:.2f}, {local_seconds[1]:.2f}; standalone, two workers "
        + ", ".join(f"{run['seconds']:.2f}" for run in report["runs"][:2])
        + f"; the secured cluster's {report['runs'][2]['seconds']:.2f}"
    )


def test_a_refresh_on_a_standalone_cluster_stores_what_local_mode_stores(
    fresh_kafka, spark, settings, tmp_path, secured_kafka, monkeypatch, admin_client
):
    end_ms = int(time.time() * 1000) // 60_000 * 60_000
    kafka = {"bootstrap.servers": fresh_kafka}
    write_demo(kafka, build_demo(DemoOptions(end_ms=end_ms, hours=2, seed=7)))
    write_records(kafka, GARBAGE)
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    local = Cluster.objects.create(name="local", bootstrap_servers=fresh_kafka)
    remote = Cluster.objects.create(name="standalone", bootstrap_servers=fresh_kafka)
    secured = secured_cluster(secured_kafka, tmp_path / "secured", monkeypatch)
    # Two refreshes each, so that lag has two samples; the same clocks, for the stall rule.
    clocks = [end_ms + 60_000, end_ms + 120_000]

    local_seconds = []
    for now_ms in clocks:
        run = run_refresh(cluster=local, spark=spark, full=True, now_ms=now_ms)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        local_seconds.append(run.seconds)
    cluster_root = tmp_path / "spark-cluster"
    cluster_root.mkdir()
    with standalone_cluster(cluster_root, workers=2) as spark_cluster:
        report = refresh_on_the_cluster(spark_cluster, remote.name, clocks, secured.name)
        assert [run["status"] for run in report["runs"]] == ["succeeded"] * 3, report["runs"]
        assert_tasks_ran_in_the_executors(report, spark_cluster)
        assert_the_secured_refresh(report, spark_cluster, secured_kafka, admin_client)
    print_seconds(local_seconds, report)

    # The data holds what there is to compare: drift, a rewind, a stall, malformed records,
    # lagging sinks, a history.
    assert KeyDrift.objects.filter(cluster=local).exists()
    assert RewindEvent.objects.filter(cluster=local).exists()
    assert SourceOffset.objects.filter(cluster=local, stalled=True).exists()
    assert MalformedCount.objects.filter(cluster=local).count() == len(GARBAGE)
    assert SinkPartitionLag.objects.filter(cluster=local, lag_records__gt=0).exists()
    for model in COMPARED:
        expected = stored_rows(model, local)
        assert expected, model.__name__
        assert stored_rows(model, remote) == expected, model.__name__
    local_run, remote_run = (
        RefreshRun.objects.filter(cluster=cluster).latest("pk") for cluster in (local, remote)
    )
    for field in ("records_read", "records_by_topic", "malformed", "malformed_by_reason"):
        assert getattr(remote_run, field) == getattr(local_run, field), field
    history = history_rows(local)
    commits = {(row["topic"], row["kafka_partition"], row["kafka_offset"]) for row in history}
    assert history and len(commits) == len(history)
    assert history_rows(remote) == history
