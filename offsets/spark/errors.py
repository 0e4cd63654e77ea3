"""The Spark side's errors that the refresh tells apart, importable without PySpark."""

import re


class ConnectUnreachable(RuntimeError):
    """The Spark Connect server refused the session, did not answer, or cannot do the refresh
    (it does not see the history folder): one line, naming the server, never its token."""


# What the trace of a failed Python task ends with: "ModuleNotFoundError: No module named
# 'offsets'", "pyspark...PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] ...".
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception): .+)$", re.MULTILINE)


# How PySpark's messages about a failed Python worker begin: a task's, and the data source's
# planning worker's (it unpickles the data source first, so a server or executors without the
# shipped `offsets` fail there: "Failed to create Python data source instance: Traceback...").
_PYTHON_FAILED = ("An exception was thrown from the Python worker", "[PYTHON_DATA_SOURCE_ERROR]")


def python_worker_error(text: str) -> str | None:
    """The error a failed Python worker raised, from PySpark's message about it, whose first
    line does not say it; None for other messages."""
    if not text.startswith(_PYTHON_FAILED):
        return None
    errors = _ERROR_LINE.findall(text.split("\nJVM stacktrace:")[0])
    return f"A Spark Python worker failed: {errors[-1]}" if errors else None
