"""Export connectors' offsets as KIP-875 (one connector) or KIP-199 (several) JSON.

One connector also exports as the ConfigMap Strimzi's ``KafkaConnector`` reads on
``alterOffsets`` (``offsets.formats.strimzi``).

Source offsets are read live from the offsets topics the way the runtime reads them; sink
offsets are the consumer groups' committed offsets. ``from_beginning`` lists a source
connector's whole history instead: every record of its primary offsets topic in topic order,
tombstones as ``"offset": null``. Kafka keeps no history of a group's commits that a client
can read, so a sink's history is its current offsets.
"""

from collections.abc import Sequence

from offsets.domain.rights import Action
from offsets.edits.live import (
    Connector,
    LiveReader,
    read_connector,
    source_view,
)
from offsets.formats import strimzi
from offsets.formats.offset_records import parse_offset_record, partition_identity
from offsets.formats.offsets_json import PartitionOffset, to_kip199, to_kip875
from offsets.kafka.errors import TopicNotFound
from offsets.models import Cluster
from offsets.rights import gate
from offsets.rights.grants import sees_connector


def requested_names(listed: str, exact: Sequence[str] = ()) -> list[str]:
    """The connectors an export names: each `connector` parameter as given (any name Connect
    can hold, commas and spaces included), then the trimmed names of the `a,b` list."""
    names = [*exact, *(name.strip() for name in listed.split(",") if name.strip())]
    return list(dict.fromkeys(names))


def export_connector(
    *, user, cluster: Cluster, connector: str, from_beginning: bool = False
) -> dict:
    """Return one connector's offsets as a KIP-875 document (raises ConnectorNotFound, or the
    gate's NotFound for a connector `user` does not see)."""
    gate.admit(user, Action.VIEW, cluster, connector)
    reader = LiveReader(cluster)
    context = read_connector(cluster=cluster, connector=connector, reader=reader)
    return to_kip875(_entries(context, reader, from_beginning))


def export_configmap(
    *, user, cluster: Cluster, connector: str, name: str = "", namespace: str = ""
) -> dict:
    """Return one connector's latest offsets as a Strimzi offsets ConfigMap.

    Raises ConnectorNotFound, or ValueError for a bad name or namespace or offsets too large
    for a ConfigMap.
    """
    document = export_connector(user=user, cluster=cluster, connector=connector)
    return strimzi.to_configmap(document, connector=connector, name=name, namespace=namespace)


def export_connectors(
    *, user, cluster: Cluster, connectors: list[str] | None = None, from_beginning: bool = False
) -> dict:
    """Return several connectors' offsets as KIP-199: those named (refused whole when `user`
    does not see one of them), or every one `user` sees when ``connectors`` is None."""
    if connectors is not None:
        gate.admit_all(user, Action.VIEW, cluster, connectors)
    else:
        gate.admit(user, Action.VIEW, cluster, None)
    reader = LiveReader(cluster)
    names = connectors if connectors is not None else connector_names(reader=reader)
    names = [name for name in names if sees_connector(user, cluster, name)]
    contexts = [read_connector(cluster=cluster, connector=name, reader=reader) for name in names]
    return to_kip199(
        {context.name: _entries(context, reader, from_beginning) for context in contexts}
    )


def connector_names(*, reader: LiveReader) -> list[str]:
    """Every connector in the config topic, plus those only the offsets topic remembers."""
    names = set(reader.configs().connectors)
    names |= {r.connector for r in reader.latest(reader.cluster.offsets_topic).offsets.values()}
    return sorted(names)


def _entries(context: Connector, reader: LiveReader, from_beginning: bool) -> list[PartitionOffset]:
    if not context.is_source:
        committed = reader.committed(context.group_id)
        return [
            PartitionOffset(
                {"kafka_topic": topic, "kafka_partition": partition}, {"kafka_offset": offset}
            )
            for (topic, partition), offset in sorted(committed.items())
        ]
    if from_beginning:
        try:
            records = reader.records(context.primary_topic)
        except TopicNotFound:
            # An own topic the runtime has not created yet: the history is the worker's.
            records = reader.records(context.worker_topic)
        history = []
        for record in records:
            parsed = parse_offset_record(record.key, record.value)
            if getattr(parsed, "connector", None) == context.name:
                history.append(PartitionOffset(parsed.partition, parsed.offset))
        return history
    # One entry per logical partition, as GET /connectors/{name}/offsets gives: when a key
    # drifted between byte forms, the form written last is the one shown.
    latest: dict[str, PartitionOffset] = {}
    for record in source_view(context=context, reader=reader).values():
        latest[partition_identity(record.partition)] = PartitionOffset(
            record.partition, record.offset
        )
    return [latest[identity] for identity in sorted(latest)]
