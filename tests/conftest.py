"""Composed fixtures: fast Django settings, the real Kafka broker and Connect worker, a seeded
demo cluster."""

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from hypothesis import settings as hypothesis_settings

from devkit.demo import DemoCluster, DemoOptions, build_demo
from devkit.demo_writer import SeedSummary, write_demo
from devkit.embedded import EmbeddedKafka
from offsets import connect_state
from offsets.history import store as history_store
from tests.support import markers
from tests.support.demo_data import DEMO_END_MS, REFRESH_MODELS
from tests.support.scratch_broker import empty_broker
from tests.support.users import user_with

# Fixtures of every area: the Connect worker a module drives (its REST client, its cluster),
# and Playwright's Chromium for the browser tests.
pytest_plugins = ["tests.support.worker_fixtures", "tests.support.browser_fixtures"]

# No example is timed: Hypothesis's default 200 ms deadline is a timed assertion, which fails a
# correct test on a loaded machine. Nor is an example database kept between runs.
hypothesis_settings.register_profile("suite", deadline=None, database=None)
hypothesis_settings.load_profile("suite")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the markers
def pytest_collection_modifyitems(items):
    markers.mark(items)


@pytest.fixture(autouse=True)
def _fast_settings(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    # Local memory caches share their store by LOCATION across instances: empty it, or a test
    # would see pages cached by an earlier one whose rolled-back rows had the same ids.
    cache.clear()
    settings.RUN_DIR = tmp_path / "run"
    # Each test's refreshes keep their history apart: clusters of the same name in other tests
    # (and in the other test processes) must not lend it theirs.
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    settings.KAFKA_READ_TIMEOUT = 5
    # Each test reads Connect's topics afresh: a follower of another test's cluster with the
    # same id would otherwise carry on from where that test left its topics.
    connect_state.forget_followers()
    yield
    # A history merge a refresh left going beside it ends with its test, not in the next one.
    history_store.wait_for_merges()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """Test SQLite as a file, as it is deployed, not Django's shared-cache in-memory database.

    In the shared-cache memory database a second writer fails at once ("database table is
    locked") where a file database waits for the first (SQLite's busy timeout); the
    concurrent-apply tests need the real behaviour, and so do the concurrent refresh claims and
    the Refresh button's browser test, whose refresh_offsets process opens the same file.
    """
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        test = database.setdefault("TEST", {})
        test["NAME"] = str(tmp_path_factory.mktemp("database") / "test.sqlite3")


@dataclass(frozen=True)
class Runtime:
    """The session's Apache Kafka broker and its Kafka Connect worker."""

    bootstrap_servers: str
    connect_url: str


@pytest.fixture(scope="session")
def kafka_runtime(tmp_path_factory) -> Runtime:
    """The session's broker and worker (embedded_kafka), shared by every test that needs them.

    Tests sharing them keep to topic, group and connector names of their own. An external
    broker and worker can be given with KAFKA_TEST_BOOTSTRAP_SERVERS and KAFKA_TEST_CONNECT_URL.
    """
    external = os.environ.get("KAFKA_TEST_BOOTSTRAP_SERVERS")
    if external:
        yield Runtime(external, os.environ.get("KAFKA_TEST_CONNECT_URL", ""))
        return
    runtime = EmbeddedKafka(tmp_path_factory.mktemp("kafka-session"))
    # Its worker also loads the plugin folder (Debezium, `make kafka-plugins`): about 0.1 s
    # more to start, against a worker of their own for the tests that run those plugins.
    info = runtime.start(plugins=django_settings.KAFKA_RUNTIME_PLUGINS)
    yield Runtime(info.bootstrap_servers, info.connect_url)
    runtime.stop(kill=True)  # its data dies with the session: nothing to shut down cleanly for


@dataclass(frozen=True)
class SecondConnect:
    """A second Connect cluster on the session's broker: its own worker group and topics."""

    url: str
    group_id: str
    topics: dict


SECOND_CONNECT_GROUP = "second-connect"
SECOND_CONNECT_TOPICS = {
    "offsets_topic": "second-connect-offsets",
    "configs_topic": "second-connect-configs",
    "status_topic": "second-connect-status",
}


@pytest.fixture(scope="session")
def second_connect(kafka_runtime, tmp_path_factory) -> SecondConnect:
    """A second worker started (once, when a test first asks) against the session's broker.

    Moving a connector between Connect clusters needs two; only those tests pay its start-up.
    """
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    runtime = EmbeddedKafka(tmp_path_factory.mktemp("second-connect"))
    worker = runtime.start_worker(
        bootstrap_servers=kafka_runtime.bootstrap_servers,
        group_id=SECOND_CONNECT_GROUP,
        topics=SECOND_CONNECT_TOPICS,
    )
    yield SecondConnect(worker.url, SECOND_CONNECT_GROUP, SECOND_CONNECT_TOPICS)
    runtime.stop_worker(worker, timeout=0)  # killed: the session's broker goes with it


@dataclass(frozen=True)
class SecuredConnect:
    """A third Connect cluster whose REST API demands basic auth (Connect's own extension)."""

    url: str
    group_id: str
    topics: dict
    username: str
    password: str = field(repr=False)

    @property
    def auth(self) -> tuple[str, str]:
        return self.username, self.password


SECURED_CONNECT_GROUP = "secured-connect"
SECURED_CONNECT_TOPICS = {
    "offsets_topic": "secured-connect-offsets",
    "configs_topic": "secured-connect-configs",
    "status_topic": "secured-connect-status",
}
# A password with characters the users file must escape (=, :, a space, non-ASCII): the
# worker accepting it shows the file says what the dashboard sends.
SECURED_CONNECT_USERS = {"dashboard": "s3cret = pass:wörd", "someone-else": "other"}


@pytest.fixture(scope="session")
def secured_connect(kafka_runtime, tmp_path_factory) -> SecuredConnect:
    """A worker with basic auth on, started (once, when a test first asks) on the session broker.

    Its users are SECURED_CONNECT_USERS; `username`/`password` are the dashboard's.
    """
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    runtime = EmbeddedKafka(tmp_path_factory.mktemp("secured-connect"))
    worker = runtime.start_worker(
        bootstrap_servers=kafka_runtime.bootstrap_servers,
        group_id=SECURED_CONNECT_GROUP,
        topics=SECURED_CONNECT_TOPICS,
        basic_auth=SECURED_CONNECT_USERS,
    )
    username, password = next(iter(SECURED_CONNECT_USERS.items()))
    yield SecuredConnect(
        worker.url, SECURED_CONNECT_GROUP, SECURED_CONNECT_TOPICS, username, password
    )
    runtime.stop_worker(worker, timeout=0)  # killed: the session's broker goes with it


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory):
    """The secured broker and worker (SASL_SSL, mutual TLS, ACLs, HTTPS REST), started once per
    test process when a test first asks (tests/support/secured_runtime.py).

    A broker's listeners and authorizer are fixed at start, hence a broker of its own.
    """
    from tests.support import secured_runtime

    runtime, secured = secured_runtime.start(tmp_path_factory.mktemp("secured-kafka"))
    yield secured
    runtime.stop_secured(secured.info, timeout=0)  # killed: its data dies with the session


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_runtime) -> str:
    """Bootstrap servers of the session's real broker."""
    return kafka_runtime.bootstrap_servers


