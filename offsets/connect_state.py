"""Read every connector of a cluster now from its config and status topics."""

import dataclasses
import logging
import threading
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from offsets import tuning
from offsets.domain.connectors import Connector, connector_from
from offsets.domain.masking import mask_text, prefix_between_tokens
from offsets.formats.config_records import ConfigFold
from offsets.formats.offset_records import SourceOffsetRecord, parse_offset_record
from offsets.formats.status_records import StatusFold
from offsets.kafka import reading, standalone_worker
from offsets.kafka.connect_answers import ConnectRestError
from offsets.models import Cluster

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectState:
    connectors: list[Connector]
    malformed_config_records: int
    malformed_status_records: int
    records_read: int = 0
    errors: list[str] = field(default_factory=list)
    # Reason (ConfigMalformedReason / StatusMalformedReason value) -> records skipped, so that
    # a refresh can report what the runtime would ignore rather than drop it silently.
    config_malformed: dict[str, int] = field(default_factory=dict)
    status_malformed: dict[str, int] = field(default_factory=dict)
    # reason -> one offending record, for the operator to find it ("key=... value=...").
    config_examples: dict[str, str] = field(default_factory=dict)
    status_examples: dict[str, str] = field(default_factory=dict)


def read_connect_state(*, cluster: Cluster) -> ConnectState:
    """Read the cluster's config and status topics now and summarise every connector.

    The topics are followed (`TopicsFollower`): this process folds each record once, and each
    read takes only the records written since the last one. Raises `KafkaUnavailable` or
    `TopicNotFound` when the cluster cannot be read. A standalone worker's connectors come from
    its REST API and its offsets file (`standalone_state`).
    """
    if cluster.is_standalone:
        return standalone_state(cluster, standalone_worker.read_offsets_file(cluster.offsets_file))
    return _follower(cluster).read()


