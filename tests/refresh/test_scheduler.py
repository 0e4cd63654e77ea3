"""`manage.py scheduler`: every cluster refreshed on its own period by one process.

In this process (Scheduler, the session's Spark and seeded demo): a slow cluster holds
neither the rounds nor the other clusters, nor does a secured cluster registered with a wrong
SASL password (the secured runtime's), and a stop marks the refresh still running. In a
child process (the command itself): SIGKILL mid-refresh, a restart that settles the killed
run and refreshes again, then SIGTERM that ends it within 10 s; and SIGTERM or SIGINT while a
refresh is held mid-Spark, which logs one warning and no traceback. Two schedulers at once:
test_two_schedulers.py.
"""

import signal
import sqlite3
import subprocess
import threading
import time

import pytest

from offsets.models import RefreshRun, SchedulerBeat
from offsets.refresh import run_records
from offsets.refresh import scheduler as scheduling
from tests.support import factories, secured_runtime
from tests.support.child_cluster import child_cluster, end_paused, paused_at

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def wait_for(condition, *, timeout: float, every: float = 0.2, then=lambda: None):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        then()
        time.sleep(every)


@pytest.fixture
def blocked(monkeypatch):
    """Clusters named here refresh only once the event is set (a slow cluster); after a stop
    they give up without refreshing, as a killed process would."""
    release = threading.Event()
    slow: set[int] = set()
    real = scheduling.run_refresh

    def run_refresh(*, cluster, **kwargs):
        if cluster.pk in slow:
            release.wait(120)
            run = RefreshRun.objects.get(pk=kwargs["run"].pk)
            if run.status != RefreshRun.Status.RUNNING:
                return run
        return real(cluster=cluster, **kwargs)

    monkeypatch.setattr(scheduling, "run_refresh", run_refresh)
    yield slow, release
    release.set()


def test_a_slow_cluster_holds_neither_the_rounds_nor_the_other_clusters(
    demo_cluster, spark, blocked, settings
):
    settings.KAFKA_READ_TIMEOUT = 1
    slow_ids, release = blocked
    demo_cluster.refresh_every_seconds = 1
    demo_cluster.save()
    slow = factories.cluster("slow", refresh_every_seconds=1)  # nothing listens at its port
    slow_ids.add(slow.pk)
    said = []
    scheduler = scheduling.Scheduler(spark=spark, refreshes_at_once=2, say=said.append)
    try:
        assert {run.cluster_id for run in scheduler.round()} == {demo_cluster.pk, slow.pk}

        def demo_succeeded() -> int:
            return RefreshRun.objects.filter(cluster=demo_cluster, status="succeeded").count()

        # Rounds go on while the slow cluster's refresh hangs: the demo is refreshed again.
        wait_for(lambda: demo_succeeded() >= 2, timeout=180, then=scheduler.round)
        assert list(RefreshRun.objects.filter(cluster=slow).values_list("status", flat=True)) == [
            "running"
        ]
        release.set()
        scheduler.busy[slow.pk].join(60)
        failed = RefreshRun.objects.get(cluster=slow)
        assert failed.status == "failed" and failed.error
        # Its next try waits out its period from that run's start, then goes like any other.
        wait_for(
            lambda: RefreshRun.objects.filter(cluster=slow).count() == 2,
            timeout=30,
            then=scheduler.round,
        )
    finally:
        scheduler.stop(timeout=60)
    assert any(line.startswith("demo: refresh #") and "succeeded" in line for line in said)


@pytest.mark.engine_independent(
    "its subject is the secured cluster's message; two refreshes writing at once through the"
    " scheduler are the slow-cluster test's, which runs on PostgreSQL too"
)
def test_a_secured_cluster_with_a_wrong_password_fails_alone_with_one_plain_message(
    demo_cluster, secured_kafka, spark, monkeypatch
):
    wrong_password = "not-the-password-4711"
    settings = secured_kafka.sasl(password=wrong_password)
    bootstrap = settings.pop("bootstrap.servers")
    wrong = secured_runtime.register(
        "wrong-password", bootstrap, settings, secured_kafka, monkeypatch, worker=False
    )
    said = []
    scheduler = scheduling.Scheduler(spark=spark, refreshes_at_once=2, say=said.append)
    try:
        # One round starts both: neither waits for the other's turn.
        assert {run.cluster_id for run in scheduler.round()} == {demo_cluster.pk, wrong.pk}
        for thread in list(scheduler.busy.values()):
            thread.join(180)
            assert not thread.is_alive(), thread.name
    finally:
        scheduler.stop(timeout=60)

    healthy = RefreshRun.objects.get(cluster=demo_cluster)
    assert healthy.status == RefreshRun.Status.SUCCEEDED, healthy.error
    failed = RefreshRun.objects.get(cluster=wrong)
    assert failed.status == RefreshRun.Status.FAILED
    assert "did not answer within" in failed.error and "Authentication failed" in failed.error
    assert "\n" not in failed.error and "Traceback" not in failed.error
    [line] = [line for line in said if line.startswith("wrong-password: refresh #")]
    assert " failed in " in line and line.endswith(f"; error: {failed.error}"), line
    for secret in (wrong_password, secured_kafka.users.passwords[secured_runtime.DASHBOARD_USER]):
        assert secret not in failed.error and secret not in "\n".join(said)