@pytest.fixture(scope="session")
def _scratch_kafka(tmp_path_factory) -> str:
    """The broker (no worker) that `fresh_kafka` empties for each test that asks for it."""
    broker = EmbeddedKafka(tmp_path_factory.mktemp("kafka-scratch"))
    info = broker.start(worker=False)
    yield info.bootstrap_servers
    broker.stop(kill=True)  # its data dies with the session


@pytest.fixture
def fresh_kafka(_scratch_kafka) -> str:
    """An empty Apache Kafka broker (no worker): the session's scratch broker, emptied first."""
    empty_broker(_scratch_kafka)
    return _scratch_kafka


@dataclass(frozen=True)
class SeededDemo:
    bootstrap_servers: str
    demo: DemoCluster
    summary: SeedSummary

    @property
    def settings(self) -> dict:
        return {"bootstrap.servers": self.bootstrap_servers}


@pytest.fixture(scope="session")
def seeded_demo(kafka_bootstrap) -> SeededDemo:
    """The demo Connect cluster written once per session to the session broker."""
    demo = build_demo(DemoOptions(end_ms=DEMO_END_MS, hours=3, seed=7))
    summary = write_demo({"bootstrap.servers": kafka_bootstrap}, demo)
    return SeededDemo(kafka_bootstrap, demo, summary)


@pytest.fixture
def demo_cluster(db, seeded_demo):
    from offsets.models import Cluster

    return Cluster.objects.create(name="demo", bootstrap_servers=seeded_demo.bootstrap_servers)


# --- Offset edits: roles and a demo cluster of its own for tests that write offsets. ---------


@dataclass(frozen=True)
class FreshDemo:
    cluster: object
    demo: DemoCluster
    summary: SeedSummary

    @property
    def settings(self) -> dict:
        return self.cluster.kafka_settings()


@pytest.fixture
def fresh_demo(db, fresh_kafka) -> FreshDemo:
    """A small demo Connect cluster on a broker of its own, registered as cluster "fresh"."""
    from offsets.models import Cluster

    demo = build_demo(
        DemoOptions(
            end_ms=DEMO_END_MS, hours=0.5, seed=7, source_partitions=3, data_records_per_hour=30
        )
    )
    summary = write_demo({"bootstrap.servers": fresh_kafka}, demo)
    cluster = Cluster.objects.create(name="fresh", bootstrap_servers=fresh_kafka)
    return FreshDemo(cluster, demo, summary)


