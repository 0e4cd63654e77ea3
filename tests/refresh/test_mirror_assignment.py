"""MirrorMaker 2's upstream partitions never copied yet: which ones a mirror copies, where its
consumer starts on them, and how their lag is rated."""

import pytest

from offsets.domain.connectors import connector_from
from offsets.domain.history import LagPoint, LagStatus, partition_lag_status
from offsets.domain.mirrors import (
    assigned_partitions,
    mirror_offset_reset,
    replicated_topics,
)
from offsets.formats.config_records import ConnectorConfig
from offsets.models import ConnectorSnapshot
from offsets.queries.snapshots import NO_COMMIT_YET, NOT_COPIED_YET, status_reasons
from offsets.refresh.mirrors import responsible_partitions
from offsets.refresh.sinks import consumer_position

MIRROR = {
    "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "source.cluster.alias": "up",
    "target.cluster.alias": "here",
    "topics": "orders.*, payments",
}


def mirror(task_configs: dict, properties: dict | None = None, name: str = "m"):
    config = ConnectorConfig(
        name=name,
        properties=properties or MIRROR,
        target_state="STARTED",
        task_count=len(task_configs),
        task_configs=task_configs,
        deleted=False,
    )
    return connector_from(name, config, None, worker_offsets_topic="connect-offsets")


def test_the_tasks_assigned_partitions_are_read_from_their_configs():
    tasks = {
        0: {**MIRROR, "task.assigned.partitions": "orders-0,orders.eu-2, payments-1"},
        1: {**MIRROR, "task.assigned.partitions": "my-topic-10"},
    }
    assert assigned_partitions(tasks) == {
        ("orders", 0),
        ("orders.eu", 2),
        ("payments", 1),
        # The partition follows the LAST dash: topic names may hold dashes.
        ("my-topic", 10),
    }


@pytest.mark.parametrize("value", [None, "", "  ", "no-dash-", "orders", "-3", "t-x", "t-٣"])
def test_an_entry_without_a_partition_number_assigns_nothing(value):
    assert assigned_partitions({0: {"task.assigned.partitions": value}}) == frozenset()


def test_a_mirror_without_task_configs_has_no_assignment_to_read():
    assert assigned_partitions({}) is None
    assert mirror({}).mirror_partitions is None


def test_the_connector_keeps_its_tasks_assignment_only_for_a_mirror_source():
    tasks = {0: {"task.assigned.partitions": "orders-0"}}
    assert mirror(tasks).mirror_partitions == {("orders", 0)}
    sink = {"connector.class": "io.example.FileSink", "topics": "t"}
    assert mirror(tasks, sink).mirror_partitions is None


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, "earliest"),
        ({"consumer.auto.offset.reset": "LATEST "}, "latest"),
        ({"source.consumer.auto.offset.reset": "latest"}, "latest"),
        # source.consumer. is applied after consumer.
        (
            {
                "consumer.auto.offset.reset": "latest",
                "source.consumer.auto.offset.reset": "earliest",
            },
            "earliest",
        ),
        # Only client settings survive the source.cluster. prefix.
        ({"source.cluster.auto.offset.reset": "latest"}, "earliest"),
        ({"consumer.override.auto.offset.reset": "latest"}, "earliest"),
    ],
)
def test_where_a_mirror_starts_without_an_offset(properties, expected):
    assert mirror_offset_reset(properties) == expected


UPSTREAM = [
    "orders",
    "orders.eu",
    "payments",
    "payments2",
    "clicks",
    "heartbeats",
    "other.heartbeats",
    "__consumer_offsets",
    ".hidden",
    "mm2-offset-syncs.here.internal",
    "up.checkpoints.internal",
    "here.orders",  # copied from this cluster: a cycle
    "x.here.orders",  # a cycle further up
    "orders.replica",
]


