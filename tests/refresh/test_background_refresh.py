"""Starting a refresh in the background: one claim per cluster, a detached process."""

import io
import logging
import os
import signal
import socket
import sys
import threading
import time
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from offsets import tuning
from offsets.domain.leases import TakeOver
from offsets.history import store as history_store
from offsets.models import RefreshRun
from offsets.refresh import background, run_records
from tests.support import factories as make


@pytest.fixture
def launched(monkeypatch):
    calls = []
    monkeypatch.setattr(background, "_launch", lambda **kwargs: calls.append(kwargs))
    return calls


@pytest.mark.django_db
def test_it_claims_a_running_run_and_launches_the_refresh(launched):
    cluster = make.cluster("prod")
    run = background.start_refresh(cluster=cluster)
    assert run.status == RefreshRun.Status.RUNNING
    assert run.phase == "starting"
    assert launched == [{"cluster": cluster, "run": run, "full": False}]


@pytest.mark.django_db
def test_it_refuses_while_a_run_of_the_cluster_is_running(launched):
    cluster = make.cluster("prod")
    running = make.run(cluster, RefreshRun.Status.RUNNING)
    assert background.start_refresh(cluster=cluster) is None
    assert not launched
    assert background.running_refresh(cluster=cluster) == running
    message = background.AlreadyRunning(running).message
    assert message.startswith("A refresh of prod is already running (started ")


@pytest.mark.django_db
def test_a_run_of_another_cluster_does_not_block(launched):
    make.run(make.cluster("other"), RefreshRun.Status.RUNNING)
    assert background.start_refresh(cluster=make.cluster("prod")) is not None


def lease_ran_out(seconds_ago: float = 1) -> datetime:
    return timezone.now() - timedelta(seconds=seconds_ago)


@pytest.mark.django_db
def test_a_run_whose_lease_ran_out_is_taken_over(launched):
    cluster = make.cluster("prod")
    stuck = make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        ago=60,
        host="worker-2",
        pid=4242,
        lease_expires_at=lease_ran_out(),
    )
    run = background.start_refresh(cluster=cluster)
    assert run is not None and run != stuck
    assert run.lease_expires_at > run.started_at  # the new claim holds a lease of its own
    stuck.refresh_from_db()
    assert stuck.status == RefreshRun.Status.FAILED
    assert stuck.finished_at == run.started_at  # taken over as the new claim began
    assert stuck.error == (
        "Abandoned: its process (4242 on worker-2) stopped renewing its lease (killed, or cut "
        "off from the database?); the next refresh took its cluster over."
    )


@pytest.mark.django_db
def test_a_long_refresh_that_keeps_renewing_its_lease_is_not_taken_over(launched):
    # Started two hours ago on another host (its process cannot be asked), lease renewed a
    # moment ago: however long it runs, it keeps its cluster.
    cluster = make.cluster("prod")
    long_run = make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        ago=7200,
        host="worker-2",
        pid=4242,
        lease_expires_at=timezone.now() + timedelta(seconds=15),
    )
    assert background.start_refresh(cluster=cluster) is None
    assert not launched
    long_run.refresh_from_db()
    assert long_run.status == RefreshRun.Status.RUNNING

    # Its renewals stop (the host is gone): once its lease runs out, the next claim takes over.
    RefreshRun.objects.filter(pk=long_run.pk).update(lease_expires_at=lease_ran_out())
    assert background.start_refresh(cluster=cluster) is not None
    long_run.refresh_from_db()
    assert long_run.status == RefreshRun.Status.FAILED
    assert "stopped renewing its lease" in long_run.error


@pytest.mark.django_db
def test_a_run_without_a_lease_holds_nothing(launched):
    cluster = make.cluster("prod")
    leaseless = make.run(cluster, RefreshRun.Status.RUNNING, host="worker-2", pid=7)
    RefreshRun.objects.filter(pk=leaseless.pk).update(lease_expires_at=None)
    assert background.start_refresh(cluster=cluster) is not None
    assert RefreshRun.objects.get(pk=leaseless.pk).status == RefreshRun.Status.FAILED


