"""The refresh over Spark Connect (SPARK_REMOTE) stores exactly what local mode stores, and
fails in one line when the server is down or cannot see the history folder.

The server is the session's (`spark_connect`: pyspark's own SparkConnectServer on loopback,
in local[2], asking for a token). The refreshes run in a child process
(tests/support/connect_refresh.py) with SPARK_REMOTE_FILE naming the URL with its token, the
way the scheduler and refresh_offsets run them: the child holds no Spark JVM, the Kafka reads
and the merge run in the server's tasks, and the results land in the same database and history
folder as a local-mode refresh of the same topics, here. The server's Python workers have the
project's dependencies and not the project (spark_connect.py): `offsets` reaches them as the
session's artifact.
"""

import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from devkit.secured import create_acls
from offsets.history import store as history_store
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    KeyDrift,
    MalformedCount,
    MirrorUpstream,
    RefreshRun,
    RewindEvent,
    SinkOffsetsStore,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh import run_records
from offsets.refresh.run import run_refresh
from tests.support import secured_runtime
from tests.support.child_cluster import child_cluster, end_paused, paused_at
from tests.support.connect_rest import wait_until
from tests.support.connect_topics import write_records
from tests.support.db_faults import database_url
from tests.support.refresh_digest import (
    COMPARED,
    GARBAGE,
    RUN_FIELDS,
    history_rows,
    stored_rows,
)
from tests.support.spark_connect import connect_server
from tests.support.worker_files import file_source, write_lines

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.engine_independent(
        "its rows are committed only so that the child process sees them; what it compares is"
        " Spark Connect's and local mode's results, stored by the same refresh code that the"
        " scheduler, refresh-fault and load tests run on PostgreSQL"
    ),
]

CHILD_SECONDS = 300
MIRROR = "mm2-us-east-source"
STORED_SINK = "s3-sink-orders"
STANDALONE_FILE = (
    Path(__file__).resolve().parents[1]
    / "support/fixtures/standalone/two-sources-one-reset.offsets"
)
# Commits that come after the full refreshes: the incremental refreshes read only these.
LATER = [
    ("connect-offsets", b'["later-source",{"n":1}]', b'{"position":1}', None),
    ("connect-offsets", b'["later-source",{"n":1}]', b'{"position":2}', None),
    ("connect-offsets", b'["later-source",{"n":2}]', b'{"position":7}', None),
]


