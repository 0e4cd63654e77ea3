"""MirrorMaker 2's lag: each MirrorSourceConnector's upstream partitions, rated like a sink's.

A mirror's offsets say where it resumes on its upstream cluster's partitions; its lag is that
partition's log end less the next offset to copy, in records, and in time from the upstream
records' timestamps. The upstream cluster is the registered one an admin chose for the
connector's `source.cluster.alias` (MirrorUpstream): the offsets name it by alias only.
"""

import json
import logging
from collections import defaultdict
from datetime import datetime

from offsets.domain.connectors import Connector
from offsets.domain.masking import mask_text
from offsets.domain.mirrors import (
    is_mirror_source,
    mirror_offset_reset,
    mirror_position,
    mirror_source_alias,
    replicated_topics,
)
from offsets.kafka import admin
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster, MirrorUpstream
from offsets.refresh import sinks
from offsets.refresh.results import KnownTimeLags, MirrorUpstreamFacts, SinkResults, ms_to_datetime

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Where each mirror resumes: {connector: {(topic, partition): next offset to copy}}.
Positions = dict[str, dict[TopicPartition, int]]


def mirror_sources(connectors: list[Connector]) -> list[Connector]:
    return [
        c for c in connectors if c.type == "source" and not c.deleted and is_mirror_source(c.config)
    ]


def upstream_clusters(cluster: Cluster) -> dict[str, Cluster]:
    """The registered upstream cluster of each source alias of `cluster`."""
    return {
        row.source_alias: row.upstream
        for row in MirrorUpstream.objects.filter(cluster=cluster).select_related("upstream")
    }


def mirror_positions(latest: list[dict], aliases: dict[str, str]) -> Positions:
    """Each mirror's next offset to copy per upstream partition, from the merged offsets
    (`latest`: every key, as `SourceResults.latest` holds them).

    Only the values the runtime uses (effective, not tombstoned), and only those of the
    connector's current alias: a mirror whose alias changed never reads the old ones again.
    """
    positions: Positions = defaultdict(dict)
    for row in latest:
        alias = aliases.get(row["connector"])
        if alias is None or not row["effective"] or row["offset_json"] is None:
            continue
        try:
            position = mirror_position(
                json.loads(row["partition_json"]), json.loads(row["offset_json"])
            )
        except ValueError:
            continue
        if position is not None and position.alias == alias:
            topic_partition = (position.topic, position.partition)
            positions[row["connector"]][topic_partition] = position.next_offset
    return positions


def sample_mirrors(
    cluster: Cluster,
    connectors: list[Connector],
    latest: list[dict],
    *,
    now_ms: int,
    upstreams: dict[str, Cluster],
    recent: sinks.RecentSamples,
    known: KnownTimeLags,
    results: SinkResults,
) -> None:
    """Add every mirror's partition lag and samples to `results`, with its upstream's facts.

    A mirror without a registered upstream gets no lag (the page says how to add one); an
    upstream that does not answer leaves its mirrors without lag and says why, and the rest
    of the refresh goes on.
    """
    mirrors = mirror_sources(connectors)
    aliases = {c.name: mirror_source_alias(c.config) for c in mirrors}
    positions = mirror_positions(latest, aliases)
    by_upstream: dict[int, list[Connector]] = defaultdict(list)
    for connector in mirrors:
        upstream = upstreams.get(aliases[connector.name])
        results.mirrors[connector.name] = MirrorUpstreamFacts(
            alias=aliases[connector.name], cluster=upstream.name if upstream else ""
        )
        if upstream is not None:
            by_upstream[upstream.pk].append(connector)
    for group in by_upstream.values():
        upstream = upstreams[aliases[group[0].name]]
        try:
            _sample_upstream(
                cluster,
                upstream,
                group,
                positions,
                sampled_at=ms_to_datetime(now_ms),
                recent=recent,
                known=known,
                results=results,
            )
        except (KafkaUnavailable, TopicNotFound) as exc:
            logger.warning("Mirrors of %s: upstream %s: %s", cluster.name, upstream.name, exc)
            for connector in group:
                results.mirrors[connector.name].error = mask_text(str(exc))


