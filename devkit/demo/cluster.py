"""The whole simulated cluster: its topics, sink groups and records, built from the options."""

from collections.abc import Iterator
from dataclasses import dataclass, field

from devkit.demo.connect_records import config_and_status_records
from devkit.demo.connectors import connector_specs
from devkit.demo.options import (
    COMPACT,
    CONFIG_PARTITIONS,
    OFFSETS_PARTITIONS,
    STATUS_PARTITIONS,
    DataTopic,
    DemoOptions,
    Record,
)
from devkit.demo.sinks import data_topics, group_offsets
from devkit.demo.source_offsets import offset_records


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
        yield from config_and_status_records(self.options)
        yield from offset_records(self.options)


def build_demo(options: DemoOptions) -> DemoCluster:
    """Return the whole simulated cluster for these options (records are generated lazily)."""
    data = data_topics(options)
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
        group_offsets=group_offsets(options, data),
        connectors={spec.name: spec.purpose for spec in specs},
        expected_states={spec.name: spec.target_state for spec in specs},
    )