def test_a_stop_marks_the_refresh_still_running_as_interrupted(spark, blocked):
    slow_ids, release = blocked
    slow = factories.cluster("slow", refresh_every_seconds=60)
    slow_ids.add(slow.pk)
    scheduler = scheduling.Scheduler(spark=spark, refreshes_at_once=1, say=lambda text: None)
    assert SchedulerBeat.objects.count() == 1
    [run] = scheduler.round()

    assert scheduler.stop(timeout=0.5) == 1

    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", run_records.STOPPED)
    assert not SchedulerBeat.objects.exists()
    assert scheduler.round() == []  # nothing starts once stopped
    release.set()


def test_the_command_survives_sigkill_and_stops_on_sigterm_within_ten_seconds(
    fresh_kafka, tmp_path
):
    child = child_cluster(fresh_kafka, tmp_path)
    env, manage, database = child.env, child.manage, child.database
    with sqlite3.connect(database) as db:
        db.execute("UPDATE offsets_cluster SET refresh_every_seconds = 2")

    def runs() -> list[tuple]:
        with sqlite3.connect(database) as db:
            return db.execute("SELECT status, error FROM offsets_refreshrun ORDER BY id").fetchall()

    def scheduler() -> subprocess.Popen:
        return subprocess.Popen(
            [*manage, "scheduler", "--round-seconds", "0.5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    first = scheduler()
    try:
        wait_for(lambda: runs() and runs()[-1][0] == "running", timeout=180)
    finally:
        first.kill()  # SIGKILL, mid-refresh
        first.communicate(timeout=30)
    second = scheduler()
    try:
        wait_for(lambda: any(status == "succeeded" for status, _ in runs()), timeout=180)
        killed = runs()[0]
        assert killed[0] == "failed" and killed[1].startswith("Abandoned"), killed
        second.send_signal(signal.SIGTERM)
        started = time.monotonic()
        out, _ = second.communicate(timeout=30)
        assert time.monotonic() - started < 10, out
    finally:
        if second.poll() is None:  # the test failed before the stop: end it and its pipe
            second.kill()
            out, _ = second.communicate(timeout=30)
    assert second.returncode == 0, out
    assert "Received SIGTERM: stopping." in out and "Stopped." in out
    # Nothing is left running: a refresh cut short says so.
    assert all(status != "running" for status, _ in runs())
    assert all(error == run_records.STOPPED for status, error in runs()[1:] if status == "failed")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_mid_spark_logs_one_warning_and_no_traceback(fresh_kafka, tmp_path, stop):
    """A container's stop (SIGTERM) or Ctrl-C (SIGINT, which Spark's context also handles)
    cancels the refresh's Spark job: the run is interrupted, not failed, and says so once."""
    child = child_cluster(fresh_kafka, tmp_path)
    paused = tmp_path / "paused"
    env = {
        **child.env,
        # The refresh's Spark read task waits there until the stop cancels its job.
        **paused_at("refresh-reading", paused),
        "LOG_FORMAT": "plain",
    }
    scheduler = subprocess.Popen(
        [*child.manage, "scheduler", "--round-seconds", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(paused.exists, timeout=180)
        scheduler.send_signal(stop)
        out, _ = scheduler.communicate(timeout=60)
    finally:
        if scheduler.poll() is None:  # the test failed before the stop: end it and its pipe
            scheduler.kill()
            out, _ = scheduler.communicate(timeout=30)
        end_paused(paused)
    with sqlite3.connect(child.database) as db:
        [(run_id, status, error)] = db.execute(
            "SELECT id, status, error FROM offsets_refreshrun"
        ).fetchall()
    assert (status, error) == ("failed", run_records.STOPPED)
    assert scheduler.returncode == 0, out
    lines = out.splitlines()
    [warning] = [line for line in lines if "interrupted by shutdown" in line]
    assert " WARNING " in warning and f"loop: refresh #{run_id} interrupted by shutdown" in warning
    assert "Traceback" not in out, out
    assert not [line for line in lines if " ERROR " in line or "SPARK_JOB_CANCELLED" in line], out
