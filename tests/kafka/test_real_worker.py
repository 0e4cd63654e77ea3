"""Acceptance against the REAL Kafka Connect worker: what the dashboard reads, stages and
writes is what the worker itself reports (GET /connectors/{c}/offsets) and acts on.

Connectors are created through the worker's REST API (`connect_rest`); every name carries this
module run's suffix, since the session's broker and worker are shared.
"""

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from devkit import embedded_config
from devkit.live_demo import one_broker_mirror
from offsets.edits.apply import apply_edit
from offsets.formats import jackson
from offsets.formats.offset_records import latest_offsets
from offsets.kafka import admin, groups, reading
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    OffsetEdit,
    RefreshRun,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.queries import snapshots
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import STRING_CONVERTERS, canonical, wait_until
from tests.support.demo_data import REFRESH_MODELS
from tests.support.edit_steps import stage_and_approve, stage_approve_apply
from tests.support.worker_files import (
    byte_position,
    eos_file_source,
    file_sink,
    file_source,
    produce,
    stopped,
    wait_for_values,
    write_lines,
)
from tests.support.workers import register, session_worker

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
TABLE_SOURCE = "dev.offsetsdashboard.connectors.TableSourceConnector"
EXTERNAL_SINK = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"
# A file name with what a JSON key must escape (quotes, backslashes) or may not (non-ASCII,
# spaces): the dashboard must write the key bytes the worker's JsonConverter writes.
ODD_NAME = 'odd "quoted" \\back\\slash ü 日本 space.log'


def name(what: str) -> str:
    return f"acc-{RUN}-{what}"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("connect-files")


# --- Helpers. --------------------------------------------------------------------------------


def raw_keys(kafka: dict, topic: str, connector: str) -> set[bytes]:
    """The exact key bytes of the connector's live offsets in an offsets topic."""
    fast = {**kafka, "fetch.wait.max.ms": 10}
    records = reading.read_topic(fast, topic, timeout=5, batch_size=1)
    view = latest_offsets((r.key, r.value) for r in records).offsets
    return {key for key, record in view.items() if record.connector == connector}


# --- Every kind of connector, run until its offsets settle, then stopped. ---------------------


@dataclass(frozen=True)
class Fleet:
    names: dict[str, str]  # role -> connector name
    worker_offsets: dict[str, list[dict]]  # role -> GET /connectors/{c}/offsets, stopped
    external_output: Path


FLEET_LINES = ["alpha", "beta", "gamma", "delta"]


