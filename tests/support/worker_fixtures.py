"""The integration tests' shared fixtures: a module's Connect worker, its client, its cluster
(a plugin of tests/conftest.py, for the tests of every area)."""

import uuid

import pytest

from offsets.models import Cluster
from tests.support.connect_rest import ConnectRest
from tests.support.workers import ConnectWorker, register, session_worker


@pytest.fixture(scope="module")
def connect_worker(kafka_runtime) -> ConnectWorker:
    """The worker `rest` and `cluster` stand for: the session's, unless a module gives another."""
    return session_worker(kafka_runtime)


@pytest.fixture(scope="module")
def rest(connect_worker) -> ConnectRest:
    """The test's own client of the worker's REST API, with the worker's credentials."""
    if not connect_worker.url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(connect_worker.url, auth=connect_worker.auth)


@pytest.fixture
def cluster(db, kafka_runtime, connect_worker) -> Cluster:
    """The worker's Connect cluster, registered as `add_cluster --embedded` does."""
    # A name of its own for each test: nothing kept under a cluster's name (its history
    # folder) is shared with another test's cluster.
    name = f"worker-{uuid.uuid4().hex[:8]}"
    return register(name, kafka_runtime.bootstrap_servers, connect_worker)


@pytest.fixture(scope="module")
def kafka(kafka_runtime) -> dict:
    """Client settings of the session's broker."""
    return {"bootstrap.servers": kafka_runtime.bootstrap_servers}


@pytest.fixture
def history_dir(settings, tmp_path) -> None:
    """Keep the refreshes' per-commit history in the test's own folder."""
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