@pytest.mark.django_db
def test_a_lease_renewed_after_the_look_is_not_taken_over(launched, monkeypatch):
    """The take-over compares the lease it judged with the one stored, in its UPDATE: a
    renewal landing between the two (another process's heartbeat) keeps the claim."""
    cluster = make.cluster("prod")
    holder = make.run(cluster, RefreshRun.Status.RUNNING, lease_expires_at=lease_ran_out())
    judged = []

    def renewed_meanwhile(expires_at, **kwargs):
        judged.append(expires_at)
        assert background.renew_lease(holder.pk)
        return TakeOver.LEASE_EXPIRED

    monkeypatch.setattr(background, "take_over", renewed_meanwhile)
    assert background.start_refresh(cluster=cluster) is None
    assert judged and not launched
    holder.refresh_from_db()
    assert holder.status == RefreshRun.Status.RUNNING and holder.lease_expires_at > judged[0]


@pytest.mark.django_db
def test_a_claim_still_held_passes_the_saves_check_and_one_taken_over_does_not(launched):
    cluster = make.cluster("prod")
    run = background.start_refresh(cluster=cluster)
    background.hold_claim(cluster, run.pk)
    RefreshRun.objects.filter(pk=run.pk).update(lease_expires_at=lease_ran_out())
    background.hold_claim(cluster, run.pk)  # ran out, but nobody took it over: still its own
    assert background.start_refresh(cluster=cluster) is not None
    with pytest.raises(background.LeaseLost, match="claim on prod was taken over while it ran"):
        background.hold_claim(cluster, run.pk)


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def quick_renewals(monkeypatch):
    monkeypatch.setattr(tuning, "REFRESH_LEASE_RENEW_SECONDS", 0.05)


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_renews_the_lease_while_its_block_runs(quick_renewals):
    cluster = make.cluster("prod")
    run = make.run(cluster, RefreshRun.Status.RUNNING, ago=5)
    done = make.run(cluster, ago=60)

    def lease_of(row: RefreshRun):
        stored = RefreshRun.objects.get(pk=row.pk)
        return stored.heartbeat_at, stored.lease_expires_at

    first = lease_of(run)
    with background.heartbeat(run), background.heartbeat(done):
        wait_for(lambda: lease_of(run)[0] is not None)
        renewed = lease_of(run)
        wait_for(lambda: lease_of(run)[1] > renewed[1])
    beat, expires = lease_of(run)
    assert expires - beat == timedelta(seconds=tuning.REFRESH_LEASE_SECONDS)
    assert expires > first[1]
    time.sleep(0.3)
    assert lease_of(run) == (beat, expires)  # no renewal after the block
    assert lease_of(done) == (None, None)  # a run that is no longer RUNNING is left alone


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_stops_once_its_run_was_taken_over(quick_renewals):
    run = make.run(make.cluster("prod"), RefreshRun.Status.RUNNING, ago=5)
    with background.heartbeat(run):
        wait_for(lambda: RefreshRun.objects.get(pk=run.pk).heartbeat_at is not None)
        RefreshRun.objects.filter(pk=run.pk).update(status=RefreshRun.Status.FAILED)
        wait_for(
            lambda: not any(t.name == f"heartbeat-refresh-{run.pk}" for t in threading.enumerate())
        )


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_take_an_expired_lease_over_exactly_once(launched):
    cluster = make.cluster("prod")
    stuck = make.run(
        cluster, RefreshRun.Status.RUNNING, host="worker-2", pid=7, lease_expires_at=lease_ran_out()
    )
    results = []
    barrier = threading.Barrier(4)

    def start():
        barrier.wait()
        try:
            results.append(background.start_refresh(cluster=cluster))
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [claimed] = [run for run in results if run is not None]
    assert len(launched) == 1
    assert list(RefreshRun.objects.filter(status=RefreshRun.Status.RUNNING)) == [claimed]
    stuck.refresh_from_db()
    assert stuck.status == RefreshRun.Status.FAILED and stuck.finished_at == claimed.started_at


