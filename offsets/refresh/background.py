"""Claims on a cluster's refresh, each a lease its process renews, and refreshes started in
the background: one detached `manage.py refresh_offsets` per cluster."""

import contextlib
import functools
import logging
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from offsets import tuning
from offsets.domain.leases import TakeOver, lease_expiry, take_over
from offsets.history import store as history_store
from offsets.models import Cluster, RefreshRun

logger = logging.getLogger(__name__)

MANAGE_PY = settings.BASE_DIR / "manage.py"


@dataclass(frozen=True)
class AlreadyRunning:
    """Why a refresh was not started: this run of the cluster is still going."""

    run: RefreshRun

    @property
    def message(self) -> str:
        started = timezone.localtime(self.run.started_at)
        # The last heartbeat tells whoever waits whether it is still working.
        beat = (
            f", last sign of life {(timezone.now() - self.run.heartbeat_at).total_seconds():.0f} s ago"
            if self.run.heartbeat_at
            else ""
        )
        return (
            f"A refresh of {self.run.cluster.name} is already running "
            f"(started {started:%Y-%m-%d %H:%M:%S %Z}, {self.run.phase or 'starting'}{beat})."
        )


def running_refresh(*, cluster: Cluster) -> RefreshRun | None:
    """Return the cluster's refresh that is still running, if any."""
    return (
        RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.RUNNING)
        .order_by("-started_at")
        .first()
    )


def start_refresh(*, cluster: Cluster, full: bool = False) -> RefreshRun | None:
    """Claim the cluster's refresh and launch it as a detached process; None if one is running.

    The claim is a RUNNING RefreshRun holding a lease on the cluster (`claim_refresh`); the
    process launched (`refresh_offsets --run-id`) renews it and fills in that same run.
    """
    run = claim_refresh(cluster=cluster, full=full)
    if run is None:
        return None
    try:
        _launch(cluster=cluster, run=run, full=full)
    except OSError as exc:
        logger.exception("Cannot start the refresh of %s", cluster.name)
        RefreshRun.objects.filter(pk=run.pk).update(
            status=RefreshRun.Status.FAILED,
            finished_at=timezone.now(),
            error=f"The refresh process could not be started: {exc}",
        )
        run.refresh_from_db()
    return run


class LeaseLost(Exception):
    """This refresh's claim was taken over while it ran: its results are not saved."""


def claim_refresh(*, cluster: Cluster, full: bool) -> RefreshRun | None:
    """Claim the cluster's refresh: a RUNNING run holding a lease on it (renewed by
    `heartbeat`); None while another claim holds one.

    Claims of a cluster take its lock, so two claims (two schedulers, a scheduler and a
    button, on one machine or several) never both win. A running claim whose lease ran out,
    or whose process is known to be gone, is taken over first (`_take_over`).
    """
    with transaction.atomic():
        # Serialise claims of one cluster: a second claim waits here until this one commits,
        # and then sees the run created below instead of creating its own.
        cluster.lock()
        now = database_now(Cluster.objects.filter(pk=cluster.pk))
        for running in RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.RUNNING):
            if not _take_over(cluster, running, now=now):
                return None
        return leased_run(cluster, full=full, now=now)


def leased_run(cluster: Cluster, *, full: bool, now: datetime) -> RefreshRun:
    """A new RUNNING run of this process, its lease starting `now` (the database's clock)."""
    return RefreshRun.objects.create(
        cluster=cluster,
        started_at=now,
        status=RefreshRun.Status.RUNNING,
        full=full,
        phase="starting",
        lease_expires_at=lease_expiry(now, seconds=tuning.REFRESH_LEASE_SECONDS),
        **this_process(),
    )


def _take_over(cluster: Cluster, running: RefreshRun, *, now: datetime) -> bool:
    """End `running` as abandoned if its claim no longer holds (`domain.leases.take_over`);
    return whether it was ended.

    Compared and set in one statement on the lease it was judged by: a renewal that came
    after the look leaves the claim holding, and a renewal after this update finds the run
    no longer RUNNING.
    """
    why = take_over(running.lease_expires_at, now=now, process_gone=process_gone(running))
    if why is None:
        return False
    ended = RefreshRun.objects.filter(
        pk=running.pk,
        status=RefreshRun.Status.RUNNING,
        lease_expires_at=running.lease_expires_at,
    ).update(status=RefreshRun.Status.FAILED, finished_at=now, error=abandoned(running, why))
    if ended:
        _drop_history_once_committed(cluster, [running.pk])
    return bool(ended)


def abandoned(run: RefreshRun, why: TakeOver) -> str:
    """The error of a run taken over: what became of its process."""
    process = f"its process ({run.pid} on {run.host})"
    if why is TakeOver.PROCESS_GONE:
        return f"Abandoned: {process} is gone."
    return (
        f"Abandoned: {process} stopped renewing its lease (killed, or cut off from the "
        "database?); the next refresh took its cluster over."
    )


def holds_claim(run: RefreshRun, *, now: datetime) -> bool:
    """Whether a RUNNING run still holds its cluster at `now` (the database's clock)."""
    return take_over(run.lease_expires_at, now=now, process_gone=process_gone(run)) is None


def hold_claim(cluster: Cluster, run_pk: int) -> None:
    """Raise LeaseLost unless the run still holds its claim: the first step of its save's
    transaction.

    Under the cluster's lock, which every take-over takes too: none can come between this look
    and the save's commit. A refresh taken over while it ran (its lease ran out while it was
    cut off from the database, say) saves nothing beside the one that took its cluster over.
    """
    cluster.lock()
    if not RefreshRun.objects.filter(pk=run_pk, status=RefreshRun.Status.RUNNING).exists():
        raise LeaseLost(
            f"This refresh's claim on {cluster.name} was taken over while it ran (its lease "
            "ran out), so its results were not saved."
        )