@pytest.fixture
def editor(db, django_user_model):
    """A user who may stage edits (stage_offsetedit)."""
    return user_with(django_user_model, "erin", "stage_offsetedit")


@pytest.fixture
def approver(db, django_user_model):
    """A user who may stage, approve and apply (stage_offsetedit + approve_offsetedit)."""
    return user_with(django_user_model, "abe", "stage_offsetedit", "approve_offsetedit")


@pytest.fixture
def second_approver(db, django_user_model):
    return user_with(django_user_model, "amy", "stage_offsetedit", "approve_offsetedit")


@pytest.fixture
def user(db, django_user_model):
    """A viewer of every cluster."""
    return user_with(django_user_model, "alice")


@pytest.fixture
def logged_in_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def operator(db, django_user_model):
    """A user who may start refreshes (the refresh operator role on every cluster)."""
    return user_with(django_user_model, "olga", "add_refreshrun")


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def partition_history(monkeypatch):
    """Make `history.partition_history` return the CommitPoints a test puts in `.points`."""
    import types

    from offsets.history import reading as history

    points: list = []
    calls: list[dict] = []

    def fake(**kwargs):
        calls.append(kwargs)
        since = kwargs.get("since")
        return [point for point in points if since is None or point.at >= since]

    monkeypatch.setattr(history, "partition_history", fake)
    return types.SimpleNamespace(points=points, calls=calls)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (start-up costs ~10 s)."""
    from offsets.spark.session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory):
    """A Spark Connect server (tests/support/spark_connect.py) for the whole test run.

    Once per session and reused, as the standalone master is started once: its JVM takes
    5-10 s to start on the project's machine, and each test only opens a session of its own
    on it (a refresh's child process). A test that stops it (a fault) starts it again on the
    same port before it ends.
    """
    from tests.support.spark_cluster import java_and_pyspark_missing
    from tests.support.spark_connect import connect_server

    missing = java_and_pyspark_missing()
    if missing is not None:
        pytest.skip(f"No Spark Connect server: {missing}")
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.fixture(scope="session")
def refresh_history_dir(tmp_path_factory) -> Path:
    """Where the session's refreshes keep their per-commit history (Parquet)."""
    return tmp_path_factory.mktemp("history")


@pytest.fixture(scope="session")
def _refreshed_demo_rows(
    django_db_setup, django_db_blocker, seeded_demo, spark, refresh_history_dir
) -> dict[str, str]:
    """The database rows of two real refreshes of the seeded demo, computed once per session.

    Two refreshes, so that lag has two samples to draw. They run in a transaction that is
    rolled back, so the session database stays as empty as every other test expects; each
    test that wants the results loads these rows (`refreshed_demo`). The history they wrote
    stays in `refresh_history_dir`.
    """
    from django.conf import settings
    from django.core import serializers
    from django.db import transaction

    import offsets.models as models
    from offsets.refresh.run import run_refresh

    previous = settings.OFFSETS_HISTORY_PATH, settings.LAG_SAMPLE_SECONDS
    settings.OFFSETS_HISTORY_PATH = str(refresh_history_dir)
    # The two refreshes are a moment apart: each keeps its lag samples all the same.
    settings.LAG_SAMPLE_SECONDS = 0
    try:
        with django_db_blocker.unblock(), transaction.atomic():
            cluster = models.Cluster.objects.create(
                name="demo", bootstrap_servers=seeded_demo.bootstrap_servers
            )
            for _ in range(2):
                run = run_refresh(cluster=cluster, spark=spark)
                assert run.status == models.RefreshRun.Status.SUCCEEDED, run.error
            rows = {
                name: serializers.serialize("json", getattr(models, name).objects.order_by("pk"))
                for name in REFRESH_MODELS
            }
            transaction.set_rollback(True)
    finally:
        settings.OFFSETS_HISTORY_PATH, settings.LAG_SAMPLE_SECONDS = previous
    return rows


@pytest.fixture
def refreshed_demo(_refreshed_demo_rows, db, settings, refresh_history_dir):
    """The cluster `demo` on the seeded demo broker, after two real refreshes (Spark)."""
    from django.core import serializers
    from django.core.management.color import no_style
    from django.db import connection

    import offsets.models as models

    settings.OFFSETS_HISTORY_PATH = str(refresh_history_dir)
    for name in REFRESH_MODELS:
        objects = [
            item.object for item in serializers.deserialize("json", _refreshed_demo_rows[name])
        ]
        getattr(models, name).objects.bulk_create(objects)
    # Rows were saved with their primary keys: move PostgreSQL's sequences past them.
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(
            no_style(), [getattr(models, name) for name in REFRESH_MODELS]
        ):
            cursor.execute(statement)
    return models.Cluster.objects.get(name="demo")
