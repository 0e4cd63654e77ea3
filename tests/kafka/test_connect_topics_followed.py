"""Connect's config and status topics followed round after round on a real broker: a read
folds only the records written since the last one, an unchanged connector keeps what was
built for it (its config is not masked again), and a topic deleted and created again is read
whole once more. On the scratch broker: the test writes the topics itself and deletes one."""

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from offsets import connect_state
from offsets.kafka import reading
from tests.support import factories
from tests.support.connect_topics import write_records

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CONFIGS, STATUS = "followed-configs", "followed-status"


def _connector(name: str, extra: str = "") -> tuple:
    props = {"connector.class": "FileStreamSource", "db.password": "hunter2", "x": extra}
    return (CONFIGS, f"connector-{name}".encode(), json.dumps({"properties": props}).encode(), None)


def _status(name: str, state: str) -> tuple:
    value = {"state": state, "trace": None, "worker_id": "w:8083", "generation": 1}
    return (STATUS, f"status-connector-{name}".encode(), json.dumps(value).encode(), None)


def _topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(CONFIGS, 1, 1), NewTopic(STATUS, 5, 1)]).values():
        future.result()


@pytest.fixture
def followed(fresh_kafka, monkeypatch):
    _topics(fresh_kafka)
    cluster = factories.cluster(
        "followed",
        bootstrap_servers=fresh_kafka,
        configs_topic=CONFIGS,
        status_topic=STATUS,
    )
    connect_state.forget_followers()
    read = []
    real = reading.read_on

    def counting(*args, **kwargs):
        answer = real(*args, **kwargs)
        read.append(len(answer.records))
        return answer

    monkeypatch.setattr(reading, "read_on", counting)
    yield cluster, read
    connect_state.forget_followers()


def test_each_read_folds_only_what_was_written_since(followed, settings):
    cluster, read = followed
    kafka = {"bootstrap.servers": cluster.bootstrap_servers}
    write_records(kafka, [_connector(f"c{n}") for n in range(20)] + [_status("c0", "RUNNING")])
    first = connect_state.read_connect_state(cluster=cluster)
    assert read == [21] and len(first.connectors) == 20
    assert first.connectors[0].config["db.password"] != "hunter2"  # masked

    write_records(kafka, [_connector("c5", "changed"), _status("c0", "FAILED")])
    second = connect_state.read_connect_state(cluster=cluster)
    assert read == [21, 2]
    by_name = {c.name: c for c in second.connectors}
    assert by_name["c5"].config["x"] == "changed"
    assert by_name["c0"].runtime_state == "FAILED"
    # Unchanged connectors keep the very object built for them: nothing folded or masked again.
    before = {c.name: c for c in first.connectors}
    assert by_name["c7"] is before["c7"] and by_name["c5"] is not before["c5"]

    # Nothing new: the last state itself, not one summarised again.
    assert connect_state.read_connect_state(cluster=cluster) is second
    assert read == [21, 2, 0]


def test_a_topic_created_again_is_read_whole_once_more(followed):
    cluster, read = followed
    kafka = {"bootstrap.servers": cluster.bootstrap_servers}
    write_records(kafka, [_connector("old-1"), _connector("old-2")])
    assert [c.name for c in connect_state.read_connect_state(cluster=cluster).connectors] == [
        "old-1",
        "old-2",
    ]
    admin = AdminClient(kafka)
    admin.delete_topics([CONFIGS])[CONFIGS].result()
    for _ in range(100):
        try:
            admin.create_topics([NewTopic(CONFIGS, 1, 1)])[CONFIGS].result()
            break
        except Exception:
            import time

            time.sleep(0.1)
    write_records(kafka, [_connector("new-1"), _connector("new-2"), _connector("new-3")])
    names = [c.name for c in connect_state.read_connect_state(cluster=cluster).connectors]
    assert names == ["new-1", "new-2", "new-3"]
    # Read on from offset 2 of the new topic (1 record), its new ID seen, then whole (3).
    assert read == [2, 1, 3]
