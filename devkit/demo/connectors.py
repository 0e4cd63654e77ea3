"""The demo's connectors: each one's configuration, tasks, target state and what it shows."""

from dataclasses import dataclass

from devkit.demo.options import DemoOptions


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
                # A class the dashboard knows keeps its offsets outside Connect
                # (formats.connectors.EXTERNAL_OFFSETS_SINK_CLASSES): the project's own.
                "connector.class": "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector",
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
