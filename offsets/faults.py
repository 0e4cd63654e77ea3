"""Test-only pause points: stop a process at a chosen step so a test can kill it there.

Off unless the environment variable ``OFFSETS_FAULT_PAUSE`` names a point; production never
sets it, and then ``pause_point`` is one dictionary look-up. A test starts the process that
applies an edit with ``OFFSETS_FAULT_PAUSE=apply-before-commit`` (say) and
``OFFSETS_FAULT_PAUSE_FILE=/tmp/x``; when the process reaches the point it writes its pid to
that file and sleeps until it is killed. That is how the tests prove what a crash (SIGKILL,
an OOM kill, a power cut) at the worst moment of an apply leaves behind.

Points:
    apply-before-commit  every record is handed to the producer; the transaction (source)
                         or the group offsets change (sink) is not committed yet
    apply-between-sink-steps
                         a sink edit deleting some of a group's partitions: the group is
                         deleted (the offsets to commit back are stored on the edit), the
                         other partitions are not committed back yet
    apply-after-commit   Kafka acknowledged the write; the database does not know yet
    refresh-reading      a refresh's Spark read task (in one of Spark's Python workers, which
                         inherit the environment) is about to read its Kafka ranges: the
                         refresh holds its claim mid-Spark, for a stop or a kill to meet
"""

import logging
import os
import time
from pathlib import Path

logger = logging.getLogger(__name__)

PAUSE_ENV = "OFFSETS_FAULT_PAUSE"
PAUSE_FILE_ENV = "OFFSETS_FAULT_PAUSE_FILE"
POINTS = (
    "apply-before-commit",
    "apply-between-sink-steps",
    "apply-after-commit",
    "refresh-reading",
)


def pause_point(name: str) -> None:
    """Sleep for ever here if OFFSETS_FAULT_PAUSE names this point (tests only)."""
    if os.environ.get(PAUSE_ENV) != name:
        return
    logger.warning("Fault injection: pausing at %s (pid %s) until killed", name, os.getpid())
    marker = os.environ.get(PAUSE_FILE_ENV)
    if marker:
        Path(marker).write_text(f"{os.getpid()}\n")
    while True:
        time.sleep(3600)