def database_now(rows: QuerySet) -> datetime:
    """The database's clock, read with the first of `rows`: every process judges leases by
    it, whatever its own machine's clock says."""
    now = rows.annotate(database_now=Now()).values_list("database_now", flat=True).first()
    if now is None:
        raise RefreshRun.DoesNotExist("nothing to read the database's clock with")
    return now


def renew_lease(run_pk: int) -> bool:
    """Renew a running run's lease from now; False when it no longer runs (it ended, or it
    was taken over)."""
    now = database_now(RefreshRun.objects.filter(pk=run_pk))
    return bool(
        RefreshRun.objects.filter(pk=run_pk, status=RefreshRun.Status.RUNNING).update(
            heartbeat_at=now,
            lease_expires_at=lease_expiry(now, seconds=tuning.REFRESH_LEASE_SECONDS),
        )
    )


def _drop_history_once_committed(cluster: Cluster, run_pks: list[int]) -> None:
    """Remove the history folders of abandoned runs once their abandonment is committed.

    A killed refresh cannot remove its own folder as a failed one does: it may hold a Parquet
    file cut off mid-write, which would break every reader of the connector's history and
    every merge of the folder. Its commits are read again by the next refresh.
    """
    for pk in run_pks:
        transaction.on_commit(functools.partial(history_store.drop_run, cluster, pk))


@contextlib.contextmanager
def heartbeat(run: RefreshRun):
    """Renew the running `run`'s lease every REFRESH_LEASE_RENEW_SECONDS while the block runs,
    from a thread of its own (a refresh's main thread may wait minutes on Spark).

    The lease is what keeps the cluster this refresh's: without renewals the next claim takes
    it over once it runs out. A renewal that fails (a busy or unreachable database) is logged
    and tried again at the next one; once the run no longer runs (ended, or taken over) the
    thread stops.
    """
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(tuning.REFRESH_LEASE_RENEW_SECONDS):
                try:
                    if not renew_lease(run.pk):
                        return
                except DatabaseError as exc:
                    logger.warning("Could not renew the lease of refresh %s: %s", run.pk, exc)
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=beat, name=f"heartbeat-refresh-{run.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        # Not forever: a renewal stuck on a database lock must not hold up the refresh's end
        # (a late renewal leaves a run that is no longer RUNNING alone).
        thread.join(timeout=10)


def this_process() -> dict:
    """The fields that name the process running a refresh (RefreshRun.host, .pid,
    .pid_started)."""
    pid = os.getpid()
    return {"host": process_host(), "pid": pid, "pid_started": process_started(pid)}


# The kernel's own pid namespace (PROC_PID_INIT_INO): processes that run in no container.
_HOST_PID_NAMESPACE = 4026531836


def process_host() -> str:
    """Where this process's pid means something: the hostname, followed by the pid namespace
    inside a container. Containers on the host's network share its hostname but not its
    pids (each has its own pid 1), so a pid seen from one container says nothing of another's
    process, nor of the one it replaced when it was started again."""
    host = socket.gethostname()
    namespace = _pid_namespace()
    if namespace is None or namespace == _HOST_PID_NAMESPACE:
        return host
    return f"{host} (pid namespace {namespace})"


def _pid_namespace() -> int | None:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # no /proc: pids are compared on the hostname alone
        return None


def process_started(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot; None where /proc cannot say."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, IndexError, ValueError):
        return None


def _stat_fields(pid: int) -> list[str]:
    # The fields after the command name, which is in parentheses and may hold anything.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()


def process_gone(run: RefreshRun) -> bool:
    """Whether the run's process is known to be gone (`pid_gone`)."""
    return pid_gone(run.host, run.pid, started=run.pid_started)


def pid_gone(host: str, pid: int | None, *, started: int | None = None) -> bool:
    """Whether the process `pid` on `host` (a `process_host`) is known to be gone: where this
    process runs, no such live process, or one that started at another time than `started`
    (its pid was reused).

    Another host's or container's process cannot be asked: its run holds its cluster until
    its lease runs out.
    """
    if not pid or host != process_host():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    try:
        fields = _stat_fields(pid)
        if fields[0] == "Z":  # a zombie (ended, not reaped yet) is gone too
            return True
        return started is not None and int(fields[19]) != started
    except (OSError, IndexError, ValueError):
        return False


def refresh_command(*, cluster: Cluster, run: RefreshRun, full: bool) -> list[str]:
    command = [
        sys.executable,
        str(MANAGE_PY),
        "refresh_offsets",
        "--cluster",
        cluster.name,
        "--run-id",
        str(run.pk),
    ]
    if full:
        command.append("--full")
    return command


def _launch(*, cluster: Cluster, run: RefreshRun, full: bool) -> None:
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)
    log_path = settings.RUN_DIR / f"refresh-{cluster.name}.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            refresh_command(cluster=cluster, run=run, full=full),
            cwd=settings.BASE_DIR,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its own session: a web server restart or Ctrl-C does not kill a running refresh.
            start_new_session=True,
        )
    # The child runs it (it says so again once started): the claiming web worker may end first.
    RefreshRun.objects.filter(pk=run.pk).update(pid=process.pid)
    logger.info(
        "Started refresh %s of %s (pid %s, log %s)", run.pk, cluster.name, process.pid, log_path
    )
    # Reap the child when it ends so it does not linger as a zombie of the web server.
    threading.Thread(target=process.wait, name=f"reap-refresh-{run.pk}", daemon=True).start()
