"""The demo's options, the record it produces, and the Connect worker it pretends to be."""

from dataclasses import dataclass

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


def failure_ms(options: DemoOptions) -> int:
    """When jdbc-sink-audit failed: two thirds into the simulated window."""
    return options.start_ms + int((options.end_ms - options.start_ms) * 2 / 3)


def deletion_ms(options: DemoOptions) -> int:
    """When legacy-inventory-source was deleted: half way through the simulated window."""
    return options.start_ms + int((options.end_ms - options.start_ms) * 0.5)


def dumps(value: object) -> bytes:
    return jackson.dumps(value)


def hashmap(items: dict[str, object]) -> dict[str, object]:
    """Return `items` in the iteration order of a java.util.HashMap built from them."""
    return {key: items[key] for key in java_hashmap_order(items)}
