"""The Spark side's errors that the refresh tells apart, importable without PySpark."""

import re


class ConnectUnreachable(RuntimeError):
    """The Spark Connect server refused the session, did not answer, or cannot do the refresh
    (it does not see the history folder): one line, naming the server, never its token."""


# What the trace of a failed Python task ends with: "ModuleNotFoundError: No module named
# 'offsets'", "pyspark...PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] ...".
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception): .+)$", re.MULTILINE)


def python_worker_error(text: str) -> str | None:
    """The error a failed Python task raised, from PySpark's message about it, whose first line
    says only "An exception was thrown from the Python worker"; None for other messages."""
    if not text.startswith("An exception was thrown from the Python worker"):
        return None
    errors = _ERROR_LINE.findall(text)
    return f"A Spark Python worker failed: {errors[-1]}" if errors else None