@pytest.fixture(scope="module")
def fleet(rest, kafka, files) -> Fleet:
    """One connector of every kind the dashboard must read, each run to a settled offset and
    then STOPPED, so the worker's answer and the dashboard's read cannot differ by timing."""
    names = {
        role: name(role)
        for role in (
            "file",
            "odd",
            "eos",
            "mirror",
            "sink",
            "table",
            "external-sink",
            "txn-sink",
        )
    }
    write_lines(files / "fleet.log", FLEET_LINES)
    write_lines(files / ODD_NAME, FLEET_LINES[:2])
    write_lines(files / "fleet-eos.log", FLEET_LINES[:3])
    mirrored = name("mirrored")
    produce(kafka, mirrored, [f"m{i}" for i in range(5)])
    sink_input = name("sink-in")
    produce(kafka, sink_input, [f"s{i}" for i in range(6)])

    rest.create(names["file"], file_source(files / "fleet.log", name("file-out")))
    rest.create(names["odd"], file_source(files / ODD_NAME, name("odd-out")))
    rest.create(
        names["eos"],
        eos_file_source(files / "fleet-eos.log", name("eos-out"), name("eos-offsets")),
    )
    rest.create(
        names["mirror"],
        one_broker_mirror(
            kafka["bootstrap.servers"], mirrored, source_alias="src", target_alias="tgt"
        ),
    )
    rest.create(names["sink"], file_sink(files / "fleet-sink.txt", sink_input))
    rest.create(
        names["table"],
        {
            "connector.class": TABLE_SOURCE,
            "tasks.max": "1",
            "topic": name("table-out"),
            "tables": "customers,orders,order_lines",
            "max.rows": "3",
            "poll.interval.ms": "50",
            **STRING_CONVERTERS,
        },
    )
    external_output = files / "external.txt"
    rest.create(
        names["external-sink"],
        {
            "connector.class": EXTERNAL_SINK,
            "tasks.max": "1",
            "topics": sink_input,
            "file": str(external_output),
            "offsets.file": str(files / "external.offsets"),
            **STRING_CONVERTERS,
        },
    )

    settled = {
        "file": lambda o: o and o[0]["offset"]["position"] == byte_position(FLEET_LINES, 4),
        "odd": lambda o: o and o[0]["offset"]["position"] == byte_position(FLEET_LINES, 2),
        "eos": lambda o: o and o[0]["offset"]["position"] == byte_position(FLEET_LINES, 3),
        "mirror": lambda o: o and o[0]["offset"]["offset"] == 4,
        "sink": lambda o: o and o[0]["offset"]["kafka_offset"] == 6,
        "table": lambda o: len(o) == 3 and all(e["offset"]["incrementing"] == 3 for e in o),
    }
    for role, done in settled.items():
        rest.wait_for_offsets(names[role], done, timeout=90)
    wait_until(
        lambda: external_output.read_text() if external_output.exists() else "",
        lambda text: text.count("\n") == 6,
        timeout=60,
        what="the external-offsets sink's output",
    )
    # A sink behind on the exactly-once source's output, a topic of transactions: each ends
    # with a commit marker, an offset no consumer ever returns. Never started, it is given an
    # offset at the start, so it lags by every record.
    rest.create(
        names["txn-sink"],
        file_sink(files / "txn-sink.txt", name("eos-out")),
        initial_state="STOPPED",
    )
    rest.wait_for_state(names["txn-sink"], "STOPPED")
    rest.patch_offsets(
        names["txn-sink"],
        {
            "offsets": [
                {
                    "partition": {"kafka_topic": name("eos-out"), "kafka_partition": 0},
                    "offset": {"kafka_offset": 0},
                }
            ]
        },
    )
    for connector in names.values():
        rest.stop(connector)
    for connector in names.values():
        rest.wait_for_state(connector, "STOPPED")
    worker_offsets = {role: rest.offsets(connector)["offsets"] for role, connector in names.items()}
    yield Fleet(names, worker_offsets, external_output)
    for connector in names.values():
        rest.delete(connector)


@pytest.fixture(scope="module")
def _refreshed_rows(
    django_db_setup, django_db_blocker, kafka_runtime, fleet, spark, tmp_path_factory
) -> dict[str, str]:
    """The database rows of one refresh of the worker's topics, made once for the module.

    A refresh costs seconds of Spark; the tests that read its results share one, made in a
    transaction that is rolled back (like conftest's `_refreshed_demo_rows`) and loaded again
    by each test (`refreshed`).
    """
    from django.conf import settings
    from django.core import serializers
    from django.db import transaction

    import offsets.models as models

    previous = settings.OFFSETS_HISTORY_PATH
    settings.OFFSETS_HISTORY_PATH = str(tmp_path_factory.mktemp("history"))
    try:
        with django_db_blocker.unblock(), transaction.atomic():
            cluster = register(
                f"real-{RUN}", kafka_runtime.bootstrap_servers, session_worker(kafka_runtime)
            )
            run = run_refresh(cluster=cluster, spark=spark)
            assert run.status == RefreshRun.Status.SUCCEEDED, run.error
            rows = {
                model: serializers.serialize("json", getattr(models, model).objects.order_by("pk"))
                for model in REFRESH_MODELS
            }
            transaction.set_rollback(True)
    finally:
        settings.OFFSETS_HISTORY_PATH = previous
    return rows


