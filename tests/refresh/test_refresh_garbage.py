"""Garbage in Connect's topics: the refresh counts it by reason and keeps every good record.

A small demo cluster is refreshed once, then garbage is written next to its records into the
offsets topics, the config topic and the status topic: non-JSON, wrong shapes, invalid UTF-8,
null keys, empty bytes, NaN/Infinity, deep nesting, ~900 KB records. The next refreshes
(incremental, then full) must succeed, count each bad record under the reason the runtime
would skip it for, report those counts (run, API, page) and leave the good results as they
were. The live paths (live state page, edits' LiveReader) must read the same topics calmly.

Records the runtime would use but the dashboard cannot keep (names and partitions with a NUL
or a lone surrogate, names too long for the database, dates past the year 9999) are counted
and skipped the same way; names too long for a folder keep their history.
"""

from collections import Counter, defaultdict

import pytest
from django.urls import reverse

from offsets import connect_state
from offsets.edits.live import LiveReader, read_connector
from offsets.formats import jackson
from offsets.formats.offset_records import latest_offsets
from offsets.history import reading as history
from offsets.kafka import admin
from offsets.models import ConnectorSnapshot, MalformedCount, RefreshRun, SourceOffset
from offsets.refresh.run import run_refresh
from tests.support.connect_topics import YEAR_10000_MS, write_records
from tests.support.demo_data import EOS_TOPIC

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

OFFSETS = "connect-offsets"
CONFIGS = "connect-configs"
STATUS = "connect-status"

DEEP = b"[" * 100_000 + b"]" * 100_000  # beyond any recursion limit
HUGE_NOT_JSON = b'{"blob":"' + b"x" * 900_000  # ~900 KB, unterminated


def bad_key(n: int) -> bytes:
    """A well-formed key of a connector no good record uses (so no good key is touched)."""
    return b'["garbage-source",{"n":%d}]' % n


# (topic, key, value, reason). Offsets topics: offsets/formats/offset_records.MalformedReason.
# No record without a key: the broker refuses one on a compacted topic (Connect's three are),
# so the folds' rule for them is left to the unit tests.
OFFSETS_GARBAGE = [
    (OFFSETS, b"", b"", "key-not-json"),
    (OFFSETS, b"not json at all", b'{"position":1}', "key-not-json"),
    (OFFSETS, b"garbage", None, "key-not-json"),  # a "tombstone" of a key that is not one
    (OFFSETS, b'["c",{"n":1}', b'{"position":1}', "key-not-json"),  # truncated
    (OFFSETS, b"\xff\xfe\xfd", b'{"position":1}', "key-not-utf8"),
    (OFFSETS, b'{"connector":"c"}', b'{"position":1}', "key-not-array"),
    (OFFSETS, b'["c"]', b'{"position":1}', "key-not-array"),
    (OFFSETS, b"42", b'{"position":1}', "key-not-array"),
    (OFFSETS, b'[1,{"n":1}]', b'{"position":1}', "key-connector-not-string"),
    (OFFSETS, b'["c",[1,2]]', b'{"position":1}', "key-partition-not-object"),
    (OFFSETS, b'["c",{"n":{"deep":1}}]', b'{"position":1}', "key-partition-not-flat"),
    (OFFSETS, b'["c",{"k":"' + b"y" * 900_000 + b'"}', b"{}", "key-not-json"),  # huge key
    (OFFSETS, bad_key(1), b"not json", "value-not-json"),
    (OFFSETS, bad_key(2), b"", "value-not-json"),
    (OFFSETS, bad_key(3), b'{"position":NaN}', "value-not-json"),
    (OFFSETS, bad_key(4), b'{"position":Infinity}', "value-not-json"),
    (OFFSETS, bad_key(5), b'{"position":1e400}', "value-not-json"),  # beyond a double
    (OFFSETS, bad_key(6), DEEP, "value-not-json"),
    (OFFSETS, bad_key(7), HUGE_NOT_JSON, "value-not-json"),
    (OFFSETS, bad_key(8), b"\xc3\x28", "value-not-utf8"),
    (OFFSETS, bad_key(9), b"[1,2,3]", "value-not-object"),
    (OFFSETS, bad_key(10), b"12345", "value-not-object"),
    (OFFSETS, bad_key(11), b"null", "value-not-object"),
    (OFFSETS, bad_key(12), b'"a string"', "value-not-object"),
    (OFFSETS, bad_key(13), b'{"position":[1]}', "value-not-flat"),
    (EOS_TOPIC, b"not json", b"not json", "key-not-json"),
    (EOS_TOPIC, b'["orders-cdc-eos",{"n":1}]', b"[]", "value-not-object"),
]