def responsible_partitions(
    mirrors: list[Connector],
    positions: Positions,
    upstream_counts: dict[str, int] | None,
) -> dict[str, set[TopicPartition]]:
    """Each mirror's upstream partitions: those it has an offset for, and those it copies but
    never copied from (which have none).

    The second are its task configs' `task.assigned.partitions`; a mirror without task configs
    (created PAUSED or STOPPED) copies what its topic filter picks among the upstream's topics
    (`upstream_counts`: every topic's partition count, listed only for such a mirror).
    """
    responsible: dict[str, set[TopicPartition]] = {}
    for connector in mirrors:
        partitions = set(positions.get(connector.name, {}))
        if connector.mirror_partitions is not None:
            partitions |= connector.mirror_partitions
        elif upstream_counts is not None:
            topics = replicated_topics(connector.config, upstream_counts) or set()
            partitions |= {(topic, p) for topic in topics for p in range(upstream_counts[topic])}
        responsible[connector.name] = partitions
    return responsible


def _sample_upstream(
    cluster: Cluster,
    upstream: Cluster,
    mirrors: list[Connector],
    positions: Positions,
    *,
    sampled_at: datetime,
    recent: sinks.RecentSamples,
    known: KnownTimeLags,
    results: SinkResults,
) -> None:
    """Measure the mirrors of one upstream cluster in a few batched requests to it."""
    kafka = upstream.kafka_settings()
    listed = (
        admin.topic_partition_counts(kafka)
        if any(c.mirror_partitions is None for c in mirrors)
        else None
    )
    responsible = responsible_partitions(mirrors, positions, listed)
    wanted = {tp for partitions in responsible.values() for tp in partitions}
    if not wanted:
        return
    topics = sorted({topic for topic, _ in wanted})
    counts = listed if listed is not None else admin.topic_partition_counts(kafka, topics)
    # A partition whose topic is gone upstream is never copied again: it has no lag.
    existing = sorted(tp for tp in wanted if tp[1] < counts.get(tp[0], 0))
    marks = admin.watermarks(kafka, existing) if existing else {}
    reading = _reading_positions(mirrors, responsible, positions, marks)
    lagging = {slot: at for slot, at in reading.items() if at < marks[slot[1]][1]}
    lags_ms = sinks.time_lags(kafka, lagging, marks, known)
    for connector in mirrors:
        for tp in sorted(responsible[connector.name]):
            if tp not in marks:
                continue
            sinks.add_partition(
                results,
                cluster,
                connector,
                tp,
                group="",
                upstream=upstream.name,
                committed=positions.get(connector.name, {}).get(tp),
                position=reading[(connector.name, tp)],
                marks=marks[tp],
                lag_ms=lags_ms.get((connector.name, tp)),
                recent=recent.get((connector.name, *tp), []),
                sampled_at=sampled_at,
            )


def _reading_positions(
    mirrors: list[Connector],
    responsible: dict[str, set[TopicPartition]],
    positions: Positions,
    marks: dict[TopicPartition, admin.Watermarks],
) -> dict[sinks.Slot, int]:
    """Where each task's consumer reads next: the next offset to copy, or where its
    `auto.offset.reset` puts it (earliest by default) on a partition it has no offset for,
    or whose offset fell below the log start (records deleted upstream before being copied).
    """
    reading: dict[sinks.Slot, int] = {}
    for connector in mirrors:
        reset = mirror_offset_reset(connector.config)
        for tp in responsible[connector.name]:
            if tp in marks:
                next_offset = positions.get(connector.name, {}).get(tp)
                reading[(connector.name, tp)] = sinks.consumer_position(
                    next_offset, *marks[tp], reset=reset
                )
    return reading
