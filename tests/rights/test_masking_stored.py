"""Error traces and malformed-record examples are masked where they are read from Kafka."""

import json

from offsets import connect_state
from offsets.domain.masking import MASK, prefix_between_tokens
from offsets.kafka import reading
from offsets.models import Cluster
from offsets.refresh.run_records import describe_error
from offsets.spark import partials

TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: java.sql.SQLException: cannot connect to"
    " jdbc:postgresql://app:TRACE-SECRET-1@db:5432/shop?password=TRACE-SECRET-2\n"
    "\tat io.confluent.connect.jdbc.JdbcSourceTask.start(JdbcSourceTask.java:91)\n"
)


def _record(topic: str, key: str, value: dict | bytes) -> reading.RawRecord:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return reading.RawRecord(
        topic=topic, partition=0, offset=0, timestamp_ms=0, key=key.encode(), value=raw
    )


def _read_state(monkeypatch, records: list[reading.RawRecord]) -> connect_state.ConnectState:
    monkeypatch.setattr(reading, "read_on", lambda *args, **kwargs: reading.ReadOn(records, {}, {}))
    cluster = Cluster(
        name="c1",
        bootstrap_servers="localhost:1",
        configs_topic="connect-configs",
        status_topic="connect-status",
        offsets_topic="connect-offsets",
    )
    return connect_state.read_connect_state(cluster=cluster)


def test_a_trace_is_masked_as_it_is_read(monkeypatch, settings) -> None:
    settings.KAFKA_READ_TIMEOUT = 1
    state = _read_state(
        monkeypatch,
        [
            _record(
                "connect-configs",
                "connector-jdbc",
                {"properties": {"connector.class": "JdbcSourceConnector", "db.pwd": "CFG-1"}},
            ),
            _record(
                "connect-status",
                "status-connector-jdbc",
                {"state": "FAILED", "trace": TRACE, "worker_id": "w:8083", "generation": 1},
            ),
        ],
    )
    (connector,) = state.connectors
    assert "SECRET" not in connector.trace
    assert f"app:{MASK}@db:5432/shop?password={MASK}" in connector.trace
    assert "JdbcSourceTask.java:91" in connector.trace
    assert connector.config["db.pwd"] == MASK


def test_malformed_record_examples_are_masked(monkeypatch, settings) -> None:
    settings.KAFKA_READ_TIMEOUT = 1
    state = _read_state(
        monkeypatch,
        [
            _record("connect-configs", "connector-x", b'{"properties": {"password": "EX-1"'),
            _record("connect-status", "status-connector-y", b'{"trace": "token=EX-2", "x":'),
        ],
    )
    examples = [*state.config_examples.values(), *state.status_examples.values()]
    assert len(examples) == 2
    assert all("EX-" not in example and MASK in example for example in examples), examples


def test_a_long_record_is_cut_between_tokens_so_that_masking_sees_the_secret_whole() -> None:
    value = b'{"url": "jdbc:postgresql://app:' + b"p" * 190 + b'@db/shop"}'
    example = partials.example(b'["jdbc",{"table":"t"}]', value)
    assert "ppp" not in example
    assert example.endswith('value={"url": "')


def test_a_prefix_ends_at_a_delimiter_or_is_empty() -> None:
    assert prefix_between_tokens("short", 10) == "short"
    assert prefix_between_tokens("a b c", 4) == "a b "
    assert prefix_between_tokens(b"abcdef", 3) == b""
    assert prefix_between_tokens(b'{"k": "v"}', 8) == b'{"k": "'


def test_a_refresh_error_is_masked() -> None:
    error = RuntimeError("read failed for jdbc:mysql://app:ERR-SECRET@db/shop\n\tat x.y(Z.java:1)")
    assert describe_error(error) == f"read failed for jdbc:mysql://app:{MASK}@db/shop"
