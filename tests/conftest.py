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


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def logged_in_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def operator(db, django_user_model):
    """A user who may start refreshes (offsets.add_refreshrun)."""
    from django.contrib.auth.models import Permission

    operator = django_user_model.objects.create_user("olga", password="olga-password")
    operator.user_permissions.add(Permission.objects.get(codename="add_refreshrun"))
    return operator


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def partition_history(monkeypatch):
    """Make `history.partition_history` return the CommitPoints a test puts in `.points`."""
    import types

    from offsets.services import history

    points: list = []
    calls: list[dict] = []

    def fake(**kwargs):
        calls.append(kwargs)
        return points

    monkeypatch.setattr(history, "partition_history", fake)
    return types.SimpleNamespace(points=points, calls=calls)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (start-up costs ~10 s)."""
    from offsets.spark.session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()