@pytest.fixture
def refreshed(_refreshed_rows, db) -> Cluster:
    """The worker's cluster as the module's one refresh left it."""
    from django.core import serializers
    from django.core.management.color import no_style
    from django.db import connection

    import offsets.models as models

    for model in REFRESH_MODELS:
        objects = [item.object for item in serializers.deserialize("json", _refreshed_rows[model])]
        getattr(models, model).objects.bulk_create(objects)
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(
            no_style(), [getattr(models, model) for model in REFRESH_MODELS]
        ):
            cursor.execute(statement)
    return Cluster.objects.get(name=f"real-{RUN}")


# --- What a refresh shows is what the worker reports. -----------------------------------------


@pytest.mark.parametrize("role", ["file", "odd", "eos", "mirror", "sink", "table"])
def test_after_a_refresh_the_dashboard_shows_exactly_the_workers_offsets(
    refreshed, fleet, client, user, role
):
    connector = fleet.names[role]
    expected = fleet.worker_offsets[role]
    assert expected, f"the worker reports no offsets for {connector}"
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed, name=connector)
    # What the connector's pages and the export read...
    document = snapshots.export_document(cluster=refreshed, snapshot=snapshot)
    assert canonical(document["offsets"]) == canonical(expected)
    # ...and what the API answers.
    client.force_login(user)
    response = client.get(f"/api/v1/clusters/{refreshed.name}/connectors/{connector}/offsets/")
    assert response.status_code == 200, response.content
    assert canonical(response.json()["offsets"]) == canonical(expected)
    if snapshot.type == "source":
        rows = SourceOffset.objects.filter(cluster=refreshed, connector=connector, effective=True)
        assert canonical([{"partition": r.partition, "offset": r.offset} for r in rows]) == (
            canonical(expected)
        )


def test_a_refresh_reads_the_exactly_once_connectors_own_offsets_topic(refreshed, fleet):
    connector = fleet.names["eos"]
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed, name=connector)
    assert snapshot.own_offsets_topic == name("eos-offsets")
    effective = SourceOffset.objects.get(cluster=refreshed, connector=connector, effective=True)
    assert effective.topic == name("eos-offsets")


def test_the_source_keys_are_stored_with_the_workers_exact_bytes(refreshed, fleet, kafka):
    connector = fleet.names["odd"]
    (key,) = raw_keys(kafka, embedded_config.WORKER_TOPICS["offsets_topic"], connector)
    (row,) = SourceOffset.objects.filter(cluster=refreshed, connector=connector)
    assert bytes(row.key_bytes) == key
    assert row.partition == {"filename": str(fleet.external_output.parent / ODD_NAME)}


def test_a_sink_whose_runtime_commits_nothing_is_shown_as_keeping_its_offsets_outside_connect(
    refreshed, fleet, kafka
):
    connector = fleet.names["external-sink"]
    # It did consume (six lines written), yet the worker has no offsets for it: its group holds
    # none, because its preCommit hands Connect nothing to commit.
    assert fleet.external_output.read_text().splitlines() == [f"s{i}" for i in range(6)]
    assert fleet.worker_offsets["external-sink"] == []
    assert groups.committed_offsets(kafka, f"connect-{connector}") == {}
    external = ConnectorSnapshot.objects.get(cluster=refreshed, name=connector)
    assert external.offsets_managed_externally
    # A sink whose runtime commits is not.
    sink = ConnectorSnapshot.objects.get(cluster=refreshed, name=fleet.names["sink"])
    assert not sink.offsets_managed_externally


def test_a_sink_lagging_on_a_topic_of_transactions_has_its_lag_in_time(refreshed, fleet, kafka):
    connector, topic = fleet.names["txn-sink"], name("eos-out")
    fast = {**kafka, "fetch.wait.max.ms": 10}
    records = list(reading.read_topic(fast, topic, timeout=5, batch_size=1))
    assert [r.value.decode() for r in records] == FLEET_LINES[:3]
    (lag,) = SinkPartitionLag.objects.filter(cluster=refreshed, connector=connector)
    assert (lag.committed, lag.log_start) == (0, 0)
    # The log end is past the last record: the commit markers take offsets too.
    assert lag.log_end > records[-1].offset + 1
    assert lag.lag_records == lag.log_end
    # Newest record's time less the oldest unread one's, as for any other topic.
    assert lag.lag_ms == records[-1].timestamp_ms - records[0].timestamp_ms


