"""The demo's config and status topic records: connectors created, then paused, stopped,
deleted or failed."""

import random
from collections.abc import Iterator

from devkit.demo.connectors import ConnectorSpec, connector_specs
from devkit.demo.options import (
    WORKERS,
    DemoOptions,
    Record,
    deletion_ms,
    dumps,
    failure_ms,
)


def _status_value(state: str, worker: str, generation: int, trace: str | None = None) -> bytes:
    # KafkaStatusBackingStore's STATUS_SCHEMA_V0 field order: state, trace, worker_id, generation.
    return dumps({"state": state, "trace": trace, "worker_id": worker, "generation": generation})


def _status(
    options: DemoOptions,
    of: str,
    state: str,
    worker: str,
    generation: int,
    at: int,
    trace: str | None = None,
) -> Record:
    """A status-topic record of `of` ("connector-<name>" or "task-<name>-<n>")."""
    value = _status_value(state, worker, generation, trace)
    return Record(options.status_topic, f"status-{of}".encode(), value, at)


def _target_state_value(state: str) -> bytes:
    # KafkaConfigBackingStore.putTargetState: older workers know no STOPPED, so `state` says
    # PAUSED and `state.v2` carries the real state.
    return dumps({"state": "PAUSED" if state == "STOPPED" else state, "state.v2": state})


def config_and_status_records(options: DemoOptions) -> Iterator[Record]:
    """Yield the config and status topic history of every connector, in time order."""
    rng = random.Random(f"{options.seed}:config")
    t = options.start_ms - 600_000  # connectors were created before the simulated window
    yield _session_key(options, t)
    generation = 1
    late: list[Record] = []
    for spec in connector_specs(options):
        t += rng.randint(200, 2_000)
        worker = WORKERS[rng.randrange(len(WORKERS))]
        generation += 1
        yield from _created(spec, options, t)
        yield from _started(spec, options, t, worker, generation)
        late.extend(_state_changes(spec, options, worker, generation + 100))
    yield from sorted(late, key=lambda record: record.timestamp_ms)


def _session_key(options: DemoOptions, t: int) -> Record:
    value = {
        "key": "c2Vzc2lvbi1rZXktZm9yLWRlbW8tb25seQ==",
        "algorithm": "HmacSHA256",
        "creation-timestamp": t,
    }
    return Record(options.configs_topic, b"session-key", dumps(value), t)


def _created_tasks(spec: ConnectorSpec) -> int:
    # A STOPPED connector's single task config is what stopping later replaces with none.
    return spec.tasks if spec.target_state != "STOPPED" else 1


def _created(spec: ConnectorSpec, options: DemoOptions, t: int) -> Iterator[Record]:
    """The config records of creating the connector: its config, task configs and commit."""
    cfg, name = options.configs_topic, spec.name
    yield Record(cfg, f"connector-{name}".encode(), dumps({"properties": spec.properties}), t)
    if "exactly.once.support" in spec.properties:
        yield Record(cfg, f"tasks-fencing-{name}".encode(), dumps({"task-count": 1}), t)
    task_props = {**spec.properties, "task.class": spec.properties["connector.class"] + "Task"}
    for task in range(_created_tasks(spec)):
        yield Record(cfg, f"task-{name}-{task}".encode(), dumps({"properties": task_props}), t)
    yield Record(cfg, f"commit-{name}".encode(), dumps({"tasks": _created_tasks(spec)}), t)
    yield Record(cfg, f"target-state-{name}".encode(), _target_state_value("STARTED"), t)


def _started(
    spec: ConnectorSpec, options: DemoOptions, t: int, worker: str, generation: int
) -> Iterator[Record]:
    """The status records of the connector and its tasks starting, and of its sink topics."""
    status, name = options.status_topic, spec.name
    connector_key = f"status-connector-{name}".encode()
    yield Record(status, connector_key, _status_value("UNASSIGNED", worker, generation), t)
    yield Record(status, connector_key, _status_value("RUNNING", worker, generation), t + 5)
    for task in range(_created_tasks(spec)):
        key = f"status-task-{name}-{task}".encode()
        yield Record(status, key, _status_value("RUNNING", WORKERS[task % 2], generation), t + 9)
    if not spec.properties["connector.class"].endswith("SinkConnector"):
        return
    for topic in spec.properties.get("topics", "").split(","):
        if topic:
            key = f"status-topic-{topic}:connector-{name}".encode()
            value = {"topic": {"name": topic, "connector": name, "task": 0, "discoverTimestamp": t}}
            yield Record(status, key, dumps(value), t + 10)


def _state_changes(
    spec: ConnectorSpec, options: DemoOptions, worker: str, generation: int
) -> list[Record]:
    """The records written when an operator paused, stopped or deleted the connector, or it failed."""
    if spec.target_state == "PAUSED":
        return _paused(spec, options, worker, generation)
    if spec.target_state == "STOPPED":
        return _stopped(spec, options, worker, generation)
    if spec.target_state == "DELETED":
        return _deleted(spec, options)
    if spec.runtime_state == "FAILED":
        return _failed(spec, options, worker, generation)
    return []


def _operator_ms(options: DemoOptions) -> int:
    """When the operator paused or stopped connectors: four fifths into the simulated window."""
    return options.start_ms + int((options.end_ms - options.start_ms) * 0.8)


def _paused(
    spec: ConnectorSpec, options: DemoOptions, worker: str, generation: int
) -> list[Record]:
    cfg, name = options.configs_topic, spec.name
    at = _operator_ms(options)
    records = [
        Record(cfg, f"target-state-{name}".encode(), _target_state_value("PAUSED"), at),
        _status(options, f"connector-{name}", "PAUSED", worker, generation, at + 50),
    ]
    for task in range(spec.tasks):
        worker_of_task = WORKERS[task % 2]
        records.append(
            _status(options, f"task-{name}-{task}", "PAUSED", worker_of_task, generation, at + 60)
        )
    return records


def _stopped(
    spec: ConnectorSpec, options: DemoOptions, worker: str, generation: int
) -> list[Record]:
    # Stopping (KIP-875) writes the target state, then zero task configs; tasks go away.
    cfg, status, name = options.configs_topic, options.status_topic, spec.name
    at = _operator_ms(options)
    return [
        Record(cfg, f"target-state-{name}".encode(), _target_state_value("STOPPED"), at),
        Record(cfg, f"commit-{name}".encode(), dumps({"tasks": 0}), at + 20),
        _status(options, f"connector-{name}", "STOPPED", worker, generation, at + 50),
        Record(status, f"status-task-{name}-0".encode(), None, at + 60),
    ]


def _deleted(spec: ConnectorSpec, options: DemoOptions) -> list[Record]:
    cfg, status, name = options.configs_topic, options.status_topic, spec.name
    at = deletion_ms(options)
    records = [
        Record(cfg, f"connector-{name}".encode(), None, at),
        Record(cfg, f"target-state-{name}".encode(), None, at),
        Record(status, f"status-connector-{name}".encode(), None, at + 50),
    ]
    for task in range(spec.tasks):
        records.append(Record(status, f"status-task-{name}-{task}".encode(), None, at + 60))
    return records


def _failed(
    spec: ConnectorSpec, options: DemoOptions, worker: str, generation: int
) -> list[Record]:
    name, trace = spec.name, spec.failed_trace
    at = failure_ms(options)
    return [
        _status(options, f"task-{name}-0", "FAILED", WORKERS[0], generation, at, trace),
        _status(options, f"connector-{name}", "FAILED", worker, generation, at + 30, trace),
    ]
