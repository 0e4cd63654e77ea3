"""What a move reads: the connector on its cluster, the target's worker and topics.

Staging and the apply's lock check (`kinds.move`) read the same things, so a target that
became unfit (the name taken there, the plugin removed, the worker downgraded) or offsets that
moved on the source are caught again just before anything is written.
"""

from dataclasses import dataclass, replace

from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector, sink_group_id, source_offsets_topics
from offsets.domain.edits import Observed
from offsets.edits.errors import EditInputError, EditStateConflict
from offsets.edits.kinds.move.rules import TargetFacts, target_problems
from offsets.edits.live import LiveReader, read_connector, source_view
from offsets.formats.offset_records import SourceOffsetRecord
from offsets.kafka.connect_rest import ConnectRest
from offsets.models import Cluster, OffsetEdit


@dataclass(frozen=True)
class SourceSide:
    """The connector on the cluster it leaves: its context, config and offsets, read live."""

    context: Connector
    config: dict[str, str | None]
    # Source: the runtime's view by exact key bytes (no tombstones). Sink: the group's offsets.
    records: dict[bytes, SourceOffsetRecord]
    committed: dict[tuple[str, int], int]


def read_source_side(*, cluster: Cluster, connector: str) -> SourceSide:
    """Read the connector's config and offsets from its cluster's topics and group.

    The config comes from the config topic, as the workers read it: its values are the real
    ones (config-provider references unresolved), it needs no worker URL on the source, and
    one reader gives the config and the offsets of the same moment.
    """
    reader = LiveReader(cluster)
    context = read_connector(cluster=cluster, connector=connector, reader=reader)
    stored = reader.configs().connectors.get(connector)
    if context.deleted or stored is None or not stored.properties:
        raise EditStateConflict(
            f"{connector} is deleted on {cluster.name}: there is no config to move, only "
            "offsets it left behind."
        )
    if context.is_source:
        view = source_view(context=context, reader=reader)
        records = {key: record for key, record in view.items() if not record.is_tombstone}
        return SourceSide(context, dict(stored.properties), records, {})
    return SourceSide(context, dict(stored.properties), {}, reader.committed(context.group_id))


def source_config(*, cluster: Cluster, connector: str) -> dict[str, str | None]:
    """The connector's config from its cluster's config topic (for the move form's inputs)."""
    reader = LiveReader(cluster)
    stored = reader.configs().connectors.get(connector)
    if stored is None:
        # Raises ConnectorNotFound unless the offsets topic still holds it.
        read_connector(cluster=cluster, connector=connector, reader=reader)
        raise EditStateConflict(
            f"{connector!r} has offsets but no config in {cluster.configs_topic}: nothing to move."
        )
    if stored.deleted or not stored.properties:
        raise EditStateConflict(f"{connector} is deleted on {cluster.name}: no config to move.")
    return dict(stored.properties)


def target_source_offsets(
    *, target: Cluster, connector: str, config: dict
) -> dict[str, SourceOffsetRecord]:
    """The target's offsets of a source connector of that name, by partition identity."""
    reader = LiveReader(target)
    topics = source_offsets_topics(config, target.offsets_topic)
    own = reader.offsets_if_any(topics.primary) if topics.own_topic else None
    view = edit_rules.runtime_view(connector, reader.offsets_if_any(topics.worker), own)
    return {r.partition_identity: r for r in view.values() if not r.is_tombstone}


def target_group_offsets(
    *, target: Cluster, connector: str, config: dict
) -> tuple[str, dict[tuple[str, int], int]]:
    """The sink's group on the target (same rule as the worker) and its committed offsets."""
    group_id = sink_group_id(connector, config)
    return group_id, LiveReader(target).committed(group_id)


def target_facts(*, source: Cluster, target: Cluster, connector: str, config: dict) -> TargetFacts:
    """Ask the target's worker what the move needs: version, the name, the plugin classes."""
    facts = TargetFacts(
        source_cluster=source.name,
        target_cluster=target.name,
        connector=connector,
        connector_class=(config.get("connector.class") or "").strip(),
        has_worker_url=bool((target.connect_url or "").strip()),
    )
    if facts.source_cluster == facts.target_cluster or not facts.has_worker_url:
        return facts
    rest = ConnectRest.for_cluster(target)
    info = rest.worker_info()
    return replace(
        facts,
        worker_version=info.version,
        create_stopped=info.capabilities.create_stopped,
        name_exists=rest.exists(connector),
        plugin_classes=frozenset(rest.plugin_classes()),
    )


def refuse_unfit_target(facts: TargetFacts) -> None:
    """Raise EditStateConflict (the name is taken) or EditInputError when the target is unfit."""
    problems = target_problems(facts)
    if not problems:
        return
    message = " ".join(problems)
    if facts.name_exists:
        raise EditStateConflict(message)
    raise EditInputError(message, field="target")


def unchanged_observations(edit: OffsetEdit, side: SourceSide) -> list[Observed]:
    """Each partition's offset on the source at staging (the move's "after") and now.

    A partition the source has now but had not at staging counts too: it would be left behind.
    """
    changes = list(edit.changes.all())
    if side.context.is_source:
        staged = {bytes(c.key_bytes): c for c in changes}
        observed = [
            Observed(
                change.key_text,
                bytes(change.after_bytes),
                side.records[key].value_bytes if key in side.records else None,
            )
            for key, change in staged.items()
        ]
        observed += [
            Observed(key.decode("utf-8", "backslashreplace"), None, record.value_bytes)
            for key, record in side.records.items()
            if key not in staged
        ]
        return observed
    staged_sink = {(c.topic, c.kafka_partition): c for c in changes}
    observed = [
        Observed(f"{tp[0]}-{tp[1]}", change.after["kafka_offset"], side.committed.get(tp))
        for tp, change in staged_sink.items()
    ]
    observed += [
        Observed(f"{tp[0]}-{tp[1]}", None, offset)
        for tp, offset in side.committed.items()
        if tp not in staged_sink
    ]
    return observed