# --- The dashboard's KIP-875 export is what PATCH /connectors/{c}/offsets accepts. ------------


@pytest.mark.parametrize("role", ["odd", "eos", "mirror", "sink", "table"])
def test_the_exported_kip875_document_is_accepted_as_is_by_the_worker(
    refreshed, fleet, rest, client, user, role
):
    connector = fleet.names[role]
    client.force_login(user)
    # The export endpoint reads the topics live; the connector's offsets endpoint gives what
    # the refresh saw. Both are the document a user would hand to the worker.
    exported = client.get(
        "/api/v1/edits/export/", {"cluster": refreshed.name, "connectors": connector}
    )
    assert exported.status_code == 200, exported.content
    document = json.loads(exported.content)
    assert document["offsets"]
    shown = client.get(f"/api/v1/clusters/{refreshed.name}/connectors/{connector}/offsets/")
    assert canonical(shown.json()["offsets"]) == canonical(document["offsets"])
    # The worker moves off them, so the document has something to restore.
    if role == "eos":
        # Worker 4.3.1 times out resetting (DELETE) an exactly-once connector with its own
        # offsets topic ("Cannot add partition ... to transaction while in state READY"):
        # move it with a PATCH instead.
        moved = [{**entry, "offset": {"position": 0}} for entry in document["offsets"]]
        rest.patch_offsets(connector, {"offsets": moved})
        rest.wait_for_offsets(connector, lambda offsets: offsets == moved)
    else:
        rest.call("DELETE", f"/connectors/{connector}/offsets")
        rest.wait_for_offsets(connector, lambda offsets: not offsets)

    # The exported bytes, as they are.
    status, body = rest.request("PATCH", f"/connectors/{connector}/offsets", exported.content)

    assert status == 200, body
    assert canonical(rest.offsets(connector)["offsets"]) == canonical(document["offsets"])


# --- Edits applied by the dashboard are what the worker resumes from. -------------------------


@pytest.fixture(params=["worker", "topic"])
def via(request, cluster) -> str:
    """Each apply test runs both ways: PATCH through the worker, and the direct write (the way
    taken when a cluster has no worker URL)."""
    if request.param == "topic":
        cluster.connect_url = ""
        cluster.save(update_fields=["connect_url"])
    return request.param


def test_a_source_edit_applied_on_a_stopped_connector_is_where_the_worker_resumes(
    cluster, rest, kafka, files, editor, approver, via
):
    connector, output, path = (
        name(f"edit-src-{via}"),
        name(f"edit-src-out-{via}"),
        files / f"edit-src-{via}.log",
    )
    lines = [f"line {i}" for i in range(1, 6)]
    write_lines(path, lines)
    rest.create(connector, file_source(path, output))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] > 0)
    assert wait_for_values(kafka, output, 5) == lines
    stopped(rest, connector)
    partition = {"filename": str(path)}
    rewound = byte_position(lines, 2)  # after "line 2": lines 3 to 5 are read again

    edit = stage_approve_apply(
        cluster, connector, editor, approver,
        strategy="set", partition=partition, offset={"position": rewound},
    )  # fmt: skip

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == via
    assert rest.offsets(connector)["offsets"] == [
        {"partition": partition, "offset": {"position": rewound}}
    ]
    rest.resume(connector)
    values = wait_for_values(kafka, output, 8)
    assert values == [*lines, *lines[2:]]
    rest.wait_for_offsets(
        connector, lambda o: o[0]["offset"]["position"] == byte_position(lines, 5)
    )
    stopped(rest, connector)
    rest.delete(connector)


