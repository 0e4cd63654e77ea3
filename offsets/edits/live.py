"""Read a connector's Connect topics and consumer group now, the way the runtime reads them."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.core.paginator import Page, Paginator

from offsets import tuning
from offsets.domain import edits as edit_rules
from offsets.edits.errors import ConnectorNotFound
from offsets.formats import jackson
from offsets.formats.config_records import ConfigSnapshot, fold_config_records
from offsets.formats.connectors import Connector, connector_from, sink_topics
from offsets.formats.offset_records import LatestOffsets, SourceOffsetRecord, latest_offsets
from offsets.formats.status_records import StatusSnapshot, fold_status_records
from offsets.kafka import admin, groups, reading, standalone_worker
from offsets.kafka.connect_answers import ConnectRestError
from offsets.kafka.errors import TopicNotFound
from offsets.models import Cluster


class LiveReader:
    """Read a cluster's Connect topics now, each at most once per instance.

    One instance serves one step (a staging, a lock check, a verification); a new step needs
    a new instance so it sees the topics as they are then.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.kafka = cluster.kafka_settings()
        self._records: dict[str, list[reading.RawRecord]] = {}
        self._configs: ConfigSnapshot | None = None
        self._statuses: StatusSnapshot | None = None
        self._latest: dict[str, LatestOffsets] = {}
        self._counts: dict[str, int] | None = None
        # A standalone worker's offsets file, once read (its hash dates an offline edit).
        self.offsets_file: standalone_worker.OffsetsFile | None = None

    def records(self, topic: str) -> list[reading.RawRecord]:
        if topic not in self._records and self._from_file(topic):
            self.offsets_file = standalone_worker.read_offsets_file(self.cluster.offsets_file)
            self._records[topic] = _file_records(topic, self.offsets_file)
        if topic not in self._records:
            self._records[topic] = list(
                reading.read_topic(
                    {**self.kafka, **tuning.LIVE_READ_SETTINGS},
                    topic,
                    timeout=settings.KAFKA_READ_TIMEOUT,
                    batch_size=tuning.LIVE_READ_BATCH,
                )
            )
        return self._records[topic]

    def _from_file(self, topic: str) -> bool:
        """Whether `topic` names a standalone worker's offsets file (it has no topics)."""
        return self.cluster.is_standalone and topic == self.cluster.offsets_topic

    def _read_worker(self) -> None:
        """A standalone worker's connectors from its REST API; none when it does not answer
        (its connectors are then those its offsets file names)."""
        try:
            worker = standalone_worker.worker_snapshots(self.cluster)
        except ConnectRestError:
            worker = standalone_worker.WorkerSnapshots(ConfigSnapshot({}), StatusSnapshot({}))
        self._configs, self._statuses = worker.configs, worker.statuses

    def configs(self) -> ConfigSnapshot:
        if self._configs is None and self.cluster.is_standalone:
            self._read_worker()
        if self._configs is None:
            self._configs = fold_config_records(
                (r.key, r.value) for r in self.records(self.cluster.configs_topic)
            )
        return self._configs

    def statuses(self) -> StatusSnapshot:
        if self._statuses is None and self.cluster.is_standalone:
            self._read_worker()
        if self._statuses is None:
            self._statuses = fold_status_records(
                (r.key, r.value) for r in self.records(self.cluster.status_topic)
            )
        return self._statuses

    def latest(self, topic: str) -> LatestOffsets:
        if topic not in self._latest:
            self._latest[topic] = latest_offsets((r.key, r.value) for r in self.records(topic))
        return self._latest[topic]

    def partition_counts(self) -> dict[str, int]:
        if self._counts is None:
            self._counts = admin.topic_partition_counts(
                self.kafka, timeout=settings.KAFKA_READ_TIMEOUT
            )
        return self._counts

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """Return the group's committed offsets now (not kept: each call asks again)."""
        return groups.committed_offsets(self.kafka, group_id, timeout=settings.KAFKA_READ_TIMEOUT)


def _file_records(topic: str, read: standalone_worker.OffsetsFile) -> list[reading.RawRecord]:
    """A standalone worker's offsets file as records of its offsets topic, in file order."""
    return [
        reading.RawRecord(topic, 0, index, 0, key, value)
        for index, (key, value) in enumerate(read.entries.items())
    ]