@pytest.mark.django_db
def test_a_process_that_cannot_start_gives_a_failed_run(monkeypatch):
    def fail(**kwargs):
        raise OSError("No such file or directory: 'python'")

    monkeypatch.setattr(background, "_launch", fail)
    run = background.start_refresh(cluster=make.cluster("prod"))
    assert run.status == RefreshRun.Status.FAILED
    assert "could not be started: No such file" in run.error
    # It does not block the next attempt.
    assert background.running_refresh(cluster=run.cluster) is None


@pytest.mark.django_db
def test_the_command_is_manage_py_refresh_offsets_for_the_cluster():
    cluster = make.cluster("prod")
    run = make.run(cluster, RefreshRun.Status.RUNNING)
    command = background.refresh_command(cluster=cluster, run=run, full=False)
    assert command[0] == sys.executable
    assert command[1].endswith("manage.py")
    assert command[2:] == ["refresh_offsets", "--cluster", "prod", "--run-id", str(run.pk)]
    assert background.refresh_command(cluster=cluster, run=run, full=True)[-1] == "--full"


@pytest.mark.django_db
def test_it_starts_a_detached_process_that_logs_under_run_dir(monkeypatch, settings, tmp_path):
    settings.RUN_DIR = tmp_path
    marker = tmp_path / "ran"
    monkeypatch.setattr(
        background,
        "refresh_command",
        lambda **kwargs: [sys.executable, "-c", f"print('refreshing'); open({str(marker)!r}, 'w')"],
    )
    background.start_refresh(cluster=make.cluster("prod"))
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()
    time.sleep(0.2)
    assert (tmp_path / "refresh-prod.log").read_text() == "refreshing\n"


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_launch_exactly_one(launched):
    cluster = make.cluster("prod")
    results = []
    barrier = threading.Barrier(4)

    def start():
        barrier.wait()
        try:
            results.append(background.start_refresh(cluster=cluster))
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([run for run in results if run is not None]) == 1
    assert RefreshRun.objects.filter(status=RefreshRun.Status.RUNNING).count() == 1
    assert len(launched) == 1


def test_the_already_running_message_names_the_phase():
    run = RefreshRun(
        cluster=make.Cluster(name="prod"),
        started_at=timezone.now() - timedelta(seconds=5),
        phase="writing results",
    )
    assert "writing results" in background.AlreadyRunning(run).message
    assert "sign of life" not in background.AlreadyRunning(run).message  # none yet
    run.heartbeat_at = timezone.now() - timedelta(seconds=12.2)
    assert background.AlreadyRunning(run).message.endswith(
        "writing results, last sign of life 12 s ago)."
    )


def ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.django_db
def test_a_run_whose_process_is_gone_on_this_host_no_longer_blocks(launched):

    cluster = make.cluster("prod")
    pid = ended_pid()
    killed = make.run(
        cluster, RefreshRun.Status.RUNNING, ago=5, host=background.process_host(), pid=pid
    )
    run = background.start_refresh(cluster=cluster)
    assert run is not None and (run.host, run.pid) == (background.process_host(), os.getpid())
    killed.refresh_from_db()
    assert killed.status == RefreshRun.Status.FAILED
    assert killed.error == f"Abandoned: its process ({pid} on {background.process_host()}) is gone."


@pytest.mark.django_db
def test_a_run_whose_process_lives_or_runs_elsewhere_still_blocks(launched):

    cluster = make.cluster("prod")
    alive = make.run(
        cluster, RefreshRun.Status.RUNNING, ago=5, host=background.process_host(), pid=os.getpid()
    )
    assert background.start_refresh(cluster=cluster) is None
    # Another host's process cannot be asked: its run blocks until it is deemed abandoned.
    RefreshRun.objects.filter(pk=alive.pk).update(host="worker-2", pid=ended_pid())
    assert background.start_refresh(cluster=cluster) is None
    assert not launched and RefreshRun.objects.get().status == RefreshRun.Status.RUNNING


