"""Read a connector's Connect topics and consumer group now, the way the runtime reads them,
and an edit's rows beside what they hold now: what its lock check compares and its read-back
judges (`settle_live`)."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.conf import settings
from django.core.paginator import Page, Paginator

from offsets import tuning
from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector, connector_from, sink_topics
from offsets.domain.edits import CheckResult
from offsets.domain.worker_offsets import canonical
from offsets.edits.errors import ConnectorNotFound
from offsets.formats import jackson
from offsets.formats.config_records import ConfigSnapshot, fold_config_records
from offsets.formats.offset_records import LatestOffsets, SourceOffsetRecord, latest_offsets
from offsets.formats.status_records import StatusSnapshot, fold_status_records
from offsets.kafka import admin, groups, offsets_writer, reading, standalone_worker
from offsets.kafka.connect_answers import ConnectRestError
from offsets.kafka.errors import TopicNotFound
from offsets.models import Cluster, OffsetEdit, OffsetEditChange


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

    def offsets_if_any(self, topic: str) -> dict[bytes, SourceOffsetRecord]:
        """The topic's live offsets by exact key bytes; none when it does not exist (yet: the
        runtime creates a connector's own topic when the connector first starts)."""
        try:
            return self.latest(topic).offsets
        except TopicNotFound:
            return {}

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
    own = reader.offsets_if_any(context.primary_topic) if context.own_topic else None
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


# --- An edit's rows beside what the cluster holds now -------------------------------------

# One touched partition: (label, before, after, current value read now).
Values = list[tuple[str, object, object, object]]


def as_bytes(value) -> bytes | None:
    """Return a stored binary field as bytes (the database may hand back a memoryview)."""
    return None if value is None else bytes(value)


def sink_offset(value: dict | None) -> int | None:
    """Return the offset of a stored sink value ({"kafka_offset": n}), or None."""
    return None if value is None else int(value["kafka_offset"])


def source_values(
    changes: Iterable[OffsetEditChange], view: Mapping[bytes, SourceOffsetRecord]
) -> Values:
    return [
        (
            change.key_text,
            as_bytes(change.before_bytes),
            as_bytes(change.after_bytes),
            view[key].value_bytes if (key := bytes(change.key_bytes)) in view else None,
        )
        for change in changes
    ]


def parsed_source_values(
    changes: Iterable[OffsetEditChange], view: Mapping[bytes, SourceOffsetRecord]
) -> Values:
    """Like `source_values`, comparing parsed offsets: the worker orders a value's fields its
    own way (a HashMap), so its bytes may differ from the staged ones while meaning the same."""

    def text(offset: dict | None) -> str | None:
        return None if offset is None else canonical(offset)

    return [
        (
            change.key_text,
            text(change.before),
            text(change.after),
            text(view[key].offset) if (key := bytes(change.key_bytes)) in view else None,
        )
        for change in changes
    ]


def sink_values(
    changes: Iterable[OffsetEditChange], committed: Mapping[tuple[str, int], int]
) -> Values:
    return [
        (
            f"{change.topic}-{change.kafka_partition}",
            sink_offset(change.before),
            sink_offset(change.after),
            committed.get((change.topic, change.kafka_partition)),
        )
        for change in changes
    ]


def settle_live(edit: OffsetEdit) -> edit_rules.Settled:
    """Read the edit's offsets now and decide whether its write landed.

    A partial sink delete that reached its two steps (``sink_keep`` stored) is judged on the
    whole group: its own partitions alone cannot tell whether the others came back.
    """
    reader = LiveReader(edit.cluster)
    changes = list(edit.changes.all())
    if edit.is_source:
        context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
        view = source_view(context=context, reader=reader)
        if edit.applied_via == OffsetEdit.AppliedVia.WORKER:
            return edit_rules.settle(parsed_source_values(changes, view))
        return edit_rules.settle(source_values(changes, view))
    group = reader.committed(edit.group_id)
    if edit.sink_keep is None:
        return edit_rules.settle(sink_values(changes, group))
    return settle_sink_group(edit, edit_rules.keep_from_json(edit.sink_keep), group)


def settle_sink_group(
    edit: OffsetEdit, keep: dict[tuple[str, int], int], group: dict[tuple[str, int], int]
) -> edit_rules.Settled:
    """Judge a partial sink delete on the whole group against what it must hold (``keep``)."""
    changes = list(edit.changes.all())
    return edit_rules.settle_sink_group(
        sink_values(changes, group),
        deleted=[(c.topic, c.kafka_partition) for c in changes if c.is_delete],
        keep=keep,
        group=group,
    )


def group_inactive_check(edit: OffsetEdit, group_id: str) -> CheckResult:
    """`group-inactive`: the sink's consumer group is Empty or Dead, read now."""
    group = groups.describe_group(
        edit.cluster.kafka_settings(), group_id, timeout=settings.KAFKA_READ_TIMEOUT
    )
    return edit_rules.check_group_inactive(
        group_id=group_id, state=group.state, member_count=group.member_count
    )


def fence(edit: OffsetEdit) -> None:
    """Resolve a transaction an earlier apply of the edit's connector left open.

    A transaction a dead process left open is aborted (or, if its commit had begun,
    completed) before the read, so the read shows the final outcome.
    """
    offsets_writer.fence(
        edit.cluster.kafka_settings(),
        offsets_writer.transactional_id(edit.cluster.name, edit.connector),
        timeout=settings.KAFKA_WRITE_TIMEOUT,
    )