def read_connector(
    *, cluster: Cluster, connector: str, reader: LiveReader | None = None
) -> Connector:
    """Return the connector as its topics say now, or raise ConnectorNotFound."""
    reader = reader or LiveReader(cluster)
    config = reader.configs().connectors.get(connector)
    if config is None:
        # The config may be compacted away while offsets remain: still a (deleted) source.
        worker = reader.latest(cluster.offsets_topic)
        if not any(record.connector == connector for record in worker.offsets.values()):
            raise ConnectorNotFound(
                f"No connector {connector!r} on {cluster.name}: it is neither in "
                f"{cluster.configs_topic} nor in {cluster.offsets_topic}.",
                field="connector",
            )
    return connector_from(
        connector,
        config,
        reader.statuses().connectors.get(connector),
        worker_offsets_topic=cluster.offsets_topic,
    )


def source_view(*, context: Connector, reader: LiveReader) -> dict[bytes, SourceOffsetRecord]:
    """Return the connector's offsets as its tasks would read them now, by exact key bytes."""
    worker = reader.latest(context.worker_topic).offsets
    own = None
    if context.own_topic:
        try:
            own = reader.latest(context.primary_topic).offsets
        except TopicNotFound:
            # The runtime creates the connector's topic when the connector first starts.
            own = {}
    return edit_rules.runtime_view(context.name, worker, own)


def sink_partitions(
    *, context: Connector, reader: LiveReader, committed: Iterable[tuple[str, int]]
) -> list[tuple[str, int]]:
    """Every partition of the sink's input topics, plus any its group has offsets for."""
    counts = reader.partition_counts()
    topics = sink_topics(
        context.sink_topics, context.sink_topics_regex, counts, connector=context.name
    )
    wanted = {(topic, p) for topic in topics for p in range(counts[topic])}
    wanted |= {tp for tp in committed if tp[0] in counts}
    return sorted(wanted)


@dataclass(frozen=True)
class CurrentOffsets:
    """One page of a connector's live offsets, and every partition the stage form accepts."""

    context: Connector
    page: Page
    total: int
    # Source: partition identities; sink: (topic, partition) pairs.
    partitions: set


def current_offsets(
    *,
    cluster: Cluster,
    connector: str,
    query: str,
    page: int,
    per_page: int,
    sink_committed: dict[tuple[str, int], int] | None = None,
) -> CurrentOffsets:
    """Return the page of a connector's live offsets whose label holds ``query``.

    Every partition is known, only the page is rendered. A source's offsets come from reading
    its topics whole (the runtime's view needs every record); a sink's log bounds are asked
    for the partitions on the page only. A sink's committed offsets are its Connect group's,
    or ``sink_committed`` when given (those of a store outside Connect, read by the caller).
    Raises ConnectorNotFound.
    """
    reader = LiveReader(cluster)
    context = read_connector(cluster=cluster, connector=connector, reader=reader)
    needle = query.casefold()
    if context.is_source:
        return _source_offsets(context, reader, needle, page, per_page)
    committed = reader.committed(context.group_id) if sink_committed is None else sink_committed
    return _sink_offsets(context, reader, committed, needle, page, per_page)


def _source_offsets(
    context: Connector, reader: LiveReader, needle: str, page: int, per_page: int
) -> CurrentOffsets:
    records = sorted(
        (record.partition_identity, record.key_bytes, record)
        for record in source_view(context=context, reader=reader).values()
    )
    found = [item for item in records if needle in item[0].casefold()]
    shown = Paginator(found, per_page).get_page(page)
    shown.object_list = [
        {
            # Escaped as Jackson writes a lone surrogate: still JSON, typed back it names the
            # same partition, and the page can be encoded.
            "label": jackson.escape_lone_surrogates(identity),
            "key": key.decode("utf-8", "backslashreplace"),
            "offset": record.value_bytes.decode("utf-8", "backslashreplace"),
        }
        for identity, key, record in shown.object_list
    ]
    return CurrentOffsets(context, shown, len(records), {identity for identity, _, _ in records})


def _sink_offsets(
    context: Connector,
    reader: LiveReader,
    committed: dict[tuple[str, int], int],
    needle: str,
    page: int,
    per_page: int,
) -> CurrentOffsets:
    scope = sink_partitions(context=context, reader=reader, committed=committed)
    found = [tp for tp in scope if needle in f"{tp[0]}-{tp[1]}".casefold()]
    shown = Paginator(found, per_page).get_page(page)
    marks = reading.confirmed_watermarks(
        reader.kafka, shown.object_list, timeout=settings.KAFKA_READ_TIMEOUT
    )
    shown.object_list = [
        {
            "label": f"{topic}-{partition}",
            "committed": committed.get((topic, partition)),
            "log_start": marks[(topic, partition)].low,
            "log_end": marks[(topic, partition)].high,
        }
        for topic, partition in shown.object_list
    ]
    return CurrentOffsets(context, shown, len(scope), set(scope))
