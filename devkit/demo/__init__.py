"""A simulated Kafka Connect cluster: the records its Java runtime would have written.

`build_demo()` is pure and deterministic for a seed and an end time: it returns the topics to
create, the config/status/offsets records in the order the runtime would have written them
over the simulated hours, the sink data topics and the committed offsets of the sink groups.
`devkit.demo_writer.write_demo()` puts that on a real Kafka cluster. The package holds the
options and record type (`options`), the connectors (`connectors`), their config and status
history (`connect_records`), the source offsets (`source_offsets`), the sinks (`sinks`) and
the whole cluster (`cluster`).

The connectors cover what an operator meets in practice (see DEMO_CONNECTORS in the README):
file, JDBC (multi-field partition maps, a rewind after a restart, a stalled table), an HTTP
source whose partition key drifted between two byte forms, MirrorMaker 2 (HashMap field
order), an exactly-once source with its own offsets topic, a deleted connector whose offsets
remain, sinks that lag, a sink with `consumer.override.group.id`, a sink managing its offsets
outside Connect, and the states RUNNING, PAUSED, STOPPED and FAILED.
"""

from devkit.demo.cluster import DemoCluster, build_demo
from devkit.demo.connectors import ConnectorSpec, connector_specs
from devkit.demo.options import DataTopic, DemoOptions, Record
from devkit.demo.sinks import SinkFlush, continued_sink_flushes
from devkit.demo.source_offsets import continued_offset_records

__all__ = [
    "ConnectorSpec",
    "DataTopic",
    "DemoCluster",
    "DemoOptions",
    "Record",
    "SinkFlush",
    "build_demo",
    "connector_specs",
    "continued_offset_records",
    "continued_sink_flushes",
]