class TopicsFollower:
    """A cluster's config and status topics, folded as they grow.

    A live loop reads them every second: reading both whole and folding, then masking, every
    connector again made a round's cost grow with the fleet, not with what changed. So the
    folds go on from where the last read stopped (as the runtime's own backing stores do), and
    a connector whose config and status are as before keeps the `Connector` built for it. A
    topic deleted and created again (its ID changed, or it moved back behind the last read)
    is read whole once more.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.settings = tuning.short_read_settings(cluster.kafka_settings())
        self.topics = [cluster.configs_topic, cluster.status_topic]
        self.lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        self.configs, self.statuses = ConfigFold(), StatusFold()
        self.positions: dict[tuple[str, int], int] = {}
        self.topic_ids: dict[str, str] = {}
        self.records_read = 0
        self.state: ConnectState | None = None  # the last read's
        self.built: dict[str, tuple[object, object, Connector]] = {}

    def identity(self) -> tuple:
        """What the folds hold depends on: where the topics are and which they are."""
        return (self.settings, self.topics, self.cluster.offsets_topic)

    def read(self) -> ConnectState:
        with self.lock:
            read = self._read_on()
            if read.moved_back or _ids_changed(self.topic_ids, read.topic_ids):
                self._start()
                read = self._read_on()
            configs_topic, status_topic = self.topics
            self.configs.add((r.key, r.value) for r in read.records if r.topic == configs_topic)
            # With each record's timestamp: when the worker wrote a state (a failure's time).
            self.statuses.add(
                (r.key, r.value, r.timestamp_ms) for r in read.records if r.topic == status_topic
            )
            self.positions.update(read.ends)
            self.topic_ids = read.topic_ids
            self.records_read += len(read.records)
            # Nothing new: the state is the last one (a fleet's round mostly reads nothing
            # new, and summarising every connector again cost what exists, not what changed).
            if read.records or self.state is None:
                self.state = self._state()
            return self.state

    def _read_on(self) -> reading.ReadOn:
        return reading.read_on(
            self.settings, self.topics, self.positions, timeout=settings.KAFKA_READ_TIMEOUT
        )

    def _state(self) -> ConnectState:
        configs, statuses = self.configs.snapshot(), self.statuses.snapshot()
        built = {}
        for name in sorted(configs.connectors):
            config, status = configs.connectors[name], statuses.connectors.get(name)
            before = self.built.get(name)
            if before is None or before[0] != config or before[1] != status:
                worker_topic = self.cluster.offsets_topic
                connector = connector_from(name, config, status, worker_offsets_topic=worker_topic)
                before = (config, status, connector)
            built[name] = before
        self.built = built
        return ConnectState(
            connectors=[connector for _, _, connector in built.values()],
            malformed_config_records=len(configs.malformed),
            malformed_status_records=len(statuses.malformed),
            records_read=self.records_read,
            config_malformed=dict(Counter(str(record.reason) for record in configs.malformed)),
            status_malformed=dict(Counter(str(record.reason) for record in statuses.malformed)),
            config_examples=_examples(configs.malformed),
            status_examples=_examples(statuses.malformed),
        )


def _ids_changed(known: dict[str, str], now: dict[str, str]) -> bool:
    return any(known.get(topic) not in (None, topic_id) for topic, topic_id in now.items())


_FOLLOWERS: dict[int, TopicsFollower] = {}
_FOLLOWERS_LOCK = threading.Lock()


def _follower(cluster: Cluster) -> TopicsFollower:
    """The process's follower of the cluster's topics; a new one when the cluster's settings
    or topic names changed (another broker, other credentials: start again)."""
    fresh = TopicsFollower(cluster)
    if cluster.pk is None:  # not stored: nothing to follow it by
        return fresh
    with _FOLLOWERS_LOCK:
        follower = _FOLLOWERS.get(cluster.pk)
        if follower is None or follower.identity() != fresh.identity():
            _FOLLOWERS[cluster.pk] = follower = fresh
        return follower


def forget_followers() -> None:
    """Drop every follower: the next read of each cluster reads its topics whole (tests)."""
    with _FOLLOWERS_LOCK:
        _FOLLOWERS.clear()


def standalone_state(cluster: Cluster, offsets: standalone_worker.OffsetsFile) -> ConnectState:
    """A standalone worker's connectors: those its REST API lists, and those its offsets file
    names.

    A connector only the file names is deleted when the worker answered without it; when no
    worker answers (or none is configured) its state is unknown, not deleted.
    """
    errors: list[str] = []
    snapshots = None
    if cluster.connect_urls:
        try:
            snapshots = standalone_worker.worker_snapshots(cluster)
        except ConnectRestError as exc:
            errors.append(mask_text(str(exc)))
            logger.warning("The standalone worker of %s did not answer: %s", cluster.name, exc)
    configs = snapshots.configs.connectors if snapshots else {}
    statuses = snapshots.statuses.connectors if snapshots else {}
    names = set(configs) | file_connectors(offsets.entries)
    connectors = []
    for name in sorted(names):
        connector = connector_from(
            name, configs.get(name), statuses.get(name), worker_offsets_topic=cluster.offsets_topic
        )
        if name not in configs:
            # No config topic keeps a target state for it: "" (unknown), not None (compacted).
            connector = dataclasses.replace(
                connector, target_state="", deleted=snapshots is not None
            )
        connectors.append(connector)
    return ConnectState(
        connectors=connectors, malformed_config_records=0, malformed_status_records=0, errors=errors
    )


def file_connectors(entries: dict[bytes, bytes | None]) -> set[str]:
    """The connectors an offsets file's well-formed keys name with an offset (a reset one is
    forgotten, as a connector whose offsets topic keys are all tombstones is)."""
    names = set()
    for key, value in entries.items():
        parsed = parse_offset_record(key, value)
        if isinstance(parsed, SourceOffsetRecord) and value is not None:
            names.add(parsed.connector)
    return names


EXAMPLE_CHARS = 200


def _examples(malformed) -> dict[str, str]:
    """The first offending record per reason, truncated and masked.

    A value may be megabytes; the prefix shown ends between tokens, so that masking sees every
    secret whole.
    """
    examples: dict[str, str] = {}
    for record in malformed:
        if str(record.reason) in examples:
            continue
        # repr escapes control characters (PostgreSQL text cannot hold NUL).
        key = (
            "null"
            if record.key is None
            else repr(prefix_between_tokens(record.key, EXAMPLE_CHARS))[1:-1]
        )
        value = (
            "null"
            if record.value_bytes is None
            else repr(
                prefix_between_tokens(record.value_bytes[: EXAMPLE_CHARS + 1], EXAMPLE_CHARS)
            )[2:-1]
        )
        examples[str(record.reason)] = mask_text(f"key={key} value={value}")
    return examples
