"""The demo's source offsets: one commit per partition per flush interval when the partition
made progress."""

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from devkit.demo.connectors import bulk_connector_name, connector_specs, jdbc_tables
from devkit.demo.options import WORKER_GROUP_ID, DemoOptions, Record, dumps, hashmap
from offsets.formats import jackson
from offsets.formats.java_hashmap import java_hashmap_order


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


def _partition(
    connector: str, partition: dict[str, object], offset: dict[str, object], **kw: object
) -> SourcePartition:
    return SourcePartition(connector, jackson.dumps_key(connector, partition), offset, **kw)


def _partitions(options: DemoOptions) -> list[SourcePartition]:
    """Every source partition of the demo with its starting offset and behaviour."""
    # One generator drawn from in this order keeps the offsets of a seed what they are.
    rng = random.Random(f"{options.seed}:partitions")
    return [
        *_file_partitions(options),
        *_jdbc_partitions(options, rng),
        *_http_partitions(options),
        *_mirror_partitions(rng),
        _partition(
            "orders-cdc-eos",
            {"server": "orders-db"},
            {
                "lsn_proc": 0,
                "lsn": 23_000_000_000,
                "txId": 5_000,
                "ts_usec": options.start_ms * 1000,
            },
            own_topic="connect-offsets-orders-cdc-eos",
        ),
        *_legacy_partitions(options, rng),
        *_bulk_partitions(options),
    ]


def _file_partitions(options: DemoOptions) -> list[SourcePartition]:
    return [
        _partition(
            "file-source-app-logs",
            {"filename": "/var/log/app/events.log"},
            {"position": 0},
            commit_probability=0.9,
        ),
        _partition(
            "file-source-audit",
            {"filename": "/var/log/app/audit.log.1"},
            {"position": 0},
            ends_at_tick=options.ticks // 3,
        ),
        _partition(
            "file-source-audit",
            {"filename": "/var/log/app/audit.log"},
            {"position": 0},
            commit_probability=0.5,
        ),
    ]


def _jdbc_partitions(options: DemoOptions, rng: random.Random) -> list[SourcePartition]:
    ticks = options.ticks
    parts = []
    for table in jdbc_tables(options.source_partitions):
        # JdbcSourceTask builds both maps as java.util.HashMap: their byte order is HashMap's.
        partition = hashmap({"protocol": "1", "table": f"inventory.public.{table}"})
        offset = hashmap(
            {
                "incrementing": rng.randint(1_000, 90_000),
                "timestamp": options.start_ms - 3_600_000,
                "timestamp_nanos": 0,
            }
        )
        parts.append(
            _partition(
                "jdbc-source-inventory",
                partition,
                offset,
                commit_probability=1.0 if table in ("orders", "order_items") else 0.6,
                rewind_at_tick=ticks // 2 if table == "orders" else None,
                stalls_after_tick=ticks // 4 if table == "shipments" else None,
            )
        )
    return parts


def _http_partitions(options: DemoOptions) -> list[SourcePartition]:
    # The HTTP source used a HashMap for its partition map before an upgrade and a
    # LinkedHashMap (insertion order) after it: two byte forms of one logical partition.
    http_partition = {
        "endpoint": "https://metrics.example.com/api/v1/query",
        "query": 'rate(http_requests_total{job="api"}[5m])',
        "region": "Zürich",
    }
    drift_order = list(reversed(java_hashmap_order(http_partition)))
    return [
        _partition(
            "http-source-metrics",
            hashmap(http_partition),
            {"last_poll_epoch_s": options.start_ms / 1000.0, "cursor": "a1", "score": 0.1},
            ends_at_tick=options.ticks // 2,
        ),
        _partition(
            "http-source-metrics",
            {k: http_partition[k] for k in drift_order},
            {"last_poll_epoch_s": options.start_ms / 1000.0, "cursor": "b1", "score": 1.0e7},
            commit_probability=0.8,
        ),
    ]


def _mirror_partitions(rng: random.Random) -> list[SourcePartition]:
    parts = []
    for topic, count in (("orders", 6), ("payments", 3)):
        for partition_number in range(count):
            # MirrorUtils.wrapPartition puts topic, partition, cluster into a HashMap.
            partition = hashmap(
                {"topic": topic, "partition": partition_number, "cluster": "us-east"}
            )
            parts.append(
                _partition("mm2-us-east-source", partition, {"offset": rng.randint(0, 50_000)})
            )
    return parts


def _legacy_partitions(options: DemoOptions, rng: random.Random) -> list[SourcePartition]:
    return [
        _partition(
            "legacy-inventory-source",
            {"table": table},
            {"incrementing": rng.randint(10, 9_000)},
            ends_at_tick=int(options.ticks * 0.5) - 1,
        )
        for table in ("stock", "locations")
    ]


def _bulk_partitions(options: DemoOptions) -> list[SourcePartition]:
    if not options.bulk_connectors:
        return []
    parts = []
    for index in range(options.bulk_partitions):
        connector = bulk_connector_name(index % options.bulk_connectors)
        partition = hashmap({"protocol": "1", "table": f"bulk.public.t{index:05d}"})
        parts.append(_partition(connector, partition, {"incrementing": index * 10}))
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


def offset_records(options: DemoOptions) -> Iterator[Record]:
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
            value = dumps(part.offset)
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