def test_an_exactly_once_source_edit_in_its_own_topic_is_where_the_worker_resumes(
    cluster, rest, kafka, files, editor, approver, via
):
    connector, output = name(f"edit-eos-{via}"), name(f"edit-eos-out-{via}")
    path, offsets_topic = files / f"edit-eos-{via}.log", name(f"edit-eos-offsets-{via}")
    lines = [f"row {i}" for i in range(1, 4)]
    write_lines(path, lines)
    rest.create(connector, eos_file_source(path, output, offsets_topic))
    rest.wait_for_offsets(
        connector, lambda o: o and o[0]["offset"]["position"] == byte_position(lines, 3)
    )
    stopped(rest, connector)
    # Three more lines while it is stopped; the edit skips the first two of them.
    more = [f"row {i}" for i in range(4, 7)]
    write_lines(path, more, append=True)
    skipped = byte_position([*lines, *more], 5)
    partition = {"filename": str(path)}

    edit = stage_approve_apply(
        cluster, connector, editor, approver,
        strategy="set", partition=partition, offset={"position": skipped},
    )  # fmt: skip

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == via
    assert edit.primary_topic == offsets_topic
    assert rest.offsets(connector)["offsets"] == [
        {"partition": partition, "offset": {"position": skipped}}
    ]
    rest.resume(connector)
    rest.wait_for_offsets(
        connector, lambda o: o[0]["offset"]["position"] == byte_position([*lines, *more], 6)
    )
    assert wait_for_values(kafka, output, 4) == [*lines, "row 6"]
    stopped(rest, connector)
    rest.delete(connector)


def test_a_sink_edit_applied_on_a_stopped_connector_is_where_the_worker_resumes(
    cluster, rest, kafka, files, editor, approver, via
):
    connector, topic, path = (
        name(f"edit-sink-{via}"),
        name(f"edit-sink-in-{via}"),
        files / f"edit-sink-{via}.txt",
    )
    produce(kafka, topic, [f"v{i}" for i in range(6)])
    rest.create(connector, file_sink(path, topic))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["kafka_offset"] == 6)
    stopped(rest, connector)
    assert path.read_text().splitlines() == [f"v{i}" for i in range(6)]

    edit = stage_approve_apply(
        cluster, connector, editor, approver,
        strategy="offset", value=4, partitions=((topic, 0),),
    )  # fmt: skip

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == via
    assert rest.offsets(connector)["offsets"] == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 4}}
    ]
    rest.resume(connector)
    wait_until(
        lambda: path.read_text().splitlines(),
        lambda lines: len(lines) >= 8,
        timeout=60,
        what=f"{path} written again",
    )
    assert path.read_text().splitlines() == [*(f"v{i}" for i in range(6)), "v4", "v5"]
    rest.wait_for_offsets(connector, lambda o: o[0]["offset"]["kafka_offset"] == 6)
    stopped(rest, connector)
    rest.delete(connector)


# --- The lock check reads the live worker's state. --------------------------------------------


def test_the_lock_check_refuses_running_and_paused_connectors_and_accepts_stopped_ones(
    cluster, rest, kafka, files, editor, approver
):
    connector, path = name("lock"), files / "lock.log"
    write_lines(path, ["one", "two"])
    rest.create(connector, file_source(path, name("lock-out")))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    partition = {"filename": str(path)}
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition=partition, offset={"position": 0},
    )  # fmt: skip

    def refused(state: str) -> None:
        result = apply_edit(edit=edit, user=approver)
        assert result.state == OffsetEdit.State.APPROVED, f"{state}: {result.error}"
        checks = {c["name"]: c for c in result.lock_checks}
        assert not checks["connector-stopped"]["passed"], state
        assert rest.offsets(connector)["offsets"][0]["offset"] == {"position": 8}

    rest.wait_for_state(connector, "RUNNING", tasks=1)
    refused("RUNNING")
    rest.pause(connector)
    rest.wait_for_state(connector, "PAUSED", tasks=1)
    refused("PAUSED")
    stopped(rest, connector)

    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert all(check["passed"] for check in edit.lock_checks)
    assert rest.offsets(connector)["offsets"][0]["offset"] == {"position": 0}
    rest.delete(connector)