@pytest.mark.django_db
def test_a_run_in_another_container_on_this_hostname_blocks_whatever_its_pid(launched):
    """Containers on the host's network share its hostname, not its pids: a pid that ended
    here may be another container's live scheduler, so its run waits for its heartbeats."""
    cluster = make.cluster("prod")
    make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        ago=5,
        host=f"{socket.gethostname()} (pid namespace 4026532999)",
        pid=ended_pid(),
    )
    assert background.start_refresh(cluster=cluster) is None
    assert not launched and RefreshRun.objects.get().status == RefreshRun.Status.RUNNING


def test_a_process_in_a_container_is_placed_by_its_hostname_and_pid_namespace(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    monkeypatch.setattr(background, "_pid_namespace", lambda: 4026531836)
    assert background.process_host() == "vm"
    monkeypatch.setattr(background, "_pid_namespace", lambda: 4026532180)
    assert background.process_host() == "vm (pid namespace 4026532180)"
    monkeypatch.setattr(background, "_pid_namespace", lambda: None)
    assert background.process_host() == "vm"


@pytest.mark.django_db
def test_a_run_whose_pid_was_reused_no_longer_blocks(launched):
    """Same host and pid namespace, and this process holds the dead refresh's pid (pids
    wrap around). Its start time tells them apart; a row without one waits as before."""

    cluster = make.cluster("prod")
    me = background.this_process()
    assert me["pid_started"] == background.process_started(os.getpid()) is not None
    earlier = make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        ago=5,
        host=background.process_host(),
        pid=os.getpid(),
        pid_started=None,
    )
    assert background.start_refresh(cluster=cluster) is None  # no start time: it may live
    RefreshRun.objects.filter(pk=earlier.pk).update(pid_started=me["pid_started"] - 1)
    run = background.start_refresh(cluster=cluster)
    assert run is not None and run.pid_started == me["pid_started"]
    earlier.refresh_from_db()
    assert (
        earlier.error
        == f"Abandoned: its process ({os.getpid()} on {background.process_host()}) is gone."
    )


@pytest.mark.django_db
def test_an_interrupted_refresh_is_recorded_as_failed_with_one_warning(
    monkeypatch, settings, tmp_path, caplog
):
    from offsets.refresh import plan, run

    settings.OFFSETS_HISTORY_PATH = str(tmp_path)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plan, "read_state_and_plan", ctrl_c)
    with caplog.at_level(logging.WARNING), pytest.raises(KeyboardInterrupt):
        run.run_refresh(cluster=make.cluster("prod"))
    stored = RefreshRun.objects.get()
    assert (stored.status, stored.error) == (RefreshRun.Status.FAILED, run_records.INTERRUPTED)
    assert stored.finished_at is not None
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records] == [
        ("WARNING", f"prod: refresh #{stored.pk} interrupted by shutdown", None)
    ]


@pytest.mark.django_db
def test_sigterm_stops_one_refresh_as_ctrl_c_does(monkeypatch, caplog):
    from django.core.management import CommandError, call_command

    from offsets.refresh import plan

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the command's handler raises in here
        raise AssertionError("SIGTERM did not stop the refresh")

    monkeypatch.setattr(plan, "read_state_and_plan", terminated)
    make.cluster("prod")

    def survive(signum, frame):
        """The test's own handler: without the command's, SIGTERM must not end pytest."""

    before = signal.signal(signal.SIGTERM, survive)
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(CommandError, match="Interrupted"):
            call_command("refresh_offsets", cluster="prod", stdout=io.StringIO())
        after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert after is survive  # the command put back the handler it found
    run = RefreshRun.objects.get()
    assert (run.status, run.error) == (RefreshRun.Status.FAILED, run_records.INTERRUPTED)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"prod: refresh #{run.pk} interrupted by shutdown"
    ]


