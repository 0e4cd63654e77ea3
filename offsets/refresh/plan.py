"""Which records this refresh reads: the offsets topics' snapshot, planned beside the configs."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

from offsets import connect_state, tuning
from offsets.domain.connectors import Connector
from offsets.kafka import admin, planner
from offsets.kafka.errors import TopicNotFound
from offsets.models import Cluster, ReadPosition
from offsets.refresh.results import SourcePlan


def offsets_topics(cluster: Cluster, connectors: list[Connector]) -> list[str]:
    topics = [cluster.offsets_topic]
    for connector in connectors:
        if connector.own_offsets_topic and connector.own_offsets_topic not in topics:
            topics.append(connector.own_offsets_topic)
    return topics


def read_state_and_plan[T](
    cluster: Cluster, *, full: bool, prepare: Callable[[connect_state.ConnectState], T]
) -> tuple[connect_state.ConnectState, SourcePlan, T]:
    """Read the connectors' state and plan the offsets topics snapshot, overlapping the two;
    also return what `prepare(state)` returns, run while the planning goes on.

    Which offsets topics to read depends on the connectors' configs (their own topics,
    KIP-618), but waiting for the configs before planning costs a round of broker requests
    every refresh. So the topics the previous refresh read are planned while the configs are
    read, and only a topic new since then is planned afterwards. Planning a topic a moment
    before reading the configs is as good a snapshot as a moment after.
    """
    kafka = cluster.kafka_settings()
    timeout = settings.KAFKA_READ_TIMEOUT
    positions: dict[str, dict[int, int]] = {cluster.offsets_topic: {}}
    # Database reads stay on this thread (a test's transaction is not visible to another).
    read_from, stored_ids = read_positions(cluster)
    for (topic, partition), next_offset in read_from.items():
        positions.setdefault(topic, {})[partition] = next_offset
    starts = {topic: None if full else known for topic, known in positions.items()}
    with ThreadPoolExecutor(max_workers=1) as pool:
        planning = pool.submit(identify_and_plan, kafka, starts, stored_ids, timeout=timeout)
        state = connect_state.read_connect_state(cluster=cluster)
        prepared = prepare(state)
        snapshot, ids = planning.result()
    plans = snapshot.plans
    if cluster.offsets_topic not in plans:
        raise TopicNotFound(
            f"The offsets topic {cluster.offsets_topic!r} does not exist on "
            f"{cluster.bootstrap_servers}"
        )
    wanted = offsets_topics(cluster, state.connectors)
    new = [topic for topic in wanted if topic not in starts]
    if new:
        plans |= planner.plan_snapshot(kafka, dict.fromkeys(new), timeout=timeout).plans
        ids |= admin.ids_of(admin.describe_topics(kafka, new, timeout=timeout))
    # A topic of the previous refresh that no connector names any more is not read; topics
    # that do not exist (an own topic not created yet) are left out by plan_reads.
    plans = {topic: plans[topic] for topic in wanted if topic in plans}
    plan = SourcePlan(
        plans=plans,
        read_from=read_from,
        topic_ids={topic: ids[topic] for topic in plans if topic in ids},
        recreated={} if full else recreated_topics(read_from, stored_ids, plans, ids),
        kept={topic: records for topic, records in snapshot.records.items() if topic in plans},
    )
    return state, plan, prepared


def identify_and_plan(
    kafka: dict,
    starts: dict[str, dict[int, int] | None],
    stored_ids: dict[str, str],
    *,
    timeout: float,
) -> tuple[planner.Snapshot, dict[str, str]]:
    """Plan the snapshot of the topics read before; return it and the topic IDs.

    A topic that still has the ID it was read under holds the previous positions, so the
    planner reads on from them to find the ends (`planner.plan_snapshot`, `read_on`) instead
    of asking for the ends first. Asking for the IDs first costs one DescribeTopics request
    (~2-10 ms), which tells the planner the partition counts too. On its way the planner keeps
    up to tuning.PLANNER_KEEPS_RECORDS of the records it reads on through, which Spark then folds
    without fetching them again.
    """
    described = admin.describe_topics(kafka, list(starts), timeout=timeout)
    ids = admin.ids_of(described)
    same = [
        topic
        for topic, known in starts.items()
        if known and stored_ids.get(topic) and ids.get(topic) == stored_ids[topic]
    ]
    snapshot = planner.plan_snapshot(
        kafka,
        starts,
        read_on=same,
        keep_records=tuning.PLANNER_KEEPS_RECORDS,
        partition_counts={topic: facts.partitions for topic, facts in described.items()},
        timeout=timeout,
    )
    return snapshot, ids


def recreated_topics(
    read_from: dict[tuple[str, int], int],
    stored_ids: dict[str, str],
    plans: dict[str, dict[int, tuple[int, int]]],
    ids: dict[str, str],
) -> dict[str, str]:
    """Which topics read before were deleted and created again since: {topic: how it shows}.

    The records read from such a topic are gone, so an incremental refresh would keep their
    results and read on from a position that means nothing in the new topic (the demo's
    broker, memory only, is new at every `make demo`: the second one read no records at
    all). A different topic ID tells (KIP-516); without IDs, a partition that now ends before
    where the last refresh stopped, or a partition that is gone, does too (a topic's end
    never moves back, and its partitions are never fewer).
    """
    recreated: dict[str, str] = {}
    for topic, plan in plans.items():
        before = {p: offset for (t, p), offset in read_from.items() if t == topic}
        if not before:
            continue
        if stored_ids.get(topic) and ids.get(topic) and stored_ids[topic] != ids[topic]:
            recreated[topic] = f"its topic ID changed from {stored_ids[topic]} to {ids[topic]}"
        elif gone := sorted(set(before) - set(plan)):
            recreated[topic] = f"it has {len(plan)} partitions, and partition {gone[0]} was read"
        elif behind := sorted(p for p, offset in before.items() if plan[p][1] < offset):
            p = behind[0]
            recreated[topic] = (
                f"partition {p} ends at offset {plan[p][1]:,}, before offset {before[p]:,} "
                "where the last refresh stopped"
            )
    return recreated


def has_read_before(cluster: Cluster) -> bool:
    """Whether a refresh of the cluster has stored read positions, so that an incremental
    refresh reads on from them; without any it reads the topics from their beginning."""
    return ReadPosition.objects.filter(cluster=cluster).exists()


def read_positions(cluster: Cluster) -> tuple[dict[tuple[str, int], int], dict[str, str]]:
    """The cluster's read positions {(topic, partition): next offset} and the topic IDs
    they were read under {topic: ID} (topics read without an ID left out)."""
    positions: dict[tuple[str, int], int] = {}
    ids: dict[str, str] = {}
    for topic, partition, next_offset, topic_id in ReadPosition.objects.filter(
        cluster=cluster
    ).values_list("topic", "partition", "next_offset", "topic_id"):
        positions[(topic, partition)] = next_offset
        if topic_id:
            ids[topic] = topic_id
    return positions, ids