def child(
    server, steps: list[str], history: str, log: Path, cwd: Path | None = None
) -> subprocess.Popen:
    """A child process that runs `steps` (connect_refresh.py) on the server, in `cwd`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("SPARK_MASTER", "SPARK_REMOTE", "SPARK_CONF")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DATABASE_URL=database_url(),
        OFFSETS_HISTORY_PATH=history,
        SPARK_REMOTE_FILE=str(server.url_file),
        PYTHONPATH=str(django_settings.BASE_DIR),
    )
    with log.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.connect_refresh", *steps],
            cwd=cwd or django_settings.BASE_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def wait_paused(process: subprocess.Popen) -> None:
    ready, _, _ = select.select([process.stdout], [], [], CHILD_SECONDS)
    assert ready, f"the child did not pause within {CHILD_SECONDS} s"
    line = process.stdout.readline()
    assert line.strip() == "paused", line


def report_of(process: subprocess.Popen, log: Path) -> dict:
    out, _ = process.communicate("\n", timeout=CHILD_SECONDS)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert process.returncode == 0, f"the child failed:\n{tail}"
    return json.loads(out.strip().splitlines()[-1])


def seed(kafka_servers: str) -> int:
    end_ms = int(time.time() * 1000) // 60_000 * 60_000
    kafka = {"bootstrap.servers": kafka_servers}
    write_demo(kafka, build_demo(DemoOptions(end_ms=end_ms, hours=2, seed=7)))
    write_records(kafka, GARBAGE)
    return end_ms


def every_kind(kafka: str, tmp_path: Path) -> list[Cluster]:
    """The local and Connect pairs: two clusters of the same topics whose mirror's upstream
    and whose sink's group (the demo's) are on a third registered cluster, then two
    standalone workers of one offsets file."""
    upstream = Cluster.objects.create(name="upstream", bootstrap_servers=kafka)
    pair = []
    for name in ("local", "connect"):
        cluster = Cluster.objects.create(name=name, bootstrap_servers=kafka)
        MirrorUpstream.objects.create(cluster=cluster, source_alias="us-east", upstream=upstream)
        SinkOffsetsStore.objects.create(
            cluster=cluster,
            connector=STORED_SINK,
            kind=SinkOffsetsStore.Kind.REMOTE_GROUP,
            group_id=f"connect-{STORED_SINK}",
            group_cluster=upstream,
        )
        pair.append(cluster)
    offsets_file = tmp_path / "connect.offsets"
    shutil.copy(STANDALONE_FILE, offsets_file)
    for name in ("local-file", "connect-file"):
        pair.append(
            Cluster.objects.create(
                name=name, kind=Cluster.Kind.STANDALONE, offsets_file=str(offsets_file)
            )
        )
    return pair


def test_a_refresh_over_spark_connect_stores_what_local_mode_stores(
    fresh_kafka, spark, settings, tmp_path, spark_connect
):
    """Every kind of cluster: Connect's topics with a mirror whose upstream is registered and a
    sink whose offsets are another cluster's group (read beside Spark's part, in the
    refreshing process), and a standalone worker's offsets file (read with no Spark at all)."""
    end_ms = seed(fresh_kafka)
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    local, remote, local_file, remote_file = every_kind(fresh_kafka, tmp_path)
    clocks = [end_ms + 60_000, end_ms + 120_000]
    log = tmp_path / "child.log"

    run = run_refresh(cluster=local, spark=spark, full=True, now_ms=clocks[0])
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    run = run_refresh(cluster=local_file, full=True, now_ms=clocks[0])
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    steps = [
        f"connect:full:{clocks[0]}",
        f"connect-file:full:{clocks[0]}",
        "pause",
        f"connect:incremental:{clocks[1]}",
        "where",
    ]
    process = child(spark_connect, steps, settings.OFFSETS_HISTORY_PATH, log)
    try:
        wait_paused(process)
        write_records({"bootstrap.servers": fresh_kafka}, LATER)
        run = run_refresh(cluster=local, spark=spark, full=False, now_ms=clocks[1])
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        report = report_of(process, log)
    finally:
        process.kill()
    assert [r["status"] for r in report["runs"]] == ["succeeded"] * 3, report["runs"]
    assert [r["full"] for r in report["runs"]] == [True, True, False]
    assert report["connect"] and not report["jvm"], report
    # The server's Python workers have the dependencies and not the project (spark_connect.py):
    # they import `offsets` from the session's artifacts.
    assert report["python_workers"], report
    for worker in report["python_workers"]:
        assert worker["no_site"], worker
        assert Path(worker["offsets"]).parts[-3:] == ("offsets.zip", "offsets", "__init__.py"), (
            worker
        )
    print(f"\nthe refreshing process's peak RSS over Spark Connect: {report['max_rss_mb']:.0f} MB")

    # The data holds what there is to compare: drift, a rewind, a stall, malformed records,
    # lagging sinks, a history, and the later commits.
    assert KeyDrift.objects.filter(cluster=local).exists()
    assert RewindEvent.objects.filter(cluster=local).exists()
    assert SourceOffset.objects.filter(cluster=local, stalled=True).exists()
    assert MalformedCount.objects.filter(cluster=local).count() == len(GARBAGE)
    assert SinkPartitionLag.objects.filter(cluster=local, lag_records__gt=0).exists()
    assert SourceOffset.objects.filter(cluster=local, connector="later-source").count() == 2
    assert SinkPartitionLag.objects.filter(cluster=local, connector=MIRROR).exists()
    store = ConnectorSnapshot.objects.get(cluster=local, name=STORED_SINK).offsets_store
    assert store == f"group connect-{STORED_SINK} on cluster upstream", store
    for model in COMPARED:
        expected = stored_rows(model, local)
        assert expected, model.__name__
        assert stored_rows(model, remote) == expected, model.__name__
    for model in (SourceOffset, ConnectorSnapshot):
        expected = stored_rows(model, local_file)
        assert expected, model.__name__
        assert stored_rows(model, remote_file) == expected, model.__name__
    local_run, remote_run = (
        RefreshRun.objects.filter(cluster=cluster).latest("pk") for cluster in (local, remote)
    )
    assert not remote_run.full and remote_run.records_read > 0
    for field in RUN_FIELDS:
        assert getattr(remote_run, field) == getattr(local_run, field), field
    history = history_rows(local)
    commits = {(row["topic"], row["kafka_partition"], row["kafka_offset"]) for row in history}
    assert history and len(commits) == len(history)
    assert history_rows(remote) == history