@pytest.mark.django_db
def test_a_refresh_records_its_outcome_without_undoing_what_others_wrote_meanwhile(
    monkeypatch, settings, tmp_path
):
    from offsets.refresh import plan
    from offsets.refresh.run import run_refresh

    settings.OFFSETS_HISTORY_PATH = str(tmp_path)
    beat = timezone.now()

    def beaten_then_broken(cluster, **kwargs):
        # The heartbeat thread and the command write these while the refresh runs.
        RefreshRun.objects.update(heartbeat_at=beat, host="worker-2", pid=4242)
        raise RuntimeError("broker gone")

    monkeypatch.setattr(plan, "read_state_and_plan", beaten_then_broken)
    run = run_refresh(cluster=make.cluster("prod"))
    stored = RefreshRun.objects.get(pk=run.pk)
    assert (stored.status, stored.error) == (RefreshRun.Status.FAILED, "broker gone")
    assert (stored.heartbeat_at, stored.host, stored.pid) == (beat, "worker-2", 4242)


# -------------------------------------------------------------------------------------------
# The command fills in the claimed run (refresh_offsets --run-id).


@pytest.fixture
def fake_spark(monkeypatch):
    """The command's refreshes recorded instead of run, and Spark's start and stop if any."""
    from offsets.management.commands import refresh_offsets
    from offsets.spark import session

    calls = []

    class Spark:
        def stop(self):
            calls.append("stop")

    def started(*args):
        calls.append("spark")
        return Spark()

    def refresh(**kwargs):
        calls.append(kwargs)
        run = kwargs["run"] or RefreshRun.objects.create(
            cluster=kwargs["cluster"], started_at=timezone.now()
        )
        RefreshRun.objects.filter(pk=run.pk).update(status=RefreshRun.Status.SUCCEEDED)
        run.refresh_from_db()
        return run

    monkeypatch.setattr(session, "get_spark", started)
    monkeypatch.setattr(refresh_offsets, "run_refresh", refresh)
    return calls


@pytest.fixture
def kafka_answers(monkeypatch):
    """Kafka answers every refresh with no connector, so that the refresh goes on to Spark."""
    from offsets.connect_state import ConnectState
    from offsets.refresh import plan

    def read_state_and_plan(cluster, *, full, prepare):
        prepare(ConnectState(connectors=[], malformed_config_records=0, malformed_status_records=0))
        raise AssertionError("the test's Spark start returns nothing to plan with")

    monkeypatch.setattr(plan, "read_state_and_plan", read_state_and_plan)


@pytest.mark.django_db
def test_the_command_fills_in_the_claimed_run(fake_spark, launched):
    from django.core.management import call_command

    cluster = make.cluster("prod")
    claimed = background.start_refresh(cluster=cluster)
    RefreshRun.objects.filter(pk=claimed.pk).update(pid=1)  # claimed by the web server
    call_command("refresh_offsets", cluster="prod", run_id=claimed.pk, stdout=io.StringIO())
    assert fake_spark[0]["run"] == claimed
    assert RefreshRun.objects.get().pid == os.getpid()  # the command's process runs it now
    assert RefreshRun.objects.get().heartbeat_at is not None  # its first sign of life
    assert RefreshRun.objects.get().status == RefreshRun.Status.SUCCEEDED


@pytest.mark.django_db
def test_the_command_says_one_line_a_round_at_verbosity_zero(fake_spark):
    from django.core.management import call_command

    make.cluster("prod")
    quiet, loud = io.StringIO(), io.StringIO()
    call_command("refresh_offsets", cluster="prod", verbosity=0, stdout=quiet)
    call_command("refresh_offsets", cluster="prod", stdout=loud)
    assert fake_spark[0]["progress"] is None and fake_spark[1]["progress"] is not None
    assert [line.split(" in ")[0] for line in quiet.getvalue().splitlines()] == [
        f"Refresh #{RefreshRun.objects.earliest('pk').pk} succeeded"
    ]
    assert "Refreshing prod" in loud.getvalue()


