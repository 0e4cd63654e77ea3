"""Where a cluster's per-commit history lives, and its upkeep after each refresh."""

import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from offsets.history import files
from offsets.models import Cluster

logger = logging.getLogger(__name__)


def history_path(cluster: Cluster) -> Path:
    """Where the cluster's per-commit history (Parquet, one folder per run) lives."""
    return Path(settings.OFFSETS_HISTORY_PATH) / cluster.name / "commits"


def run_folder(cluster: Cluster, run_pk: int) -> Path:
    """The folder a run's read tasks write its commits to."""
    return history_path(cluster) / f"run={run_pk}"


def drop_run(cluster: Cluster, run_pk: int) -> None:
    """Remove a run's folder (a run abandoned mid-write), waiting for a merge going on."""
    root = history_path(cluster)
    if not root.exists():
        return
    with files.history_lock(root, wait=True):
        shutil.rmtree(run_folder(cluster, run_pk), ignore_errors=True)


def compact_history(
    cluster: Cluster, phase: Callable[[str], None], *, upto: int | None = None
) -> None:
    """Merge the history's newest run folders when there are too many (files.py).

    The results are saved by now: a merge that fails leaves the run folders as they were (the
    next refresh tries again), so it is logged, and the refresh still succeeded.
    """
    try:
        merged = files.compact_runs(history_path(cluster), files.MAX_RUN_FOLDERS, upto=upto)
    except Exception:
        logger.exception("Refresh of %s: merging the history's run folders failed", cluster.name)
        return
    if merged is not None:
        phase(f"merged the history of runs {merged.name.removeprefix('run=')} into one folder")


# The merges started by refreshes and not done yet: {cluster's history folder: thread}.
_MERGING: dict[Path, threading.Thread] = {}
_MERGING_LOCK = threading.Lock()


def compact_history_later(cluster: Cluster, run_pk: int) -> None:
    """Merge the history's run folders (up to run `run_pk`'s) on a thread of its own.

    Off the refresh's path: a live loop's next round does not wait for a merge, however big
    its tier. One merge per cluster at a time in this process (and `files.history_lock`
    across processes); a merge still going when the next one is asked for takes its turn at
    the round after.
    """
    root = history_path(cluster)

    def merge() -> None:
        compact_history(
            cluster, lambda text: logger.info("%s: %s", cluster.name, text), upto=run_pk
        )

    with _MERGING_LOCK:
        running = _MERGING.get(root)
        if running is not None and running.is_alive():
            return
        thread = threading.Thread(target=merge, name=f"history-merge-{cluster.name}", daemon=True)
        _MERGING[root] = thread
        thread.start()


def wait_for_merges() -> None:
    """Wait for the history merges this process started (a refresh that is the process's last
    work waits for its merge, so that it is done before the process ends)."""
    with _MERGING_LOCK:
        threads = list(_MERGING.values())
    for thread in threads:
        thread.join()


def drop_other_runs(cluster: Cluster, *, keep: Path) -> None:
    """After a full refresh, the history of earlier runs is superseded (once any merge of them
    going on elsewhere is done, so that it does not put them back)."""
    root = history_path(cluster)
    if not root.exists():
        return
    with files.history_lock(root, wait=True):
        for path in root.iterdir():
            if path != keep and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
