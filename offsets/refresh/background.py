"""Start a refresh in the background: one detached `manage.py refresh_offsets` per cluster."""

import contextlib
import functools
import logging
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

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

    The claim is a RUNNING RefreshRun created only when no other run of the cluster is
    RUNNING; the process launched (`refresh_offsets --run-id`) fills in that same run.
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


def claim_refresh(*, cluster: Cluster, full: bool) -> RefreshRun | None:
    now = timezone.now()
    with transaction.atomic():
        # Serialise claims of one cluster: a second claim waits here until this one commits,
        # and then sees the run created below instead of creating its own.
        cluster.lock()
        # A run whose process gave no sign of life for this long lost it (killed, its machine
        # gone): it must not block refreshes forever. Its last sign is its last heartbeat, or
        # its start before the first one.
        abandoned_before = now - timedelta(seconds=settings.REFRESH_ABANDONED_SECONDS)
        silent = (
            RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.RUNNING)
            .alias(last_sign=Coalesce("heartbeat_at", "started_at"))
            .filter(last_sign__lt=abandoned_before)
        )
        candidates = list(silent.values_list("pk", flat=True))
        silent.update(
            status=RefreshRun.Status.FAILED,
            finished_at=now,
            error=(
                f"Abandoned: no sign of life from its process for "
                f"{settings.REFRESH_ABANDONED_SECONDS} s (it ended or was killed, or its host is "
                "gone)."
            ),
        )
        # Only the runs this update released: one whose heartbeat came after the look above
        # is still writing its folder.
        released = RefreshRun.objects.filter(
            pk__in=candidates, status=RefreshRun.Status.FAILED, finished_at=now
        )
        _drop_history_once_committed(cluster, list(released.values_list("pk", flat=True)))
        for running in RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.RUNNING):
            if not process_gone(running):
                return None
            _drop_history_once_committed(cluster, [running.pk])
            RefreshRun.objects.filter(pk=running.pk).update(
                status=RefreshRun.Status.FAILED,
                finished_at=now,
                error=f"Abandoned: its process ({running.pid} on {running.host}) is gone.",
            )
        return RefreshRun.objects.create(
            cluster=cluster,
            started_at=now,
            status=RefreshRun.Status.RUNNING,
            full=full,
            phase="starting",
            **this_process(),
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
    """Record a sign of life on the running `run` every REFRESH_HEARTBEAT_SECONDS while the
    block runs, from a thread of its own (a refresh's main thread may wait minutes on Spark).

    Without it, `claim_refresh` could only judge a run by its start: a refresh longer than
    REFRESH_ABANDONED_SECONDS would be taken for a dead one and a second one started beside it,
    and a run killed on another host blocked its cluster for that long. A beat that fails (a
    busy or unreachable database) is logged and tried again at the next one.
    """
    interval = settings.REFRESH_HEARTBEAT_SECONDS
    if interval <= 0:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    RefreshRun.objects.filter(pk=run.pk, status=RefreshRun.Status.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except DatabaseError as exc:
                    logger.warning("Could not record the heartbeat of refresh %s: %s", run.pk, exc)
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=beat, name=f"heartbeat-refresh-{run.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        # Not forever: a beat stuck on a database lock must not hold up the refresh's end (a
        # late beat leaves a run that is no longer RUNNING alone).
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

    Another host's or container's process cannot be asked: its run blocks until its
    heartbeats stop for REFRESH_ABANDONED_SECONDS.
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