@pytest.mark.django_db
def test_the_command_refuses_a_run_that_is_not_running(fake_spark):
    from django.core.management import CommandError, call_command

    cluster = make.cluster("prod")
    done = make.run(cluster)
    with pytest.raises(CommandError, match=f"No running refresh run #{done.pk} of prod"):
        call_command("refresh_offsets", cluster="prod", run_id=done.pk)
    with pytest.raises(CommandError, match="cannot be used with --every"):
        call_command("refresh_offsets", cluster="prod", run_id=done.pk, every=10)
    assert not fake_spark


@pytest.mark.django_db
def test_a_claimed_run_fails_when_spark_cannot_start(monkeypatch, launched, kafka_answers):
    from django.core.management import CommandError, call_command

    from offsets.spark import session

    def no_java(*args):
        raise RuntimeError("Java gateway process exited")

    monkeypatch.setattr(session, "get_spark", no_java)
    claimed = background.start_refresh(cluster=make.cluster("prod"))
    with pytest.raises(CommandError, match="Refresh failed: Spark could not start: Java gateway"):
        call_command("refresh_offsets", cluster="prod", run_id=claimed.pk)
    claimed.refresh_from_db()
    assert claimed.status == RefreshRun.Status.FAILED
    assert claimed.error == "Spark could not start: Java gateway process exited"


@pytest.mark.django_db
def test_ctrl_c_while_spark_starts_fails_the_claimed_run(monkeypatch, kafka_answers):
    from django.core.management import CommandError, call_command

    from offsets.spark import session

    def ctrl_c(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "get_spark", ctrl_c)
    make.cluster("prod")
    with pytest.raises(CommandError, match="Interrupted"):
        call_command("refresh_offsets", cluster="prod")
    run = RefreshRun.objects.get()  # claimed by the command itself
    assert (run.status, run.error) == (RefreshRun.Status.FAILED, run_records.INTERRUPTED)


@pytest.mark.django_db
def test_a_cluster_that_does_not_answer_fails_without_starting_spark(monkeypatch, settings):
    from django.core.management import CommandError, call_command

    from offsets.spark import session

    def no_spark_wanted(*args):
        raise AssertionError("Spark started for a cluster that never answered")

    monkeypatch.setattr(session, "get_spark", no_spark_wanted)
    settings.KAFKA_READ_TIMEOUT = 1
    make.cluster("prod")  # nothing listens at its port
    with pytest.raises(CommandError, match="Refresh failed: "):
        call_command("refresh_offsets", cluster="prod", stdout=io.StringIO())
    run = RefreshRun.objects.get()
    assert run.status == RefreshRun.Status.FAILED and "Spark" not in run.error


# -------------------------------------------------------------------------------------------
# Without --run-id the command claims its own runs: never two refreshes of a cluster at once.


@pytest.mark.django_db
def test_the_command_claims_its_run_and_refuses_while_another_runs(fake_spark):
    from django.core.management import CommandError, call_command

    cluster = make.cluster("prod")
    running = make.run(cluster, RefreshRun.Status.RUNNING, ago=5)
    with pytest.raises(CommandError, match=r"A refresh of prod is already running .* Not started"):
        call_command("refresh_offsets", cluster="prod", stdout=io.StringIO())
    assert not fake_spark  # refused before Spark started
    assert list(RefreshRun.objects.all()) == [running]

    RefreshRun.objects.filter(pk=running.pk).update(status=RefreshRun.Status.SUCCEEDED)
    call_command("refresh_offsets", cluster="prod", full=True, stdout=io.StringIO())
    claimed = fake_spark[0]["run"]
    assert claimed is not None and claimed != running and claimed.full
    assert RefreshRun.objects.get(pk=claimed.pk).status == RefreshRun.Status.SUCCEEDED