# Config topic: offsets/formats/config_records.ConfigMalformedReason. "GOOD" stands for a
# connector of the demo: a bad record under its key must not change what it holds.
CONFIG_GARBAGE = [
    (CONFIGS, b"what-is-this", b"{}", "key-not-recognised"),
    (CONFIGS, b"\xff\xfe", b"{}", "key-not-recognised"),  # StringDeserializer: U+FFFD U+FFFD
    (CONFIGS, b"connector-", b'{"properties":{}}', "key-not-recognised"),
    (CONFIGS, b"task-nonumber", b'{"properties":{}}', "key-bad-task-id"),
    (CONFIGS, b"connector-x", b"not json", "value-not-json"),
    (CONFIGS, b"connector-x", b"", "value-not-json"),
    (CONFIGS, b"connector-x", b"\xc3\x28", "value-not-json"),
    (CONFIGS, b"connector-x", DEEP, "value-not-json"),
    (CONFIGS, b"connector-x", HUGE_NOT_JSON, "value-not-json"),
    (CONFIGS, b"target-state-x", b'{"state":NaN}', "value-not-json"),
    (CONFIGS, b"connector-x", b"[1]", "value-not-object"),
    (CONFIGS, b"commit-x", b"7", "value-not-object"),
    (CONFIGS, b"connector-x", b'{"properties":[1]}', "value-bad-field"),
    (CONFIGS, b"connector-x", b'{"properties":{"a":1}}', "value-bad-field"),
    (CONFIGS, b"commit-x", b'{"tasks":-1}', "value-bad-field"),
    (CONFIGS, b"target-state-x", b'{"state":"DANCING"}', "value-bad-field"),
    (CONFIGS, b"task-x-0", None, "value-unexpected-tombstone"),
    (CONFIGS, b"session-key", None, "value-unexpected-tombstone"),
    (CONFIGS, b"connector-GOOD", b"{not json", "value-not-json"),
    (CONFIGS, b"target-state-GOOD", b'{"state":"DANCING"}', "value-bad-field"),
]

# Status topic: offsets/formats/status_records.StatusMalformedReason.
STATUS_GARBAGE = [
    (STATUS, b"oops", b"{}", "key-not-recognised"),
    (STATUS, b"status-connector-", b'{"state":"RUNNING","generation":1}', "key-not-recognised"),
    (STATUS, b"status-task-nonumber", b'{"state":"RUNNING","generation":1}', "key-bad-task-id"),
    (STATUS, b"status-topic-nocolon", b"{}", "key-bad-topic"),
    (STATUS, b"status-connector-x", b"garbage", "value-not-json"),
    (STATUS, b"status-connector-x", b"", "value-not-json"),
    (STATUS, b"status-connector-x", b"\xff", "value-not-json"),
    (STATUS, b"status-connector-x", DEEP, "value-not-json"),
    (STATUS, b"status-connector-x", HUGE_NOT_JSON, "value-not-json"),
    (STATUS, b"status-task-x-0", b'{"state":"RUNNING","generation":Infinity}', "value-not-json"),
    (STATUS, b"status-connector-x", b'"RUNNING"', "value-not-object"),
    (STATUS, b"status-connector-x", b'{"state":"SLEEPING","generation":1}', "value-bad-field"),
    (STATUS, b"status-connector-x", b'{"state":"RUNNING","generation":1.5}', "value-bad-field"),
    (STATUS, b"status-connector-GOOD", b"not json", "value-not-json"),
    (STATUS, b"status-task-GOOD-0", b'{"state":"RUNNING"}', "value-bad-field"),
]