def test_a_history_folder_the_server_cannot_see_fails_the_refresh_with_a_clear_line(
    fresh_kafka, settings, tmp_path, spark_connect
):
    """The read tasks write the history into OFFSETS_HISTORY_PATH on the server's side: a
    path that is not the same storage there (here a relative one, which the server's tasks
    resolve in their own folder) fails the refresh before any read, saying so."""
    end_ms = seed(fresh_kafka)
    cluster = Cluster.objects.create(name="unseen", bootstrap_servers=fresh_kafka)
    log = tmp_path / "child.log"
    process = child(spark_connect, [f"unseen:full:{end_ms}"], "history", log, cwd=tmp_path)
    try:
        report = report_of(process, log)
    finally:
        process.kill()
    [run] = report["runs"]
    assert run["status"] == "failed"
    assert run["error"] == (
        "The Spark Connect server's tasks cannot see OFFSETS_HISTORY_PATH=history: it must be "
        "storage shared with the server, mounted at the same path (docs/refresh.md)"
    )
    assert not SourceOffset.objects.filter(cluster=cluster).exists()
    assert [path.name for path in (tmp_path / "history").iterdir()] == []


def test_the_scheduler_on_spark_connect_outlives_a_restart_of_the_server(
    fresh_kafka, tmp_path, spark_connect
):
    """`manage.py scheduler` with SPARK_REMOTE_FILE starts no Spark of its own and refreshes on
    the server. While the server is down its rounds start and fail, each with one line that
    names the server (no traceback, no token), storing nothing; once the server is back it
    opens a new session (the restarted server forgot the old one) and refreshes again; it
    stops on SIGTERM."""
    child = child_cluster(fresh_kafka, tmp_path)
    with sqlite3.connect(child.database) as db:
        db.execute("UPDATE offsets_cluster SET refresh_every_seconds = 1")
    env = {key: value for key, value in child.env.items() if key != "SPARK_MASTER"}
    env.update(SPARK_REMOTE_FILE=str(spark_connect.url_file), LOG_FORMAT="plain")

    def runs() -> list[tuple]:
        with sqlite3.connect(child.database) as db:
            return db.execute(
                "SELECT id, status, error FROM offsets_refreshrun ORDER BY id"
            ).fetchall()

    def succeeded() -> int:
        return sum(status == "succeeded" for _, status, _ in runs())

    scheduler = subprocess.Popen(
        [*child.manage, "scheduler", "--round-seconds", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(succeeded, lambda n: n >= 1, timeout=180, what="a succeeded refresh")
        last_before = runs()[-1][0]
        spark_connect.stop()
        try:
            # A round claimed after the stop failed: it started with the server down.
            wait_until(
                lambda: runs()[-1][:2],
                lambda last: last[0] > last_before and last[1] == "failed",
                timeout=120,
                what="a round started after the stop to fail",
            )
            down = [run for run in runs() if run[0] > last_before]
        finally:
            spark_connect.start()
        before = succeeded()
        wait_until(
            succeeded, lambda n: n > before, timeout=180, what="a refresh on the server back"
        )
        scheduler.send_signal(signal.SIGTERM)
        out, _ = scheduler.communicate(timeout=60)
    finally:
        if scheduler.poll() is None:  # the test failed before the stop: end it and its pipe
            scheduler.kill()
            out, _ = scheduler.communicate(timeout=30)
    assert scheduler.returncode == 0, out
    assert "Refreshes run on Spark Connect (SPARK_REMOTE)." in out and "Stopped." in out
    assert "Starting Spark" not in out
    refused = down[-1][2]
    assert refused.startswith(f"The Spark Connect server at localhost:{spark_connect.port}:")
    assert "Connection refused" in refused, refused
    # Nothing half-stored: no history folder of a failed run.
    history = tmp_path / "history"
    assert not [run for run, *_ in down if list(history.glob(f"**/run={run}"))]
    # The SIGTERM may cut a last round short (STOPPED); the others failed on the server.
    errors = [e for _, status, e in runs() if status == "failed" and e != run_records.STOPPED]
    for error in errors:
        # Down between refreshes, or gone mid-refresh: one line either way.
        assert "\n" not in error and "Spark Connect" in error, error
    assert "Traceback" not in out, out
    seen = [out, *errors, spark_connect.log.read_text(errors="replace")]
    assert not [text for text in seen if spark_connect.token in text]


def test_a_connect_server_killed_mid_refresh_fails_the_run_in_one_line(
    fresh_kafka, settings, tmp_path
):
    """The server dies (SIGKILL, its Python workers too) while a read task runs: the run fails
    with one line (gRPC's details; the log keeps the traceback of an error met mid-query) and
    stores nothing. (The next refresh on a server back on its port: the scheduler's test.)

    A server of its own (one more JVM start, ~8 s): its Python workers pause every read
    (OFFSETS_FAULT_PAUSE, which they inherit from the server), which the session's server
    must not do to the other tests.
    """
    end_ms = seed(fresh_kafka)
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    cluster = Cluster.objects.create(name="killed", bootstrap_servers=fresh_kafka)
    paused = tmp_path / "paused"
    log = tmp_path / "child.log"
    root = tmp_path / "server"
    root.mkdir()
    with connect_server(root, **paused_at("refresh-reading", paused)) as server:
        process = child(server, [f"killed:full:{end_ms}"], settings.OFFSETS_HISTORY_PATH, log)
        try:
            # The read task's Python worker reached the pause point (or the child gave up).
            wait_until(
                lambda: paused.exists() or process.poll() is not None,
                bool,
                timeout=120,
                what="the read task's pause, or the child's end",
            )
            assert paused.exists(), log.read_text(errors="replace")[-2000:]
            server.kill()
            end_paused(paused)
            report = report_of(process, log)
        finally:
            process.kill()
    [failed] = report["runs"]
    assert failed["status"] == "failed"
    assert "\n" not in failed["error"] and "Spark Connect" in failed["error"], failed["error"]
    assert not SourceOffset.objects.filter(cluster=cluster).exists()
    assert not list(history_store.history_path(cluster).glob("run=*"))


def test_a_secured_cluster_refreshes_over_spark_connect_and_no_secret_shows(
    secured_kafka, tmp_path, spark_connect, monkeypatch
):
    """The secured runtime's Connect cluster over SASL_SSL as the dashboard's SCRAM user,
    which holds SECURITY.md's viewing set only: the server's tasks read with the credentials
    the read's options carry, and neither the SCRAM password, the worker's REST password nor
    the Connect token shows in the server's log, the child's log or the run."""
    # A source of its own (the worker is shared), so that the full refresh reads commits.
    source, data = f"sca-{uuid.uuid4().hex[:8]}-source", f"sca-{uuid.uuid4().hex[:8]}-data"
    rest = secured_kafka.rest()
    write_lines(tmp_path / "in.txt", ["one", "two"])
    rest.create(source, file_source(tmp_path / "in.txt", data))
    rest.wait_for_offsets(source, lambda o: o and o[0]["offset"]["position"] == 8)
    bindings = secured_runtime.viewing_acls(
        f"User:{secured_runtime.DASHBOARD_USER}",
        connect_topics=secured_runtime.WORKER_TOPICS.values(),
        data_topics=[data],
        sink_groups=[],
    ).values()
    create_acls(secured_kafka.setup, list(bindings))
    client_settings = secured_kafka.sasl()
    del client_settings["bootstrap.servers"]
    secured_runtime.register(
        "secured-connect",
        secured_kafka.info.sasl_bootstrap,
        client_settings,
        secured_kafka,
        monkeypatch,
    )
    log = tmp_path / "child.log"
    history = str(tmp_path / "history")
    process = child(
        spark_connect, [f"secured-connect:full:{int(time.time() * 1000)}"], history, log
    )
    try:
        report = report_of(process, log)
    finally:
        process.kill()
    [run] = report["runs"]
    assert run["status"] == "succeeded", run
    stored = SourceOffset.objects.get(cluster__name="secured-connect", connector=source)
    assert json.loads(stored.offset_text) == {"position": 8}
    secrets = [
        secured_kafka.users.passwords[secured_runtime.DASHBOARD_USER],
        secured_kafka.rest_password,
        spark_connect.token,
    ]
    seen = {
        "child log": log.read_text(errors="replace"),
        "server log": spark_connect.log.read_text(errors="replace"),
        "run": json.dumps(run),
    }
    assert not [what for what, text in seen.items() for secret in secrets if secret in text]
