"""What a source offset says of the source's progress: the source's own clock in CDC and
JDBC-style offsets. Pure rules, no I/O (MirrorMaker 2's upstream position is in `mirrors`).

Only shapes recognised by the connector's class and its fields mean anything here: an offset
of any other shape says nothing, rather than a guess.
"""

from collections.abc import Mapping

__all__ = [
    "JDBC_SOURCE_CLASSES",
    "has_source_clock",
    "position_age_ms",
    "source_clock_ms",
]

# Debezium's connectors keep the source's commit time in the offset, each in its own unit:
# MySQL and MariaDB `ts_sec` (the binlog event's time), PostgreSQL `ts_usec` (the
# transaction's commit time), others `ts_ms`.
_DEBEZIUM_PREFIX = "io.debezium.connector."
_DEBEZIUM_CLOCKS = (("ts_ms", 1), ("ts_usec", 0.001), ("ts_sec", 1000))
# While Debezium snapshots a table (and in the last snapshot record it commits, until the first
# change streams), the offset carries `snapshot` ("INITIAL", or true in older releases) and
# the time the connector read the row, on its own clock: not a change's time in the source.
_DEBEZIUM_SNAPSHOT = "snapshot"

# JDBC-style sources in timestamp mode keep the last row's timestamp column as `timestamp`
# (ms since the epoch) and its nanoseconds within the second as `timestamp_nanos`. The
# project's own table source writes the same shape.
JDBC_SOURCE_CLASSES = (
    "io.confluent.connect.jdbc.JdbcSourceConnector",
    "dev.offsetsdashboard.connectors.TableSourceConnector",
)


def _integer(value: object) -> int | None:
    # JSON true/false are no offsets, though Python counts them as ints.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def source_clock_ms(connector_class: str, offset: object) -> int | None:
    """The source's own time in a CDC or JDBC-style offset, in ms since the epoch; None when
    the class or the fields are not ones known to carry it."""
    if not isinstance(offset, Mapping):
        return None
    connector_class = connector_class.strip()
    if connector_class.startswith(_DEBEZIUM_PREFIX):
        if _in_debezium_snapshot(offset):
            return None
        for field, to_ms in _DEBEZIUM_CLOCKS:
            value = _integer(offset.get(field))
            if value is not None and value > 0:
                return int(value * to_ms)
        return None
    if connector_class in JDBC_SOURCE_CLASSES:
        value = _integer(offset.get("timestamp"))
        return value if value is not None and value > 0 else None
    return None


def _in_debezium_snapshot(offset: Mapping) -> bool:
    marker = offset.get(_DEBEZIUM_SNAPSHOT)
    if isinstance(marker, str):
        return marker.strip().lower() not in ("", "false")
    return marker is True


def has_source_clock(connector_class: str) -> bool:
    """Whether the class is one whose offsets may carry the source's clock."""
    connector_class = connector_class.strip()
    return connector_class.startswith(_DEBEZIUM_PREFIX) or connector_class in JDBC_SOURCE_CLASSES


def position_age_ms(connector_class: str, offset: object, committed_at_ms: int) -> int | None:
    """How old the source position was when its offset was committed: the commit's time less
    the source's clock in the offset (`source_clock_ms`); None when the offset has no clock.

    It grows while the source is idle (no change, the position stays), so it is the age of
    the last change read, not a backlog. A source clock ahead of the worker's counts 0.
    """
    clock = source_clock_ms(connector_class, offset)
    return None if clock is None else max(committed_at_ms - clock, 0)