def test_without_task_configs_the_topic_filter_picks_the_upstream_topics():
    assert replicated_topics(MIRROR, UPSTREAM) == {
        "orders",
        "orders.eu",
        "payments",
        # Heartbeats are copied whatever the filter, unless turned off.
        "heartbeats",
        "other.heartbeats",
    }
    quiet = {**MIRROR, "heartbeats.replication.enabled": "false"}
    assert replicated_topics(quiet, UPSTREAM) == {"orders", "orders.eu", "payments"}


def test_the_default_filter_copies_every_topic_but_internal_ones_replicas_and_cycles():
    defaults = {k: v for k, v in MIRROR.items() if k != "topics"}
    assert replicated_topics(defaults, UPSTREAM) == {
        "orders",
        "orders.eu",
        "payments",
        "payments2",
        "clicks",
        "heartbeats",
        "other.heartbeats",
    }


def test_excludes_win_and_a_blank_filter_copies_nothing_but_heartbeats():
    excluded = {**MIRROR, "topics.exclude": "orders\\..*"}
    assert "orders.eu" not in replicated_topics(excluded, UPSTREAM)
    assert "orders" in replicated_topics(excluded, UPSTREAM)
    blank = {**MIRROR, "topics": "", "heartbeats.replication.enabled": "false"}
    assert replicated_topics(blank, UPSTREAM) == set()


def test_a_custom_separator_names_remote_and_internal_topics():
    custom = {**MIRROR, "topics": ".*", "replication.policy.separator": "_"}
    picked = replicated_topics(custom, ["here_orders", "orders", "mm2-offset-syncs_here_internal"])
    assert picked == {"orders"}


@pytest.mark.parametrize(
    "properties",
    [
        {"topic.filter.class": "io.example.MyTopicFilter"},
        {"replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"},
        {"topics": "(?<name>orders)"},  # Java's named group, not Python's
    ],
)
def test_a_filter_the_dashboard_cannot_follow_picks_nothing_it_would_guess(properties):
    assert replicated_topics({**MIRROR, **properties}, UPSTREAM) is None


def test_a_mirror_copies_what_its_tasks_are_assigned_and_what_it_has_offsets_for():
    tasks = {0: {"task.assigned.partitions": "orders-0,orders-1"}}
    positions = {"m": {("gone", 0): 5, ("orders", 0): 3}}
    responsible = responsible_partitions([mirror(tasks)], positions, None)
    assert responsible == {"m": {("orders", 0), ("orders", 1), ("gone", 0)}}


def test_a_mirror_without_task_configs_copies_what_its_filter_picks_upstream():
    counts = {"orders": 2, "clicks": 1, "__consumer_offsets": 50}
    responsible = responsible_partitions([mirror({})], {}, counts)
    assert responsible == {"m": {("orders", 0), ("orders", 1)}}
    # A filter it cannot follow: only the partitions it has offsets for.
    custom = mirror({}, {**MIRROR, "topic.filter.class": "io.example.F"}, name="c")
    assert responsible_partitions([custom], {"c": {("x", 0): 1}}, counts) == {"c": {("x", 0)}}


@pytest.mark.parametrize(
    ("reset", "position", "lag"),
    [("earliest", 4, 6), ("latest", 10, 0), ("by_duration:PT1H", 4, 6), ("none", 4, 6)],
)
def test_a_partition_never_copied_lags_from_where_the_consumer_starts(reset, position, lag):
    # Log start 4 (older records deleted upstream), log end 10.
    at = consumer_position(None, 4, 10, reset=reset)
    assert (at, 10 - at) == (position, lag)


def test_a_paused_mirror_with_records_waiting_is_stop():
    assert partition_lag_status([LagPoint(4, 6)], consuming=False) == LagStatus.STOP


def test_a_mirror_with_partitions_never_copied_says_not_copied_yet():
    snapshot = ConnectorSnapshot(type="source", uncommitted_partitions=2)
    assert status_reasons(snapshot) == [NOT_COPIED_YET] == ["not copied yet"]
    assert status_reasons(ConnectorSnapshot(type="sink", uncommitted_partitions=2)) == [
        NO_COMMIT_YET
    ]
    assert status_reasons(ConnectorSnapshot(type="source", uncommitted_partitions=0)) == []