# Records that look odd but are what Connect would accept; they must be kept, not counted.
# A connector property may be null (map<string, optional string>), and a duplicate JSON key
# keeps its last value (Jackson's ObjectNode).
ODD_BUT_GOOD_CONFIGS = [
    (CONFIGS, b"connector-null-class", b'{"properties":{"connector.class":null,"topics":null}}'),
    (
        CONFIGS,
        b"connector-duplicate-keys",
        b'{"properties":{"connector.class":"A.SinkConnector",'
        b'"connector.class":"B.SourceConnector"}}',
    ),
]
# A 400-digit integer is valid JSON (Jackson reads a BigInteger); it is no progress figure.
ODD_BUT_GOOD_OFFSETS = [
    (OFFSETS, b'["odd-source",{"n":1}]', b'{"position":' + b"9" * 400 + b"}"),
    (OFFSETS, b'["odd-source",{"n":2,"n":3}]', b'{"position":1,"position":2}'),
]

SNAPSHOT_FIELDS = (
    "name",
    "type",
    "connector_class",
    "target_state",
    "runtime_state",
    "task_states",
    "task_count",
    "deleted",
    "config",
    "own_offsets_topic",
    "sink_group",
    "partitions",
    "last_commit_at",
    "rewinds",
    "drifted_partitions",
)


def good_connector(fresh_demo) -> str:
    """A running source connector of the demo with a config, a status and tasks."""
    snapshot = ConnectorSnapshot.objects.get(
        cluster=fresh_demo.cluster, name="jdbc-source-inventory"
    )
    assert snapshot.runtime_state == "RUNNING" and snapshot.task_states
    return snapshot.name


def write(settings: dict, records: list[tuple]) -> None:
    """Write (topic, key, value[, reason[, timestamp_ms]]) records; no timestamp: now."""
    write_records(
        settings,
        (
            (topic, key, value, rest[1] if len(rest) > 1 else None)
            for topic, key, value, *rest in records
        ),
    )


