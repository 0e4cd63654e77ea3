"""A simulated Kafka Connect cluster: the records its Java runtime would have written.

`build_demo()` is pure and deterministic for a seed and an end time: it returns the topics to
create, the config/status/offsets records in the order the runtime would have written them
over the simulated hours, the sink data topics and the committed offsets of the sink groups.
`offsets.demo_writer.write_demo()` puts that on a real Kafka cluster.

The connectors cover what an operator meets in practice (see DEMO_CONNECTORS in the README):
file, JDBC (multi-field partition maps, a rewind after a restart, a stalled table), an HTTP
source whose partition key drifted between two byte forms, MirrorMaker 2 (HashMap field
order), an exactly-once source with its own offsets topic, a deleted connector whose offsets
remain, sinks that lag, a sink with `consumer.override.group.id`, a sink managing its offsets
outside Connect, and the states RUNNING, PAUSED, STOPPED and FAILED.
"""

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from offsets.formats import jackson
from offsets.formats.java_hashmap import java_hashmap_order

# Connect's defaults for its internal topics (DistributedConfig): offsets 25, status 5,
# config exactly 1 partition; all compacted.
OFFSETS_PARTITIONS = 25
STATUS_PARTITIONS = 5
CONFIG_PARTITIONS = 1
COMPACT = {"cleanup.policy": "compact"}

WORKER_GROUP_ID = "connect-cluster"
WORKERS = ("connect-1.internal:8083", "connect-2.internal:8083")


