"""Write to a Connect cluster's topics the way its workers would: stop, resume, commit.

Tests use this to put a demo connector in the state they need (stopped, running again) and
to move offsets behind an edit's back.
"""

from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.kafka import admin, producers

# A Connect cluster's internal topics, named as a Cluster names them; the demo's by default.
DEMO_TOPICS = {
    "configs_topic": "connect-configs",
    "offsets_topic": "connect-offsets",
    "status_topic": "connect-status",
}


def _write(settings: dict, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    counts = admin.topic_partition_counts(settings)
    producer = producers.java_producer(settings)
    for key, value in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=java_partition(key, counts[topic]),
            on_delivery=producers.raise_on_delivery_error,
        )
    assert producer.flush(10) == 0


def stop_connector(
    settings: dict, name: str, *, tasks: int = 1, topics: dict[str, str] = DEMO_TOPICS
) -> None:
    """What PUT /connectors/{name}/stop leaves behind (KIP-875): STOPPED, zero tasks."""
    _write(
        settings,
        topics["configs_topic"],
        [
            (
                f"target-state-{name}".encode(),
                jackson.dumps({"state": "PAUSED", "state.v2": "STOPPED"}),
            ),
            (f"commit-{name}".encode(), jackson.dumps({"tasks": 0})),
        ],
    )
    status = [
        (
            f"status-connector-{name}".encode(),
            jackson.dumps(
                {"state": "STOPPED", "trace": None, "worker_id": "w:8083", "generation": 99}
            ),
        )
    ]
    status += [(f"status-task-{name}-{task}".encode(), None) for task in range(tasks)]
    _write(settings, topics["status_topic"], status)


def resume_connector(settings: dict, name: str) -> None:
    """The connector runs again: target STARTED, task 0 RUNNING."""
    _write(
        settings,
        "connect-configs",
        [
            (
                f"target-state-{name}".encode(),
                jackson.dumps({"state": "STARTED", "state.v2": "STARTED"}),
            )
        ],
    )
    running = jackson.dumps(
        {"state": "RUNNING", "trace": None, "worker_id": "w:8083", "generation": 100}
    )
    _write(
        settings,
        "connect-status",
        [
            (f"status-connector-{name}".encode(), running),
            (f"status-task-{name}-0".encode(), running),
        ],
    )


def commit_source_offset(settings: dict, topic: str, key: bytes, value: bytes | None) -> None:
    """A task's offset commit (or a tombstone), written like the runtime's producer."""
    _write(settings, topic, [(key, value)])


def commit_source_offsets(
    settings: dict, topic: str, offsets: list[tuple[bytes, bytes | None]]
) -> None:
    """Many offset commits at once (a connector with many partitions)."""
    _write(settings, topic, offsets)


def create_connector(
    settings: dict, name: str, properties: dict[str, str], *, topics: dict[str, str] = DEMO_TOPICS
) -> None:
    """A connector created with one task and then stopped, as its worker records it."""
    task = {**properties, "task.class": properties["connector.class"] + "Task"}
    _write(
        settings,
        topics["configs_topic"],
        [
            (f"connector-{name}".encode(), jackson.dumps({"properties": properties})),
            (f"task-{name}-0".encode(), jackson.dumps({"properties": task})),
            (f"commit-{name}".encode(), jackson.dumps({"tasks": 1})),
        ],
    )
    stop_connector(settings, name, topics=topics)