@pytest.mark.django_db
def test_a_loop_skips_its_round_while_another_refresh_runs(fake_spark, monkeypatch):
    import signal

    from django.core.management import call_command

    from offsets.management.commands import refresh_offsets

    monkeypatch.setattr(signal, "signal", lambda *args: None)  # keep pytest's own handlers
    cluster = make.cluster("prod")
    first = make.run(cluster, RefreshRun.Status.RUNNING, ago=5, phase="merging")
    rounds = []

    def next_round(command, cluster):
        # Rounds 1-2 meet the first run, 3 a second one; round 4 stops as SIGTERM would.
        rounds.append(cluster)
        if len(rounds) == 2:
            RefreshRun.objects.filter(pk=first.pk).update(status=RefreshRun.Status.SUCCEEDED)
            make.run(cluster, RefreshRun.Status.RUNNING, ago=1, phase="saving results")
        if len(rounds) == 3:
            command.stop.set()

    monkeypatch.setattr(refresh_offsets.Command, "reconcile_stale", next_round)
    out = io.StringIO()
    call_command("refresh_offsets", cluster="prod", every=0.01, stdout=out)
    lines = out.getvalue().splitlines()
    # Said once per other refresh, not once per round.
    assert len(rounds) == 3 and len(lines) == 3 and lines[-1] == "Stopped."
    assert lines[0].startswith("A refresh of prod is already running")
    assert lines[0].endswith("merging). Skipping rounds while it runs.")
    assert lines[1].endswith("saving results). Skipping rounds while it runs.")
    assert fake_spark == []  # no refresh ran, so Spark never started


@pytest.mark.django_db(transaction=True)
def test_the_command_beats_while_it_refreshes_spark_start_included(monkeypatch, quick_renewals):
    from django.core.management import call_command

    from offsets.management.commands import refresh_offsets

    cluster = make.cluster("prod")
    beats = {}

    def beaten_after(since):
        run = RefreshRun.objects.get()
        return run.heartbeat_at is not None and run.heartbeat_at > since

    def slow_refresh(**kwargs):
        # Spark starts inside the refresh (refresh.inputs.start_spark), so these beats cover it.
        since = timezone.now()
        wait_for(lambda: beaten_after(since))
        beats["refresh"] = True
        RefreshRun.objects.filter(pk=kwargs["run"].pk).update(status=RefreshRun.Status.SUCCEEDED)
        return RefreshRun.objects.get(pk=kwargs["run"].pk)

    monkeypatch.setattr(refresh_offsets, "run_refresh", slow_refresh)
    call_command("refresh_offsets", cluster=cluster.name, stdout=io.StringIO())
    assert beats == {"refresh": True}


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["silent", "process gone"])
def test_an_abandoned_runs_history_folder_goes_with_it(
    launched, settings, tmp_path, django_capture_on_commit_callbacks, how
):
    # A killed refresh cannot remove its folder, which may hold a Parquet file cut off
    # mid-write: every reader of the history and every merge would meet it.
    settings.OFFSETS_HISTORY_PATH = str(tmp_path)
    cluster = make.cluster("prod")
    kept = make.run(cluster, RefreshRun.Status.SUCCEEDED, ago=900)
    if how == "silent":
        killed = make.run(
            cluster,
            RefreshRun.Status.RUNNING,
            ago=601,
            host="worker-2",
            pid=7,
            lease_expires_at=lease_ran_out(),
        )
    else:
        killed = make.run(
            cluster,
            RefreshRun.Status.RUNNING,
            ago=5,
            host=background.process_host(),
            pid=ended_pid(),
        )
    for run in (kept, killed):
        folder = history_store.run_folder(cluster, run.pk) / "connector=a"
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").write_bytes(b"PAR1 cut off")
    with django_capture_on_commit_callbacks(execute=True):
        assert background.start_refresh(cluster=cluster) is not None
    killed.refresh_from_db()
    assert killed.status == RefreshRun.Status.FAILED
    assert not history_store.run_folder(cluster, killed.pk).exists()
    assert (history_store.run_folder(cluster, kept.pk) / "connector=a" / "part-0.parquet").exists()