@dataclass(frozen=True)
class DemoOptions:
    end_ms: int
    seed: int = 42
    hours: float = 6.0
    flush_interval_ms: int = 60_000
    source_partitions: int = 6
    data_records_per_hour: int = 120
    bulk_connectors: int = 0
    bulk_partitions: int = 0
    offsets_topic: str = "connect-offsets"
    configs_topic: str = "connect-configs"
    status_topic: str = "connect-status"

    @property
    def start_ms(self) -> int:
        return self.end_ms - int(self.hours * 3_600_000)

    @property
    def ticks(self) -> int:
        return max(1, int(self.hours * 3_600_000) // self.flush_interval_ms)

    def tick_ms(self, tick: int) -> int:
        return self.start_ms + (tick + 1) * self.flush_interval_ms


@dataclass(frozen=True)
class Record:
    """One record as the runtime would write it. `transaction` groups records committed
    together by one transactional producer (None: a plain acks=all write)."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    transactional_id: str | None = None
    transaction: int | None = None


@dataclass(frozen=True)
class DataTopic:
    name: str
    partitions: int
    # Per partition, the CreateTime of each record in offset order.
    timestamps: tuple[tuple[int, ...], ...]


@dataclass
class DemoCluster:
    options: DemoOptions
    topics: dict[str, tuple[int, dict[str, str]]]
    data_topics: list[DataTopic]
    # group id -> {(topic, partition): committed offset}
    group_offsets: dict[str, dict[tuple[str, int], int]]
    connectors: dict[str, str] = field(default_factory=dict)  # name -> what it demonstrates
    expected_states: dict[str, str] = field(default_factory=dict)  # name -> target state

    def records(self) -> Iterator[Record]:
        """Yield every internal-topic record in the order the runtime wrote them."""
        yield from _config_and_status_records(self.options)
        yield from _offset_records(self.options)


def _dumps(value: object) -> bytes:
    return jackson.dumps(value)


def _hashmap(items: dict[str, object]) -> dict[str, object]:
    """Return `items` in the iteration order of a java.util.HashMap built from them."""
    return {key: items[key] for key in java_hashmap_order(items)}


# ---------------------------------------------------------------------------------------------
# Connectors: configuration, target state and runtime status over the simulated time.


@dataclass(frozen=True)
class ConnectorSpec:
    name: str
    properties: dict[str, str]
    tasks: int
    target_state: str  # STARTED, PAUSED, STOPPED, or DELETED
    runtime_state: str  # what the status topic ends with
    purpose: str
    failed_trace: str | None = None


FAILED_TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: java.sql.SQLException: "
    "Connection to audit-db.internal:5432 refused\n"
    "\tat io.confluent.connect.jdbc.sink.JdbcSinkTask.put(JdbcSinkTask.java:122)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(WorkerSinkTask.java:601)"
)

JDBC_TABLES = (
    "orders",
    "order_items",
    "customers",
    "products",
    "payments",
    "shipments",
    "invoices",
    "returns",
    "suppliers",
    "warehouses",
)


def jdbc_tables(count: int) -> list[str]:
    """Return `count` table names: the realistic ones first, then numbered ones."""
    names = list(JDBC_TABLES[:count])
    names += [f"table_{i:05d}" for i in range(len(names), count)]
    return names


def connector_specs(options: DemoOptions) -> list[ConnectorSpec]:
    tables = ",".join(jdbc_tables(options.source_partitions))
    specs = [
        ConnectorSpec(
            "file-source-app-logs",
            {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "tasks.max": "1",
                "file": "/var/log/app/events.log",
                "topic": "app-logs",
            },
            1,
            "STARTED",
            "RUNNING",
            "file source, one partition",
        ),
        ConnectorSpec(
            "file-source-audit",
            {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "tasks.max": "1",
                "file": "/var/log/app/audit.log",
                "topic": "audit-events",
            },
            0,
            "STOPPED",
            "STOPPED",
            "STOPPED; the rotated file's offset was deleted (tombstone)",
        ),
        ConnectorSpec(
            "jdbc-source-inventory",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "tasks.max": "2",
                "connection.url": "jdbc:postgresql://inventory-db.internal:5432/inventory",
                "connection.user": "connect",
                "connection.password": "s3cr3t-inventory",
                "mode": "timestamp+incrementing",
                "timestamp.column.name": "updated_at",
                "incrementing.column.name": "id",
                "table.whitelist": tables,
                "topic.prefix": "inventory.",
            },
            2,
            "STARTED",
            "RUNNING",
            "JDBC: multi-field partition maps, a rewind after a restart, a stalled table",
        ),
        ConnectorSpec(
            "http-source-metrics",
            {
                "connector.class": "com.example.connect.http.HttpSourceConnector",
                "tasks.max": "1",
                "http.url": "https://metrics.example.com/api/v1/query",
                "http.auth.token": "tok-3f9a2c",
                "poll.interval.ms": "60000",
                "topic": "metrics",
            },
            1,
            "PAUSED",
            "PAUSED",
            "PAUSED; key drift after an upgrade; doubles and escaped strings",
        ),
        ConnectorSpec(
            "mm2-us-east-source",
            {
                "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "tasks.max": "2",
                "source.cluster.alias": "us-east",
                "target.cluster.alias": "eu-west",
                "source.cluster.bootstrap.servers": "kafka-us-east.internal:9092",
                "topics": "orders,payments",
                "replication.factor": "3",
            },
            2,
            "STARTED",
            "RUNNING",
            "MirrorMaker 2 source (partition maps in Java HashMap order)",
        ),
        ConnectorSpec(
            "orders-cdc-eos",
            {
                "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                "tasks.max": "1",
                "database.hostname": "orders-db.internal",
                "database.password": "pg-orders-pw",
                "topic.prefix": "orders-db",
                "exactly.once.support": "required",
                "transaction.boundary": "poll",
                "offsets.storage.topic": "connect-offsets-orders-cdc-eos",
            },
            1,
            "STARTED",
            "RUNNING",
            "exactly-once source with its own offsets topic (transactional writes)",
        ),
        ConnectorSpec(
            "legacy-inventory-source",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "tasks.max": "1",
                "connection.url": "jdbc:mysql://legacy-db.internal:3306/inventory",
                "mode": "incrementing",
                "incrementing.column.name": "id",
                "table.whitelist": "stock,locations",
            },
            1,
            "DELETED",
            "DELETED",
            "deleted connector whose offsets remain",
        ),
        ConnectorSpec(
            "s3-sink-orders",
            {
                "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                "tasks.max": "2",
                "topics": "orders,payments",
                "s3.bucket.name": "datalake-raw",
                "aws.secret.access.key": "AKIA-demo-secret",
                "flush.size": "500",
            },
            2,
            "STARTED",
            "RUNNING",
            "sink with a small, healthy lag",
        ),
        ConnectorSpec(
            "es-sink-clicks",
            {
                "connector.class": "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
                "tasks.max": "2",
                "topics": "clicks",
                "connection.url": "https://search.internal:9200",
                "consumer.override.group.id": "search-indexer-clicks",
            },
            2,
            "STARTED",
            "RUNNING",
            "sink with consumer.override.group.id; one partition stalled",
        ),
        ConnectorSpec(
            "bq-sink-events",
            {
                "connector.class": "com.wepay.kafka.connect.bigquery.BigQuerySinkConnector",
                "tasks.max": "1",
                "topics": "app-logs",
                "project": "analytics",
                "keyfile": "/etc/connect/bq-key.json",
            },
            1,
            "STARTED",
            "RUNNING",
            "sink that manages its offsets outside Connect (never commits)",
        ),
        ConnectorSpec(
            "jdbc-sink-audit",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "tasks.max": "1",
                "topics.regex": "audit-.*",
                "connection.url": "jdbc:postgresql://audit-db.internal:5432/audit",
                "connection.password": "audit-pw",
            },
            1,
            "STARTED",
            "FAILED",
            "FAILED sink (task failed; its lag grows)",
            failed_trace=FAILED_TRACE,
        ),
    ]
    for index in range(options.bulk_connectors):
        specs.append(
            ConnectorSpec(
                bulk_connector_name(index),
                {
                    "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                    "tasks.max": "4",
                    "mode": "incrementing",
                    "incrementing.column.name": "id",
                },
                4,
                "STARTED",
                "RUNNING",
                "bulk source (benchmarks)",
            )
        )
    return specs


def bulk_connector_name(index: int) -> str:
    return f"bulk-source-{index:03d}"


def _status_value(state: str, worker: str, generation: int, trace: str | None = None) -> bytes:
    # KafkaStatusBackingStore's STATUS_SCHEMA_V0 field order: state, trace, worker_id, generation.
    return _dumps({"state": state, "trace": trace, "worker_id": worker, "generation": generation})


def _target_state_value(state: str) -> bytes:
    # KafkaConfigBackingStore.putTargetState: older workers know no STOPPED, so `state` says
    # PAUSED and `state.v2` carries the real state.
    return _dumps({"state": "PAUSED" if state == "STOPPED" else state, "state.v2": state})


def _config_and_status_records(options: DemoOptions) -> Iterator[Record]:
    """Yield the config and status topic history of every connector, in time order."""
    rng = random.Random(f"{options.seed}:config")
    cfg, status = options.configs_topic, options.status_topic
    t = options.start_ms - 600_000  # connectors were created before the simulated window
    yield Record(
        cfg,
        b"session-key",
        _dumps(
            {
                "key": "c2Vzc2lvbi1rZXktZm9yLWRlbW8tb25seQ==",
                "algorithm": "HmacSHA256",
                "creation-timestamp": t,
            }
        ),
        t,
    )
    generation = 1
    late: list[Record] = []
    for spec in connector_specs(options):
        t += rng.randint(200, 2_000)
        name = spec.name
        worker = WORKERS[rng.randrange(len(WORKERS))]
        yield Record(cfg, f"connector-{name}".encode(), _dumps({"properties": spec.properties}), t)
        created_tasks = spec.tasks if spec.target_state != "STOPPED" else 1
        if "exactly.once.support" in spec.properties:
            yield Record(cfg, f"tasks-fencing-{name}".encode(), _dumps({"task-count": 1}), t)
        for task in range(created_tasks):
            task_props = {
                **spec.properties,
                "task.class": spec.properties["connector.class"] + "Task",
            }
            yield Record(cfg, f"task-{name}-{task}".encode(), _dumps({"properties": task_props}), t)
        yield Record(cfg, f"commit-{name}".encode(), _dumps({"tasks": created_tasks}), t)
        yield Record(cfg, f"target-state-{name}".encode(), _target_state_value("STARTED"), t)
        generation += 1
        yield Record(
            status,
            f"status-connector-{name}".encode(),
            _status_value("UNASSIGNED", worker, generation),
            t,
        )
        yield Record(
            status,
            f"status-connector-{name}".encode(),
            _status_value("RUNNING", worker, generation),
            t + 5,
        )
        for task in range(created_tasks):
            key = f"status-task-{name}-{task}".encode()
            yield Record(
                status, key, _status_value("RUNNING", WORKERS[task % 2], generation), t + 9
            )
        for topic in spec.properties.get("topics", "").split(","):
            if topic and spec.properties["connector.class"].endswith("SinkConnector"):
                key = f"status-topic-{topic}:connector-{name}".encode()
                value = _dumps(
                    {"topic": {"name": topic, "connector": name, "task": 0, "discoverTimestamp": t}}
                )
                yield Record(status, key, value, t + 10)
        late.extend(_state_changes(spec, options, worker, generation + 100))
    yield from sorted(late, key=lambda record: record.timestamp_ms)


def _state_changes(
    spec: ConnectorSpec, options: DemoOptions, worker: str, generation: int
) -> list[Record]:
    """The records written when an operator paused, stopped or deleted the connector, or it failed."""
    cfg, status, name = options.configs_topic, options.status_topic, spec.name
    at = options.start_ms + int((options.end_ms - options.start_ms) * 0.8)
    records: list[Record] = []
    if spec.target_state == "PAUSED":
        records.append(
            Record(cfg, f"target-state-{name}".encode(), _target_state_value("PAUSED"), at)
        )
        records.append(
            Record(
                status,
                f"status-connector-{name}".encode(),
                _status_value("PAUSED", worker, generation),
                at + 50,
            )
        )
        for task in range(spec.tasks):
            records.append(
                Record(
                    status,
                    f"status-task-{name}-{task}".encode(),
                    _status_value("PAUSED", WORKERS[task % 2], generation),
                    at + 60,
                )
            )
    elif spec.target_state == "STOPPED":
        # Stopping (KIP-875) writes the target state, then zero task configs; tasks go away.
        records.append(
            Record(cfg, f"target-state-{name}".encode(), _target_state_value("STOPPED"), at)
        )
        records.append(Record(cfg, f"commit-{name}".encode(), _dumps({"tasks": 0}), at + 20))
        records.append(
            Record(
                status,
                f"status-connector-{name}".encode(),
                _status_value("STOPPED", worker, generation),
                at + 50,
            )
        )
        records.append(Record(status, f"status-task-{name}-0".encode(), None, at + 60))
    elif spec.target_state == "DELETED":
        at = options.start_ms + int((options.end_ms - options.start_ms) * 0.5)
        records.append(Record(cfg, f"connector-{name}".encode(), None, at))
        records.append(Record(cfg, f"target-state-{name}".encode(), None, at))
        records.append(Record(status, f"status-connector-{name}".encode(), None, at + 50))
        for task in range(spec.tasks):
            records.append(Record(status, f"status-task-{name}-{task}".encode(), None, at + 60))
    elif spec.runtime_state == "FAILED":
        at = failure_ms(options)
        records.append(
            Record(
                status,
                f"status-task-{name}-0".encode(),
                _status_value("FAILED", WORKERS[0], generation, spec.failed_trace),
                at,
            )
        )
        records.append(
            Record(
                status,
                f"status-connector-{name}".encode(),
                _status_value("FAILED", worker, generation, spec.failed_trace),
                at + 30,
            )
        )
    return records


def failure_ms(options: DemoOptions) -> int:
    """When jdbc-sink-audit failed: two thirds into the simulated window."""
    return options.start_ms + int((options.end_ms - options.start_ms) * 2 / 3)


def deletion_ms(options: DemoOptions) -> int:
    return options.start_ms + int((options.end_ms - options.start_ms) * 0.5)


# ---------------------------------------------------------------------------------------------
# Source offsets: one commit per partition per flush interval when the partition made progress.


@dataclass
class SourcePartition:
    connector: str
    key: bytes
    offset: dict[str, object]
    commit_probability: float = 1.0
    stalls_after_tick: int | None = None
    rewind_at_tick: int | None = None
    own_topic: str | None = None
    ends_at_tick: int | None = None
    history: list[dict[str, object]] = field(default_factory=list)


def _partitions(options: DemoOptions) -> list[SourcePartition]:
    """Every source partition of the demo with its starting offset and behaviour."""
    rng = random.Random(f"{options.seed}:partitions")
    ticks = options.ticks
    parts: list[SourcePartition] = []

    def add(
        connector: str, partition: dict[str, object], offset: dict[str, object], **kw: object
    ) -> SourcePartition:
        part = SourcePartition(connector, jackson.dumps_key(connector, partition), offset, **kw)
        parts.append(part)
        return part

    add(
        "file-source-app-logs",
        {"filename": "/var/log/app/events.log"},
        {"position": 0},
        commit_probability=0.9,
    )
    add(
        "file-source-audit",
        {"filename": "/var/log/app/audit.log.1"},
        {"position": 0},
        ends_at_tick=ticks // 3,
    )
    add(
        "file-source-audit",
        {"filename": "/var/log/app/audit.log"},
        {"position": 0},
        commit_probability=0.5,
    )

    for table in jdbc_tables(options.source_partitions):
        # JdbcSourceTask builds both maps as java.util.HashMap: their byte order is HashMap's.
        partition = _hashmap({"protocol": "1", "table": f"inventory.public.{table}"})
        offset = _hashmap(
            {
                "incrementing": rng.randint(1_000, 90_000),
                "timestamp": options.start_ms - 3_600_000,
                "timestamp_nanos": 0,
            }
        )
        add(
            "jdbc-source-inventory",
            partition,
            offset,
            commit_probability=1.0 if table in ("orders", "order_items") else 0.6,
            rewind_at_tick=ticks // 2 if table == "orders" else None,
            stalls_after_tick=ticks // 4 if table == "shipments" else None,
        )

    # The HTTP source used a HashMap for its partition map before an upgrade and a
    # LinkedHashMap (insertion order) after it: two byte forms of one logical partition.
    http_partition = {
        "endpoint": "https://metrics.example.com/api/v1/query",
        "query": 'rate(http_requests_total{job="api"}[5m])',
        "region": "Zürich",
    }
    drift_order = list(reversed(java_hashmap_order(http_partition)))
    add(
        "http-source-metrics",
        _hashmap(http_partition),
        {"last_poll_epoch_s": options.start_ms / 1000.0, "cursor": "a1", "score": 0.1},
        ends_at_tick=ticks // 2,
    )
    add(
        "http-source-metrics",
        {k: http_partition[k] for k in drift_order},
        {"last_poll_epoch_s": options.start_ms / 1000.0, "cursor": "b1", "score": 1.0e7},
        commit_probability=0.8,
    )

    for topic, count in (("orders", 6), ("payments", 3)):
        for partition_number in range(count):
            # MirrorUtils.wrapPartition puts topic, partition, cluster into a HashMap.
            partition = _hashmap(
                {"topic": topic, "partition": partition_number, "cluster": "us-east"}
            )
            add("mm2-us-east-source", partition, {"offset": rng.randint(0, 50_000)})

    add(
        "orders-cdc-eos",
        {"server": "orders-db"},
        {"lsn_proc": 0, "lsn": 23_000_000_000, "txId": 5_000, "ts_usec": options.start_ms * 1000},
        own_topic="connect-offsets-orders-cdc-eos",
    )

    for table in ("stock", "locations"):
        add(
            "legacy-inventory-source",
            {"table": table},
            {"incrementing": rng.randint(10, 9_000)},
            ends_at_tick=int(ticks * 0.5) - 1,
        )

    if options.bulk_connectors:
        for index in range(options.bulk_partitions):
            connector = bulk_connector_name(index % options.bulk_connectors)
            partition = _hashmap({"protocol": "1", "table": f"bulk.public.t{index:05d}"})
            add(connector, partition, {"incrementing": index * 10})
    return parts


def _advance(part: SourcePartition, rng: random.Random, t_ms: int) -> None:
    """Move a partition's offset forward the way its connector would."""
    offset = part.offset
    if "position" in offset:
        offset["position"] = int(offset["position"]) + rng.randint(200, 40_000)
    elif "timestamp_nanos" in offset:
        offset["incrementing"] = int(offset["incrementing"]) + rng.randint(1, 400)
        offset["timestamp"] = t_ms - rng.randint(0, 5_000)
        offset["timestamp_nanos"] = rng.randint(0, 999) * 1_000_000
    elif "lsn" in offset:
        offset["lsn"] = int(offset["lsn"]) + rng.randint(1_000, 900_000)
        offset["lsn_proc"] = offset["lsn"]
        offset["txId"] = int(offset["txId"]) + rng.randint(1, 40)
        offset["ts_usec"] = t_ms * 1000
    elif "last_poll_epoch_s" in offset:
        offset["last_poll_epoch_s"] = t_ms / 1000.0 + rng.randint(1, 999) / 1000.0
        offset["cursor"] = f"{str(offset['cursor'])[0]}{rng.randint(2, 10**6)}"
        offset["score"] = float(offset["score"]) * 1.5
    elif "incrementing" in offset:
        offset["incrementing"] = int(offset["incrementing"]) + rng.randint(1, 200)
    else:
        offset["offset"] = int(offset["offset"]) + rng.randint(1, 3_000)


def _offset_records(options: DemoOptions) -> Iterator[Record]:
    """Yield the offsets-topic records of every flush of the simulated window, in time order."""
    for _, records in _offset_ticks(options, range(options.ticks)):
        yield from records


def continued_offset_records(options: DemoOptions) -> Iterator[tuple[int, list[Record]]]:
    """Yield (tick, records) for every flush after the simulated window, without end.

    The window is replayed first (same seed, same offsets), then each later tick commits
    the partitions of the connectors still RUNNING at the end, as the runtime would go on
    doing: the stalled table stays stalled, the STOPPED, PAUSED, FAILED and deleted
    connectors commit nothing more.
    """
    running = {spec.name for spec in connector_specs(options) if spec.runtime_state == "RUNNING"}
    for tick, records in _offset_ticks(options, itertools.count(), running_after=running):
        if tick >= options.ticks:
            yield tick, records


def _offset_ticks(
    options: DemoOptions, ticks: Iterable[int], *, running_after: set[str] | None = None
) -> Iterator[tuple[int, list[Record]]]:
    """Yield (tick, the offsets-topic records of that flush). After the simulated window,
    only the connectors in `running_after` commit."""
    rng = random.Random(f"{options.seed}:offsets")
    parts = _partitions(options)
    worker_topic = options.offsets_topic
    transaction = 0
    for tick in ticks:
        t_ms = options.tick_ms(tick)
        records: list[Record] = []
        for part in parts:
            if part.ends_at_tick is not None and tick > part.ends_at_tick:
                continue
            if part.stalls_after_tick is not None and tick > part.stalls_after_tick:
                continue
            if tick >= options.ticks and part.connector not in (running_after or ()):
                continue
            if rng.random() >= part.commit_probability:
                continue
            if tick == part.rewind_at_tick and len(part.history) > 30:
                # A task restarted after a crash and resumed from an offset 30 flushes old:
                # the committed offset goes backwards (what KIP-275 is about).
                part.offset = dict(part.history[-30])
            else:
                _advance(part, rng, t_ms)
            part.history.append(dict(part.offset))
            value = _dumps(part.offset)
            if part.own_topic:
                transaction += 1
                transactional_id = f"{WORKER_GROUP_ID}-{part.connector}-0"
                records.append(
                    Record(part.own_topic, part.key, value, t_ms, transactional_id, transaction)
                )
                # ConnectorOffsetBackingStore copies non-tombstone writes to the worker topic.
                records.append(Record(worker_topic, part.key, value, t_ms + 3))
            else:
                records.append(Record(worker_topic, part.key, value, t_ms))
        if tick == options.ticks // 3 + 1:
            # The operator rotated the audit file and removed the old file's offset (KIP-875
            # PATCH with a null offset writes a tombstone).
            for part in parts:
                if part.key == jackson.dumps_key(
                    "file-source-audit", {"filename": "/var/log/app/audit.log.1"}
                ):
                    records.append(Record(worker_topic, part.key, None, t_ms + 1_000))
        yield tick, records


# ---------------------------------------------------------------------------------------------
# Sinks: data topics with real records and the groups' committed offsets.

DATA_TOPICS = {"orders": 6, "payments": 3, "clicks": 4, "app-logs": 2, "audit-events": 2}


def _data_topics(options: DemoOptions) -> list[DataTopic]:
    rng = random.Random(f"{options.seed}:data")
    topics = []
    span = options.end_ms - options.start_ms
    for name, partitions in DATA_TOPICS.items():
        per_partition = []
        for _ in range(partitions):
            count = max(
                5, int(options.data_records_per_hour * options.hours * rng.uniform(0.6, 1.4))
            )
            stamps = sorted(options.start_ms + rng.randrange(span) for _ in range(count))
            per_partition.append(tuple(stamps))
        topics.append(DataTopic(name, partitions, tuple(per_partition)))
    return topics


def _committed_at(timestamps: tuple[int, ...], at_ms: int) -> int:
    """The committed offset of a sink that had consumed everything written before `at_ms`."""
    return sum(1 for stamp in timestamps if stamp < at_ms)


def _group_offsets(
    options: DemoOptions, data: list[DataTopic]
) -> dict[str, dict[tuple[str, int], int]]:
    by_name = {topic.name: topic for topic in data}
    rng = random.Random(f"{options.seed}:groups")
    groups: dict[str, dict[tuple[str, int], int]] = {}

    s3: dict[tuple[str, int], int] = {}
    for topic in ("orders", "payments"):
        for partition, stamps in enumerate(by_name[topic].timestamps):
            # Healthy: a flush interval or two behind the end of the log.
            s3[(topic, partition)] = _committed_at(
                stamps, options.end_ms - rng.randint(1, 3) * options.flush_interval_ms
            )
    groups["connect-s3-sink-orders"] = s3

    clicks: dict[tuple[str, int], int] = {}
    for partition, stamps in enumerate(by_name["clicks"].timestamps):
        behind_ms = 2 * 3_600_000 if partition == 2 else options.flush_interval_ms
        clicks[(("clicks"), partition)] = _committed_at(
            stamps, options.end_ms - min(behind_ms, options.end_ms - options.start_ms - 1)
        )
    groups["search-indexer-clicks"] = clicks

    audit: dict[tuple[str, int], int] = {}
    for partition, stamps in enumerate(by_name["audit-events"].timestamps):
        audit[("audit-events", partition)] = _committed_at(stamps, failure_ms(options))
    groups["connect-jdbc-sink-audit"] = audit
    # bq-sink-events manages its offsets in BigQuery: its group never commits.
    return groups


@dataclass(frozen=True)
class SinkFlush:
    """One flush after the simulated window: the sinks' new data records (their timestamps
    per topic-partition, from `first_index` on) and the groups' committed offsets."""

    tick: int
    records: dict[tuple[str, int], list[int]]
    first_index: dict[tuple[str, int], int]
    group_offsets: dict[str, dict[tuple[str, int], int]]


def continued_sink_flushes(options: DemoOptions) -> Iterator[SinkFlush]:
    """Yield every flush after the simulated window, without end: new records arrive on the
    data topics at the seeded pace; the S3 sink stays a flush behind, the search indexer
    keeps up except on the partition two hours behind; the failed sink and the one that
    manages its own offsets commit nothing."""
    stamps = {
        (topic.name, partition): list(timestamps)
        for topic in _data_topics(options)
        for partition, timestamps in enumerate(topic.timestamps)
    }
    rng = random.Random(f"{options.seed}:sinks-later")
    per_flush = options.data_records_per_hour * options.flush_interval_ms / 3_600_000
    flush = options.flush_interval_ms
    for tick in itertools.count(options.ticks):
        t_ms = options.tick_ms(tick)
        records, first_index = {}, {}
        for tp, timestamps in stamps.items():
            count = int(per_flush) + (rng.random() < per_flush % 1)
            first_index[tp] = len(timestamps)
            records[tp] = sorted(t_ms - rng.randrange(flush) for _ in range(count))
            timestamps.extend(records[tp])
        groups = {
            "connect-s3-sink-orders": {
                tp: _committed_at(timestamps, t_ms - flush)
                for tp, timestamps in stamps.items()
                if tp[0] in ("orders", "payments")
            },
            "search-indexer-clicks": {
                tp: _committed_at(timestamps, t_ms - (2 * 3_600_000 if tp[1] == 2 else flush))
                for tp, timestamps in stamps.items()
                if tp[0] == "clicks"
            },
        }
        yield SinkFlush(tick, records, first_index, groups)


def build_demo(options: DemoOptions) -> DemoCluster:
    """Return the whole simulated cluster for these options (records are generated lazily)."""
    data = _data_topics(options)
    topics: dict[str, tuple[int, dict[str, str]]] = {
        options.offsets_topic: (OFFSETS_PARTITIONS, COMPACT),
        options.configs_topic: (CONFIG_PARTITIONS, COMPACT),
        options.status_topic: (STATUS_PARTITIONS, COMPACT),
        # KIP-618: the runtime creates a connector's own offsets topic like the worker's.
        "connect-offsets-orders-cdc-eos": (OFFSETS_PARTITIONS, COMPACT),
    }
    for topic in data:
        topics[topic.name] = (topic.partitions, {"cleanup.policy": "delete"})
    specs = connector_specs(options)
    return DemoCluster(
        options=options,
        topics=topics,
        data_topics=data,
        group_offsets=_group_offsets(options, data),
        connectors={spec.name: spec.purpose for spec in specs},
        expected_states={spec.name: spec.target_state for spec in specs},
    )