def accept_any_timestamp(settings: dict, topic: str) -> None:
    """Let the broker take record timestamps from any year (it refuses the far future)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entry = ConfigEntry(
        "message.timestamp.after.max.ms",
        str(2**63 - 1),
        incremental_operation=AlterConfigOpType.SET,
    )
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    kafka_admin = admin.admin_client(settings)
    for future in kafka_admin.incremental_alter_configs([resource]).values():
        future.result(30)


def with_good_name(records: list[tuple], name: str) -> list[tuple]:
    return [
        (topic, None if key is None else key.replace(b"GOOD", name.encode()), value, reason)
        for topic, key, value, reason in records
    ]


def expected_counts(records: list[tuple]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter] = defaultdict(Counter)
    for topic, _, _, reason in records:
        counts[topic][reason] += 1
    return {topic: dict(reasons) for topic, reasons in counts.items()}


def effective_offsets(cluster) -> dict[bytes, str]:
    return {
        bytes(row.key_bytes): row.offset_text
        for row in SourceOffset.objects.filter(
            cluster=cluster, effective=True, offset_text__isnull=False
        )
    }


def snapshots(cluster) -> dict[str, dict]:
    return {
        row["name"]: row
        for row in ConnectorSnapshot.objects.filter(cluster=cluster).values(*SNAPSHOT_FIELDS)
    }


def test_garbage_in_every_connect_topic_is_counted_and_the_good_records_are_kept(
    fresh_demo, spark, history_dir, client: object, user
):
    cluster = fresh_demo.cluster
    first = run_refresh(cluster=cluster, spark=spark)
    assert first.status == RefreshRun.Status.SUCCEEDED, first.error
    assert first.malformed == 0 and first.malformed_by_reason == {}
    good_offsets = effective_offsets(cluster)
    good_snapshots = snapshots(cluster)
    name = good_connector(fresh_demo)

    garbage = [
        *OFFSETS_GARBAGE,
        *with_good_name(CONFIG_GARBAGE, name),
        *with_good_name(STATUS_GARBAGE, name),
    ]
    write(fresh_demo.settings, [*garbage, *ODD_BUT_GOOD_CONFIGS, *ODD_BUT_GOOD_OFFSETS])
    expected = expected_counts(garbage)

    # The good-only expectation: what was there, plus the odd-but-good records.
    expected_offsets = {
        **good_offsets,
        b'["odd-source",{"n":1}]': '{"position":' + "9" * 400 + "}",
        b'["odd-source",{"n":2,"n":3}]': '{"position":1,"position":2}',
    }
    expected_snapshots = {
        **good_snapshots,
        "null-class": {"connector_class": "", "type": "source", "deleted": False},
        "duplicate-keys": {"connector_class": "B.SourceConnector", "type": "source"},
        "odd-source": {"type": "source", "deleted": True, "partitions": 2},
    }

    for full in (False, True):
        run = run_refresh(cluster=cluster, spark=spark, full=full)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        assert run.malformed_by_reason == expected, f"full={full}"
        assert run.malformed == len(garbage)
        assert effective_offsets(cluster) == expected_offsets
        stored = snapshots(cluster)
        assert set(stored) == set(expected_snapshots)
        for connector, fields in expected_snapshots.items():
            assert {k: stored[connector][k] for k in fields} == fields, connector
        counted = Counter()
        for row in MalformedCount.objects.filter(cluster=cluster):
            counted[(row.topic, row.reason)] += row.count
            assert row.example, row
        assert counted == Counter(
            {(t, r): n for t, reasons in expected.items() for r, n in reasons.items()}
        )

    # Reported: the API gives the counts by topic and reason, the home page lists them.
    client.force_login(user)
    response = client.get(reverse("api-refreshes", args=[cluster.name]))
    assert response.status_code == 200
    assert response.json()[0]["malformed_by_reason"] == expected
    assert response.json()[0]["malformed"] == len(garbage)
    page = client.get(reverse("home")).content.decode()
    assert f'data-topic="{CONFIGS}" data-reason="value-bad-field"' in page
    assert f'data-topic="{OFFSETS}" data-reason="key-not-utf8"' in page

    # The live paths read the same topics without failing and agree on the good records.
    state = connect_state.read_connect_state(cluster=cluster)
    assert state.config_malformed == expected[CONFIGS]
    assert state.status_malformed == expected[STATUS]
    live = {c.name: c for c in state.connectors}
    assert live[name].runtime_state == good_snapshots[name]["runtime_state"]
    assert live[name].config == good_snapshots[name]["config"]
    assert live["null-class"].connector_class == ""
    page = client.get(reverse("live-state", args=[cluster.name]))
    assert page.status_code == 200
    assert b"malformed records skipped" in page.content

    reader = LiveReader(cluster)
    context = read_connector(cluster=cluster, connector=name, reader=reader)
    assert context.connector_state == good_snapshots[name]["runtime_state"]
    worker = latest_offsets((r.key, r.value) for r in reader.records(OFFSETS))
    assert {str(reason): n for reason, n in worker.malformed.items()} == expected[OFFSETS]
    assert client.get(reverse("connector-edits", args=[cluster.name, name])).status_code == 200


# Written as a worker would write them: Jackson escapes a NUL and a lone surrogate in the
# key's JSON, so the bytes are valid UTF-8 JSON; only what they decode to cannot be kept.
HOSTILE = "hostile-source"
FOLDER_TOO_LONG = "/" * 200  # 600 bytes once escaped for a folder: kept, its folder hashed


def connect_key(connector: str, partition: dict) -> bytes:
    return jackson.dumps_key(connector, partition)


POSITION_1 = jackson.dumps({"position": 1})
# (topic, key, value, reason[, timestamp_ms]): records the refresh counts and skips.
UNKEEPABLE_OFFSETS = [
    (OFFSETS, connect_key("nul\x00source", {"n": 1}), POSITION_1, "key-connector-unstorable"),
    (OFFSETS, connect_key("lone\ud800source", {"n": 1}), POSITION_1, "key-connector-unstorable"),
    (OFFSETS, connect_key("\udfff", {"n": 1}), None, "key-connector-unstorable"),
    (OFFSETS, connect_key("x" * 300, {"n": 1}), POSITION_1, "key-connector-unstorable"),
    (OFFSETS, connect_key(HOSTILE, {"file": "\udc00"}), POSITION_1, "key-partition-unstorable"),
    (OFFSETS, connect_key(HOSTILE, {"a\x00": 1}), POSITION_1, "key-partition-unstorable"),
    # The runtime reads it (Jackson); PostgreSQL's jsonb cannot hold it.
    (
        OFFSETS,
        connect_key(HOSTILE, {"n": 2}),
        jackson.dumps({"position": 1, "file": "\ud800"}),
        "value-unstorable",
    ),
    # After the good write of the same key below: its offset stays that write's.
    (
        OFFSETS,
        connect_key(HOSTILE, {"n": 1}),
        jackson.dumps({"position": 2}),
        "timestamp-out-of-range",
        YEAR_10000_MS,
    ),
    (OFFSETS, connect_key(HOSTILE, {"n": 1}), None, "timestamp-out-of-range", 2**63 - 1),
    (OFFSETS, connect_key(HOSTILE, {"n": 1}), POSITION_1, "timestamp-out-of-range", -(2**62)),
]
# Odd but kept: a name whose folder would be too long.
KEPT_OFFSETS = [
    (OFFSETS, connect_key(FOLDER_TOO_LONG, {"n": 1}), POSITION_1),
    (OFFSETS, connect_key(HOSTILE, {"n": 1}), POSITION_1),
]


def test_records_the_dashboard_cannot_keep_are_counted_and_never_fail_a_refresh(
    fresh_demo, spark, history_dir, client: object, user
):
    cluster = fresh_demo.cluster
    first = run_refresh(cluster=cluster, spark=spark)
    assert first.status == RefreshRun.Status.SUCCEEDED, first.error
    good_offsets = effective_offsets(cluster)

    accept_any_timestamp(fresh_demo.settings, OFFSETS)
    write(fresh_demo.settings, [*KEPT_OFFSETS, *UNKEEPABLE_OFFSETS])
    expected = expected_counts([record[:4] for record in UNKEEPABLE_OFFSETS])
    expected_offsets = {
        **good_offsets,
        **{key: value.decode() for _, key, value in KEPT_OFFSETS},
    }

    for full in (False, True):
        run = run_refresh(cluster=cluster, spark=spark, full=full)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        assert run.malformed_by_reason == expected, f"full={full}"
        assert effective_offsets(cluster) == expected_offsets
        stored = snapshots(cluster)
        assert stored[HOSTILE]["partitions"] == 1
        assert stored[FOLDER_TOO_LONG]["partitions"] == 1
        assert not any("\x00" in name or "x" * 300 in name for name in stored)

    # The long name's history is where the charts look for it.
    assert history.connector_files(cluster=cluster, connector=FOLDER_TOO_LONG)
    client.force_login(user)
    response = client.get(reverse("api-refreshes", args=[cluster.name]))
    assert response.json()[0]["malformed_by_reason"] == expected

    # The skipped value breaks no page or export about the connector; the export read live
    # from the topic holds it, with Jackson's escape.
    exports = [
        reverse("connector-offsets-json", args=[cluster.name, HOSTILE]),
        f"/api/v1/clusters/{cluster.name}/connectors/{HOSTILE}/offsets/",
        f"/api/v1/clusters/{cluster.name}/connectors/{HOSTILE}/partitions/",
        reverse("connector", args=[cluster.name, HOSTILE]),
        reverse("edits-export", args=[cluster.name]) + f"?connectors={HOSTILE}",
        reverse("edits-export", args=[cluster.name]),
        reverse("edits-export", args=[cluster.name]) + "?from_beginning=on",
    ]
    for url in exports:
        response = client.get(url)
        assert response.status_code == 200, url
    live = client.get(reverse("edits-export", args=[cluster.name]) + "?from_beginning=on")
    assert b"\\ud800" in live.content or b"\\uD800" in live.content


def test_odd_names_and_values_in_the_config_and_status_topics_never_fail_a_refresh(
    fresh_demo, spark, history_dir, client: object, user
):
    cluster = fresh_demo.cluster
    config = jackson.dumps(
        {"properties": {"connector.class": "A.SourceConnector", "note": "a\ud800b"}}
    )
    status = jackson.dumps(
        {"state": "RUNNING", "trace": "x\udc00", "worker_id": "w", "generation": 1}
    )
    write(
        fresh_demo.settings,
        [
            (CONFIGS, b"connector-odd-config", config),
            (STATUS, b"status-connector-odd-config", status),
            # Names the database cannot store: counted, like the offsets topic's.
            (CONFIGS, b"connector-nul\x00name", config),
            (STATUS, b"status-connector-nul\x00name", status),
            (CONFIGS, b"connector-" + b"y" * 250, config),
            (STATUS, b"status-task-" + b"y" * 250 + b"-0", status),
        ],
    )
    unstorable = {"key-connector-unstorable": 2}
    for full in (False, True):
        run = run_refresh(cluster=cluster, spark=spark, full=full)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        assert run.malformed_by_reason == {CONFIGS: unstorable, STATUS: unstorable}
    stored = snapshots(cluster)
    assert stored["odd-config"]["config"]["note"] == "a\ufffdb"
    assert not any("\x00" in name or "y" * 250 in name for name in stored)
    client.force_login(user)
    for url in (
        reverse("connector", args=[cluster.name, "odd-config"]),
        f"/api/v1/clusters/{cluster.name}/connectors/odd-config/",
        f"/api/v1/clusters/{cluster.name}/connectors/",
        reverse("home"),
        reverse("live-state", args=[cluster.name]),
    ):
        assert client.get(url).status_code == 200, url


def test_a_newer_offset_the_database_cannot_store_marks_the_stored_one_until_a_kept_write(
    fresh_demo, spark, history_dir, client: object, user
):
    cluster = fresh_demo.cluster
    key = connect_key(HOSTILE, {"n": 7})
    write(fresh_demo.settings, [(OFFSETS, key, jackson.dumps({"position": 1}))])
    assert run_refresh(cluster=cluster, spark=spark).status == RefreshRun.Status.SUCCEEDED
    # The runtime reads this one (Jackson); the database cannot hold it.
    write(fresh_demo.settings, [(OFFSETS, key, jackson.dumps({"position": 2, "f": "\ud800"}))])

    client.force_login(user)
    for full in (False, True):
        run = run_refresh(cluster=cluster, spark=spark, full=full)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        row = SourceOffset.objects.get(cluster=cluster, topic=OFFSETS, key_bytes=key)
        assert row.offset == {"position": 1} and row.newer_unstorable_offset is not None, full
        page = client.get(reverse("connector", args=[cluster.name, HOSTILE])).content.decode()
        assert 'data-field="newer-not-stored"' in page and 'id="newer-not-stored"' in page
        export = client.get(reverse("connector-offsets-json", args=[cluster.name, HOSTILE]))
        assert export["X-Newer-Offsets-Not-Stored"] == "1"

    write(fresh_demo.settings, [(OFFSETS, key, jackson.dumps({"position": 3}))])
    assert run_refresh(cluster=cluster, spark=spark).status == RefreshRun.Status.SUCCEEDED
    row = SourceOffset.objects.get(cluster=cluster, topic=OFFSETS, key_bytes=key)
    assert row.offset == {"position": 3} and row.newer_unstorable_offset is None
