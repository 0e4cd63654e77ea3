"""What a source offset says of the source's progress: MirrorMaker 2 positions, source clocks."""

import json

import pytest

from offsets.domain.mirrors import (
    MirrorPosition,
    is_mirror_source,
    mirror_position,
    suggested_upstream,
)
from offsets.domain.source_lag import source_clock_ms
from offsets.refresh.mirrors import mirror_positions

MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def test_the_mirror_source_is_told_from_the_other_mirror_maker_connectors():
    assert is_mirror_source({"connector.class": MIRROR})
    assert is_mirror_source({"connector.class": "MirrorSourceConnector"})
    assert not is_mirror_source(
        {"connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"}
    )
    assert not is_mirror_source({"connector.class": "com.example.NotMirrorSourceConnector"})
    assert not is_mirror_source({})


def test_the_stored_offset_is_the_last_record_copied_so_the_next_is_one_more():
    # MirrorSourceTask.convertRecord stores record.offset(); initializeConsumer seeks to + 1.
    assert mirror_position(
        {"cluster": "up", "topic": "orders", "partition": 2}, {"offset": 41}
    ) == (MirrorPosition(alias="up", topic="orders", partition=2, next_offset=42))
    assert mirror_position({"cluster": "up", "topic": "t", "partition": 0}, {"offset": 0}) == (
        MirrorPosition("up", "t", 0, 1)
    )


@pytest.mark.parametrize(
    ("partition", "offset"),
    [
        ({"cluster": "up", "topic": "t", "partition": 0}, {"offset": -1}),  # "uncommitted"
        ({"cluster": "up", "topic": "t", "partition": 0}, {"offset": "5"}),
        ({"cluster": "up", "topic": "t", "partition": 0}, {"offset": True}),
        ({"cluster": "up", "topic": "t", "partition": 0}, {"position": 5}),
        ({"cluster": "up", "topic": "t", "partition": "0"}, {"offset": 5}),
        ({"cluster": "up", "topic": "t", "partition": -1}, {"offset": 5}),
        ({"topic": "t", "partition": 0}, {"offset": 5}),
        ({"cluster": 1, "topic": "t", "partition": 0}, {"offset": 5}),
        (["up", "t", 0], {"offset": 5}),
        ({"cluster": "up", "topic": "t", "partition": 0}, None),
    ],
)
def test_any_other_shape_is_no_mirror_position(partition, offset):
    assert mirror_position(partition, offset) is None


@pytest.mark.parametrize(
    ("connector_class", "offset", "expected"),
    [
        # PostgreSQL: the transaction's commit time in microseconds.
        (
            "io.debezium.connector.postgresql.PostgresConnector",
            {"lsn": 24023128, "txId": 555, "ts_usec": 1_700_000_000_123_456},
            1_700_000_000_123,
        ),
        # MySQL: the binlog event's time in seconds.
        (
            "io.debezium.connector.mysql.MySqlConnector",
            {"file": "binlog.000003", "pos": 154, "ts_sec": 1_700_000_000},
            1_700_000_000_000,
        ),
        (
            "io.debezium.connector.vitess.VitessConnector",
            {"ts_ms": 1_700_000_000_5},
            17_000_000_005,
        ),
        # JDBC timestamp mode: the last row's timestamp column.
        (
            "io.confluent.connect.jdbc.JdbcSourceConnector",
            {"timestamp": 1_700_000_000_250, "timestamp_nanos": 250_000_000},
            1_700_000_000_250,
        ),
        (
            "dev.offsetsdashboard.connectors.TableSourceConnector",
            {"incrementing": 7, "timestamp": 1_700_000_000_250},
            1_700_000_000_250,
        ),
    ],
)
def test_known_cdc_and_jdbc_shapes_give_the_source_clock(connector_class, offset, expected):
    assert source_clock_ms(connector_class, offset) == expected


