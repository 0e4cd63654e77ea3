"""Where a cluster's per-commit history lives, and its upkeep after each refresh."""

import logging
import shutil
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


def compact_history(cluster: Cluster, phase: Callable[[str], None]) -> None:
    """Merge the history's newest run folders when there are too many (files.py).

    The results are saved by now: a merge that fails leaves the run folders as they were (the
    next refresh tries again), so it is logged, and the refresh still succeeded.
    """
    try:
        merged = files.compact_runs(history_path(cluster), files.MAX_RUN_FOLDERS)
    except Exception:
        logger.exception("Refresh of %s: merging the history's run folders failed", cluster.name)
        return
    if merged is not None:
        phase(f"merged the history of runs {merged.name.removeprefix('run=')} into one folder")


def drop_other_runs(cluster: Cluster, *, keep: Path) -> None:
    """After a full refresh, the history of earlier runs is superseded."""
    root = history_path(cluster)
    if not root.exists():
        return
    for path in root.iterdir():
        if path != keep:
            shutil.rmtree(path, ignore_errors=True)
