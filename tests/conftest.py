"""Composed fixtures: fast Django settings, the real Kafka broker, a seeded demo cluster."""

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from offsets.demo import DemoCluster, DemoOptions, build_demo
from offsets.demo_writer import SeedSummary, write_demo
from offsets.kafka.embedded import EmbeddedKafka

# The demo ends at the start of the test run (to the minute), so that "how long ago" rules
# (stalls, lag in time) see what an operator would; the records are otherwise deterministic.
DEMO_END_MS = int(time.time() * 1000) // 60_000 * 60_000


@pytest.fixture(autouse=True)
def _fast_settings(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.RUN_DIR = tmp_path / "run"
    settings.KAFKA_READ_TIMEOUT = 5


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """Test SQLite as a file, as it is deployed, not Django's shared-cache in-memory database.

    In the shared-cache memory database a second writer fails at once ("database table is
    locked") where a file database waits for the first (SQLite's busy timeout); the
    concurrent-apply tests need the real behaviour.
    """
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        test = database.setdefault("TEST", {})
        test["NAME"] = str(tmp_path_factory.mktemp("database") / "test.sqlite3")


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory) -> str:
    """Bootstrap servers of a real broker: KAFKA_TEST_BOOTSTRAP_SERVERS, else embedded Tansu."""
    external = os.environ.get("KAFKA_TEST_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    broker = EmbeddedKafka(tmp_path_factory.mktemp("kafka-session"))
    info = broker.start()
    yield info.bootstrap_servers
    broker.stop()


@pytest.fixture
def fresh_kafka(tmp_path: Path) -> str:
    """A broker of its own for one test (Tansu starts in ~0.1 s)."""
    broker = EmbeddedKafka(tmp_path / "kafka")
    info = broker.start()
    yield info.bootstrap_servers
    broker.stop()


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


def _user_with(django_user_model, username, *codenames):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user(username, password=f"{username}-password")
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="offsets", codename__in=codenames)
    )
    return django_user_model.objects.get(pk=user.pk)  # a fresh object: no stale perm cache


@pytest.fixture
def editor(db, django_user_model):
    """A user who may stage edits (stage_offsetedit)."""
    return _user_with(django_user_model, "erin", "stage_offsetedit")


@pytest.fixture
def approver(db, django_user_model):
    """A user who may stage, approve and apply (stage_offsetedit + approve_offsetedit)."""
    return _user_with(django_user_model, "abe", "stage_offsetedit", "approve_offsetedit")


@pytest.fixture
def second_approver(db, django_user_model):
    return _user_with(django_user_model, "amy", "stage_offsetedit", "approve_offsetedit")


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def logged_in_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (start-up costs ~10 s)."""
    from offsets.spark.session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()
