"""The Spark side's errors that the refresh tells apart, importable without PySpark."""


class ConnectUnreachable(RuntimeError):
    """The Spark Connect server refused the session, did not answer, or cannot do the refresh
    (it does not see the history folder): one line, naming the server, never its token."""