@pytest.mark.parametrize(
    ("connector_class", "offset"),
    [
        # The right fields under a class not known to mean them: no guess.
        ("com.example.CustomSourceConnector", {"ts_ms": 1_700_000_000_000}),
        ("com.example.CustomSourceConnector", {"timestamp": 1_700_000_000_000}),
        # A known class without its clock (JDBC incrementing mode, SQL Server's LSNs).
        ("io.confluent.connect.jdbc.JdbcSourceConnector", {"incrementing": 5}),
        ("io.debezium.connector.sqlserver.SqlServerConnector", {"commit_lsn": "00:01"}),
        ("io.debezium.connector.mysql.MySqlConnector", {"ts_sec": "1700000000"}),
        ("io.debezium.connector.mysql.MySqlConnector", {"ts_sec": 0}),
        ("io.debezium.connector.mysql.MySqlConnector", {"ts_sec": True}),
        ("io.debezium.connector.mysql.MySqlConnector", None),
    ],
)
def test_unknown_shapes_have_no_source_clock(connector_class, offset):
    assert source_clock_ms(connector_class, offset) is None


POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"


@pytest.mark.parametrize(
    "offset",
    [
        # Debezium 3.6's PostgreSQL snapshot, its last record as the worker committed it.
        {
            "last_snapshot_record": True,
            "lsn": 22188568,
            "txId": 726,
            "ts_usec": 1_795_760_033_456_388,
            "snapshot": "INITIAL",
            "snapshot_completed": True,
        },
        {"lsn": 22188568, "txId": 726, "ts_usec": 1_795_760_033_456_388, "snapshot": "BLOCKING"},
        # Older releases marked it true (MySQL's `ts_sec` likewise).
        {"lsn": 22188568, "ts_usec": 1_795_760_033_456_388, "snapshot": True},
        {"file": "binlog.000003", "pos": 154, "ts_sec": 1_700_000_000, "snapshot": True},
    ],
)
def test_a_debezium_snapshot_offset_has_no_source_clock(offset):
    # The snapshot's clock is the time the connector read the row, not a change's time.
    connector_class = POSTGRES if "lsn" in offset else "io.debezium.connector.mysql.MySqlConnector"
    assert source_clock_ms(connector_class, offset) is None


@pytest.mark.parametrize("marker", [False, "false", "", None])
def test_a_debezium_offset_marked_no_snapshot_keeps_its_clock(marker):
    offset = {"lsn": 22188992, "txId": 727, "ts_usec": 1_795_760_034_101_234, "snapshot": marker}
    assert source_clock_ms(POSTGRES, offset) == 1_795_760_034_101


def test_the_upstream_is_suggested_from_a_shared_bootstrap_server():
    clusters = [("a", "k1:9092"), ("b", "K2:9092,k3:9092"), ("c", "k3:9092")]
    config = {"source.cluster.bootstrap.servers": "k3:9092, k9:9092"}
    assert suggested_upstream(config, clusters) == "b"
    assert suggested_upstream({"source.cluster.bootstrap.servers": "k2:9092"}, clusters) == "b"
    assert suggested_upstream({"source.cluster.bootstrap.servers": "k7:9092"}, clusters) is None
    assert suggested_upstream({}, clusters) is None


def row(connector: str, partition: dict, offset: dict | None, *, effective: bool = True) -> dict:
    return {
        "connector": connector,
        "partition_json": json.dumps(partition),
        "offset_json": None if offset is None else json.dumps(offset),
        "effective": effective,
    }


def test_a_mirror_resumes_from_its_effective_live_offsets_of_its_current_alias_only():
    latest = [
        row("m", {"cluster": "up", "topic": "t", "partition": 0}, {"offset": 9}),
        # The value the runtime does not use (the connector's own topic wins).
        row("m", {"cluster": "up", "topic": "t", "partition": 1}, {"offset": 4}, effective=False),
        # Tombstoned: the task starts that partition afresh.
        row("m", {"cluster": "up", "topic": "t", "partition": 2}, None),
        # An alias the connector no longer has.
        row("m", {"cluster": "old", "topic": "t", "partition": 0}, {"offset": 99}),
        # Another connector's, and one that is no mirror.
        row("n", {"cluster": "up", "topic": "t", "partition": 0}, {"offset": 1}),
        row("file", {"filename": "a.log"}, {"position": 8}),
    ]
    assert mirror_positions(latest, {"m": "up"}) == {"m": {("t", 0): 10}}
