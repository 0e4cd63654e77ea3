"""Two `manage.py scheduler` processes on one PostgreSQL database, as deployed for availability.

Each cluster is refreshed by one of them at a time: the claim is a lease its holder renews
(offsets/refresh/background.py), which the other respects while it holds. When the holder is
killed outright mid-refresh, the other takes the cluster over once the lease runs out and
refreshes it. Both are real processes with their own Spark, reading the session's broker and
seeded demo, as the scheduler tests' children do.
"""

import itertools
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from offsets import tuning
from offsets.models import RefreshRun, SchedulerBeat
from tests.support.child_cluster import ROOT, end_paused, paused_at
from tests.support.db_faults import database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# What the issue promises: a killed scheduler's cluster is refreshed again within 30 s.
TAKE_OVER_SECONDS = 30


def wait_for(condition, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def start_scheduler(env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "scheduler", "--round-seconds", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def test_a_killed_schedulers_cluster_is_taken_over_by_the_other_within_its_lease(
    demo_cluster, settings, tmp_path
):
    if connection.vendor != "postgresql":
        pytest.skip(
            "needs PostgreSQL: two scheduler processes writing one database at once, as deployed "
            "for availability (SQLite serves one process at a time)"
        )
    demo_cluster.refresh_every_seconds = 2
    demo_cluster.save()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": database_url(),
        "OFFSETS_HISTORY_PATH": settings.OFFSETS_HISTORY_PATH,
        "RUN_DIR": str(settings.RUN_DIR),
        "LOG_FORMAT": "plain",
    }
    paused = tmp_path / "paused"
    schedulers: list[subprocess.Popen] = []
    logs = {name: (tmp_path / f"{name}.log").open("w") for name in ("a", "b")}
    try:
        # A claims the demo's first refresh and holds it mid-Spark (its read task waits at the
        # pause point): a refresh caught in flight, whatever the machine's speed.
        a = start_scheduler({**env, **paused_at("refresh-reading", paused)}, logs["a"])
        schedulers.append(a)
        wait_for(paused.exists, timeout=240, what="A's refresh to reach its Spark read")
        [held] = RefreshRun.objects.filter(cluster=demo_cluster)
        assert (held.status, held.pid) == (RefreshRun.Status.RUNNING, a.pid)
        # As if A ran on another machine: there, B could not see A's pid go, and only the
        # lease says that A is gone. (On one machine B would take over at once, by the pid.)
        RefreshRun.objects.filter(pk=held.pk).update(host="scheduler-a (another machine)")

        b = start_scheduler(env, logs["b"])
        schedulers.append(b)
        # B's rounds look at the demo while A holds it, and leave it to A.
        first = wait_for(
            lambda: SchedulerBeat.objects.filter(pid=b.pid).first(),
            timeout=240,
            what="B's first round",
        )
        wait_for(
            lambda: (
                SchedulerBeat.objects.get(pk=first.pk).beat_at
                >= first.beat_at + timedelta(seconds=3)
            ),
            timeout=60,
            what="B's rounds",
        )
        assert list(RefreshRun.objects.filter(cluster=demo_cluster)) == [held]
        assert RefreshRun.objects.get(pk=held.pk).status == RefreshRun.Status.RUNNING

        a.send_signal(signal.SIGKILL)  # mid-refresh, holding the claim
        a.wait(timeout=30)
        killed_at = timezone.now()
        taken = wait_for(
            lambda: RefreshRun.objects.filter(cluster=demo_cluster, pid=b.pid).first(),
            timeout=120,
            what="B to take the demo over",
        )
        took = (taken.started_at - killed_at).total_seconds()
        assert took <= TAKE_OVER_SECONDS, f"taken over {took:.1f} s after the kill"
        held.refresh_from_db()
        assert held.status == RefreshRun.Status.FAILED
        assert "stopped renewing its lease" in held.error, held.error
        # Taken over once its lease ran out, as the next claim began: not before.
        assert held.lease_expires_at <= held.finished_at == taken.started_at
        assert held.lease_expires_at - held.heartbeat_at == timedelta(
            seconds=tuning.REFRESH_LEASE_SECONDS
        )
        wait_for(
            lambda: RefreshRun.objects.filter(
                pk=taken.pk, status=RefreshRun.Status.SUCCEEDED
            ).exists(),
            timeout=240,
            what="B's refresh of the demo to succeed",
        )
        b.send_signal(signal.SIGTERM)
        assert b.wait(timeout=30) == 0
    finally:
        for process in schedulers:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        end_paused(paused)
        for log in logs.values():
            log.close()

    # No two refreshes of the demo ever overlapped: each began once the one before ended.
    runs = list(RefreshRun.objects.filter(cluster=demo_cluster).order_by("started_at", "pk"))
    assert runs[0] == held and len(runs) >= 2
    for before, after in itertools.pairwise(runs):
        assert before.finished_at is not None and before.finished_at <= after.started_at, (
            before,
            after,
        )
    assert runs[-1].finished_at is not None  # B's stop left none running