def test_the_lock_check_refuses_a_stopped_sink_whose_group_has_a_live_member(
    cluster, rest, kafka, files, editor, approver
):
    connector, topic = name("lock-sink"), name("lock-sink-in")
    produce(kafka, topic, ["a", "b", "c"])
    rest.create(connector, file_sink(files / "lock-sink.txt", topic))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["kafka_offset"] == 3)
    stopped(rest, connector)
    edit = stage_and_approve(
        cluster, connector, editor, approver, strategy="earliest", partitions=((topic, 0),)
    )
    # A zombie task: a consumer in the connector's group while the connector is stopped.
    member = Consumer(
        {
            **kafka,
            "group.id": f"connect-{connector}",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    member.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment(), "the test consumer never joined the group"
        edit = apply_edit(edit=edit, user=approver)
    finally:
        member.close()

    assert edit.state == OffsetEdit.State.APPROVED, edit.error
    checks = {c["name"]: c for c in edit.lock_checks}
    assert checks["connector-stopped"]["passed"]
    assert not checks["group-inactive"]["passed"]
    assert rest.offsets(connector)["offsets"][0]["offset"] == {"kafka_offset": 3}
    rest.delete(connector)


# --- Exact key bytes. ---------------------------------------------------------------------------


def test_an_edit_of_a_file_whose_name_needs_escaping_writes_the_workers_key_and_is_honoured(
    cluster, rest, kafka, files, editor, approver, via
):
    connector, output = name(f"odd-edit-{via}"), name(f"odd-edit-out-{via}")
    path = files / f"edit {via} {ODD_NAME}"
    # ASCII lines: FileStreamSource counts its position in characters but skips bytes on
    # restart, so multi-byte text would resume off by a few bytes whatever the dashboard did.
    lines = ["one", "\"'\\", "three"]
    write_lines(path, lines)
    rest.create(connector, file_source(path, output))
    rest.wait_for_offsets(
        connector, lambda o: o and o[0]["offset"]["position"] == byte_position(lines, 3)
    )
    assert wait_for_values(kafka, output, 3) == lines
    stopped(rest, connector)
    (worker_key,) = raw_keys(kafka, embedded_config.WORKER_TOPICS["offsets_topic"], connector)
    partition = {"filename": str(path)}

    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition=partition, offset={"position": byte_position(lines, 1)},
    )  # fmt: skip
    (change,) = edit.changes.all()
    assert bytes(change.key_bytes) == worker_key
    assert jackson.loads(worker_key) == [connector, partition]
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == via
    # Still one key: the edit overwrote the worker's record rather than adding a look-alike.
    assert raw_keys(kafka, embedded_config.WORKER_TOPICS["offsets_topic"], connector) == {
        worker_key
    }
    assert rest.offsets(connector)["offsets"] == [
        {"partition": partition, "offset": {"position": byte_position(lines, 1)}}
    ]
    rest.resume(connector)
    assert wait_for_values(kafka, output, 5) == [*lines, *lines[1:]]
    stopped(rest, connector)
    rest.delete(connector)


# --- Incremental refreshes follow the worker's commits. --------------------------------------


def test_an_incremental_refresh_follows_the_workers_new_commits(
    cluster, rest, kafka, files, spark, settings, tmp_path
):
    """The worker writes its offsets (and, with exactly-once support, its configs) in
    transactions: the next refresh must read on past the commit markers and still agree."""
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    plain, eos = name("incr"), name("incr-eos")
    paths = {plain: files / "incr.log", eos: files / "incr-eos.log"}
    lines = ["first", "second"]
    for path in paths.values():
        write_lines(path, lines)
    rest.create(plain, file_source(paths[plain], name("incr-out")))
    rest.create(eos, eos_file_source(paths[eos], name("incr-eos-out"), name("incr-eos-offsets")))

    def settle(count: int) -> None:
        for connector in paths:
            rest.wait_for_offsets(
                connector,
                lambda o: o and o[0]["offset"]["position"] == byte_position(all_lines, count),
            )

    def dashboard(connector: str) -> list[str]:
        rows = SourceOffset.objects.filter(cluster=cluster, connector=connector, effective=True)
        return canonical([{"partition": r.partition, "offset": r.offset} for r in rows])

    all_lines = [*lines, "third", "fourth"]
    settle(2)
    first = run_refresh(cluster=cluster, spark=spark)
    assert first.status == RefreshRun.Status.SUCCEEDED, first.error
    for connector in paths:
        assert dashboard(connector) == canonical(rest.offsets(connector)["offsets"])

    for path in paths.values():
        write_lines(path, all_lines[2:], append=True)
    settle(4)
    second = run_refresh(cluster=cluster, spark=spark)

    assert second.status == RefreshRun.Status.SUCCEEDED, second.error
    assert not second.full
    for connector in paths:
        expected = rest.offsets(connector)["offsets"]
        assert expected[0]["offset"]["position"] == byte_position(all_lines, 4)
        assert dashboard(connector) == canonical(expected)
    for connector in paths:
        rest.delete(connector)


def test_history_outlives_the_compaction_of_the_offsets_topic_and_a_full_refresh_agrees(
    cluster, rest, kafka, files, spark, settings, tmp_path
):
    """Apache Kafka's log cleaner removes superseded commits from an offsets topic: the
    incremental refreshes that read them before keep their history, and a full refresh of
    what compaction left gives the same latest offsets as the worker (and the shorter
    history the README promises for --full)."""
    from offsets.history.reading import partition_history

    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    connector, offsets_topic = name("compacted"), name("compacted-offsets")
    # Segments roll at every record after 100 ms, and the cleaner takes any dirty segment.
    admin.create_topics(
        kafka,
        [
            admin.TopicSpec(
                offsets_topic,
                1,
                {
                    "cleanup.policy": "compact",
                    "segment.ms": "100",
                    "min.cleanable.dirty.ratio": "0.01",
                    "min.compaction.lag.ms": "0",
                    "delete.retention.ms": "100",
                },
            )
        ],
    )
    path = files / "compacted.log"
    lines = [f"line {index}" for index in range(8)]
    write_lines(path, lines[:1])
    rest.create(
        connector,
        file_source(path, name("compacted-out"), **{"offsets.storage.topic": offsets_topic}),
    )
    for count in range(1, len(lines) + 1):
        if count > 1:
            time.sleep(0.2)  # past segment.ms, so the next commit rolls a segment
            write_lines(path, lines[count - 1 : count], append=True)
        rest.wait_for_offsets(
            connector,
            lambda o, n=count: o and o[0]["offset"]["position"] == byte_position(lines, n),
        )
        run = run_refresh(cluster=cluster, spark=spark)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    row = SourceOffset.objects.get(cluster=cluster, connector=connector, topic=offsets_topic)
    assert row.commits >= len(lines)

    def left_in_topic() -> int:
        return sum(1 for _ in reading.read_topic(kafka, offsets_topic, timeout=5))

    # The cleaner compacts the rolled segments: fewer records than commits remain.
    wait_until(left_in_topic, lambda left: left < row.commits, timeout=90, what="compaction")
    # The history holds every commit read, from the connector's topic and from the worker's
    # (a connector with its own topic, without exactly-once, writes to both).
    history = partition_history(cluster=cluster, connector=connector, key_hash=row.key_hash)
    assert len(history) >= row.commits > left_in_topic()

    full = run_refresh(cluster=cluster, spark=spark, full=True)
    assert full.status == RefreshRun.Status.SUCCEEDED, full.error
    rows = SourceOffset.objects.filter(cluster=cluster, connector=connector, effective=True)
    worker = rest.offsets(connector)["offsets"]
    assert worker[0]["offset"]["position"] == byte_position(lines, len(lines))
    assert canonical([{"partition": r.partition, "offset": r.offset} for r in rows]) == canonical(
        worker
    )
    # `--full` rebuilds from what the topics hold now: the commits compaction removed are
    # gone from the history, as the README says (an operator chooses it knowingly).
    after = partition_history(cluster=cluster, connector=connector, key_hash=row.key_hash)
    assert row.commits <= len(after) < len(history)
    rest.delete(connector)
