"""Markers that follow from what a test is and uses, so a new test lands in the right tier.

- `integration`: uses a broker (its fixtures reach one).
- `spark`: uses the session's Spark.
- `browser`: uses Playwright's Chromium (`browser`, and `page` and `screenshot` built on it).
- `container`: runs the image in podman (`make test-image`, not `make test`): no fixture
  says it, its module does.
- `db_engine`: its outcome can depend on the database engine (docs/testing.md, "The database
  rule"), so it runs on SQLite and again on PostgreSQL. Given by hand for what no rule can see
  (values an engine stores differently), and by the rules below for the rest.
- `engine_independent(reason)`: the opposite, by hand, for a test a rule would send to both
  engines although its subject cannot depend on one (it commits real transactions only so
  that a child process sees its rows). It runs once, on SQLite; the reason is required.

The tiers follow from the fixtures; where no fixture says it (a test of Spark's rules that
needs no session, a test that starts processes of its own), the module says it itself with
`pytestmark`. A test's folder is its area (docs/testing.md), never its tier.
"""

import inspect
import re

import pytest

BROKER_FIXTURES = frozenset({"kafka_runtime", "_scratch_kafka", "secured_kafka"})
SPARK_FIXTURES = frozenset({"spark", "spark_connect"})
BROWSER_FIXTURES = frozenset({"browser"})
# Real transactions (commits other connections see), query counts, sequences.
ENGINE_FIXTURES = frozenset(
    {
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "django_assert_num_queries",
        "django_assert_max_num_queries",
    }
)
# What a test body does that only the engine decides: its errors and constraints, row locks,
# raw SQL and the connection, transactions, query counts, migrations.
ENGINE_CODE = re.compile(
    r"IntegrityError|OperationalError|DatabaseError|InterfaceError|select_for_update"
    r"|CaptureQueriesContext|MigrationExecutor|call_command\(\s*\"migrate\""
    r"|\bconnection\.(cursor|ops|vendor|close|settings_dict|in_atomic_block)|\bconnections\["
    r"|\btransaction\.(atomic|on_commit|set_rollback)"
)


def mark(items: list[pytest.Item]) -> None:
    """Add the tier markers and `db_engine` to every collected test that qualifies."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & BROKER_FIXTURES:
            item.add_marker("integration")
        if names & SPARK_FIXTURES:
            item.add_marker("spark")
        if names & BROWSER_FIXTURES:
            item.add_marker("browser")
        if _depends_on_engine(item, names) and not _engine_independent(item):
            item.add_marker("db_engine")


def _engine_independent(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("engine_independent")
    if marker is None:
        return False
    if not (marker.args and str(marker.args[0]).strip()):
        raise pytest.UsageError(f"{item.nodeid}: engine_independent needs a reason")
    return True


def _depends_on_engine(item: pytest.Item, names: set[str]) -> bool:
    if names & ENGINE_FIXTURES:
        return True
    django_db = item.get_closest_marker("django_db")
    if django_db is not None and django_db.kwargs.get("transaction"):
        return True
    return bool(ENGINE_CODE.search(_source(item)))


def _source(item: pytest.Item) -> str:
    function = getattr(item, "function", None)
    if function is None:
        return ""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""
