"""Delete a connector with its offsets, and clean up offsets that outlived one, against the REAL
Connect worker of the test session: the worker's answers, every offsets topic read back, the
group, the audit log, the orphans list after a refresh, and the refusals that write nothing."""

import dataclasses
import urllib.parse
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devkit import embedded_config
from offsets.domain.workers import worker_capabilities
from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditStateConflict
from offsets.edits.reconcile import reconcile_edit
from offsets.edits.workflow import Cleanup, Removal, stage
from offsets.formats.connector_paths import to_segment
from offsets.formats.offset_records import latest_offsets
from offsets.kafka import admin, groups, offsets_writer, reading
from offsets.kafka.connect_rest import ConnectRest as ConnectRestAdapter
from offsets.models import AuditEvent, Cluster, OffsetEdit, RefreshRun
from offsets.queries.orphans import orphans
from offsets.refresh.run import run_refresh
from tests.support import factories as make
from tests.support.connect_rest import ConnectRest, wait_until
from tests.support.edit_steps import approve, approve_and_apply
from tests.support.edits_factory import make_stuck
from tests.support.fake_connect_worker import FakeWorker, closed_port_url
from tests.support.worker_files import file_sink, file_source, two_line_source

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
WORKER_TOPIC = embedded_config.WORKER_TOPICS["offsets_topic"]


def source(rest: ConnectRest, tmp_path: Path, what: str) -> tuple[str, Path]:
    """Start a FileStreamSource that has committed position 8 (two lines)."""
    return two_line_source(
        rest, f"rm {RUN} {what}", tmp_path / f"{what}.log", f"rm-{RUN}-{what}-out"
    )


def assert_deleted(rest: ConnectRest, connector: str) -> None:
    """The worker no longer has the connector: its config is gone as DELETE answers, its
    status once the worker reads back its status tombstone (`wait_until_forgotten`)."""
    name = urllib.parse.quote(connector, safe="")
    assert rest.request("GET", f"/connectors/{name}/config")[0] == 404
    rest.wait_until_forgotten(connector)


def keys_of(cluster: Cluster, topic: str, connector: str) -> dict[bytes, bytes | None]:
    """The last record of each of the connector's keys in `topic`, tombstones included."""
    last: dict[bytes, bytes | None] = {}
    for record in reading.read_topic(cluster.kafka_settings(), topic, timeout=30):
        if record.key and record.key.startswith(f'["{connector}",'.encode()):
            last[record.key] = record.value
    return last


def live_keys(cluster: Cluster, topic: str, connector: str) -> dict[bytes, bytes]:
    records = reading.read_topic(cluster.kafka_settings(), topic, timeout=30)
    latest = latest_offsets((r.key, r.value) for r in records)
    return {k: r.value_bytes for k, r in latest.offsets.items() if r.connector == connector}


def steps_of(edit: OffsetEdit) -> list[str]:
    event = edit.audit_events.get(action__in=[AuditEvent.Action.APPLIED, AuditEvent.Action.FAILED])
    return [step["step"] for step in event.details["steps"]]


def test_a_source_with_its_own_topic_and_older_offsets_elsewhere_is_deleted_with_all_of_them(
    cluster, rest, tmp_path, editor, approver
):
    connector, path = source(rest, tmp_path, "own")
    own_topic, old_topic = f"rm-{RUN}-own-offsets", f"rm-{RUN}-old-offsets"
    # Its own topic from now on: the next commit goes there (and to the worker's topic).
    rest.call(
        "PUT",
        f"/connectors/{urllib.parse.quote(connector, safe='')}/config",
        file_source(path, f"rm-{RUN}-own-out", **{"offsets.storage.topic": own_topic}),
    )
    # The task restarts with the new config: its offsets store creates the own topic as it
    # starts, after the old task stopped. A line written before that could be read and
    # committed by the old task, to the worker's topic only.
    wait_until(
        lambda: own_topic in AdminClient(cluster.kafka_settings()).list_topics(timeout=10).topics,
        bool,
        timeout=60,
        what=f"the restarted task's topic {own_topic}",
    )
    with path.open("a") as file:
        file.write("three\n")
    # An entry's offset may be null for a moment while the task restarts.
    rest.wait_for_offsets(
        connector, lambda o: bool(o) and (o[0]["offset"] or {}).get("position") == 14
    )
    wait_until(lambda: live_keys(cluster, own_topic, connector), bool, timeout=30, what="own topic")
    # A third offsets topic the dashboard knows holds its key (an own topic of an earlier
    # config): written with the dashboard's writer, recorded as a refresh would.
    (key,) = live_keys(cluster, WORKER_TOPIC, connector)
    admin.create_topics(
        cluster.kafka_settings(),
        [admin.TopicSpec(old_topic, 1, {"cleanup.policy": "compact"})],
    )
    offsets_writer.write_transaction(
        cluster.kafka_settings(),
        [offsets_writer.OffsetWrite(old_topic, key, b'{"position":3}')],
        transactional_id=f"test-{RUN}",
    )
    make.source_offsets(cluster, connector, 1, topic=old_topic)

    edit = stage(
        cluster=cluster, connector=connector, user=editor, change=Removal(), comment="retire"
    )
    assert edit.strategy == "remove" and edit.state == "draft"
    staged = {(c.topic, bytes(c.key_bytes)): bytes(c.before_bytes) for c in edit.changes.all()}
    assert staged == {
        (WORKER_TOPIC, key): b'{"position":14}',
        (own_topic, key): b'{"position":14}',
        (old_topic, key): b'{"position":3}',
    }
    approve_and_apply(edit, editor, approver)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    # A worker's reset of a connector with its own topic can hang (removal_apply._reset):
    # such a connector's offsets are tombstoned directly, one transaction per topic.
    steps = steps_of(edit)
    assert steps == ["stop", "reset-skipped", "tombstones", "tombstones", "tombstones", "delete"]
    assert edit.applied_via == "topic"
    assert_deleted(rest, connector)
    for topic in (WORKER_TOPIC, own_topic, old_topic):
        assert keys_of(cluster, topic, connector) == {key: None}, topic
    applied = edit.audit_events.get(action=AuditEvent.Action.APPLIED)
    assert applied.details["verified"] is True
    assert AuditEvent.objects.filter(
        cluster=cluster, connector=connector, action=AuditEvent.Action.STOPPED
    ).exists()


def running_sink(cluster: Cluster, rest: ConnectRest, tmp_path: Path, what: str):
    """A FileStreamSink that has committed offset 3 of its one-partition topic."""
    topic, connector = f"rm-{RUN}-{what}-in", f"rm {RUN} {what}"
    kafka = cluster.kafka_settings()
    admin.create_topics(kafka, [admin.TopicSpec(topic, 1, {})])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for value in (b"a", b"b", b"c"):
        producer.produce(topic, value=value)
    producer.flush(10)
    rest.create(connector, file_sink(tmp_path / f"{what}.out", topic))
    group = f"connect-{connector}"
    wait_until(
        lambda: groups.committed_offsets(kafka, group),
        lambda committed: committed.get((topic, 0)) == 3,
        timeout=60,
        what="the sink's commit",
    )
    return connector, topic, group


def test_a_sink_is_deleted_with_its_consumer_group(
    cluster, rest, tmp_path, client, editor, approver
):
    connector, topic, group = running_sink(cluster, rest, tmp_path, "sink")
    kafka = cluster.kafka_settings()
    # Staged from the connector's page: the edit's page comes next, with the plan.
    client.force_login(editor)
    segment = urllib.parse.quote(to_segment(connector), safe="")
    staged = client.post(f"/clusters/{cluster.name}/connectors/{segment}/remove/delete/")
    assert staged.status_code == 302, staged.content
    page = client.get(staged["Location"]).content.decode()
    assert f"Delete consumer group {group} (1 committed partition(s))." in page
    edit = OffsetEdit.objects.get(cluster=cluster, connector=connector)
    assert edit.strategy == "remove"
    assert [(c.topic, c.kafka_partition, c.before) for c in edit.changes.all()] == [
        (topic, 0, {"kafka_offset": 3})
    ]
    approve_and_apply(edit, editor, approver)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    # The worker resets a sink's offsets by deleting its group (KIP-875).
    assert steps_of(edit) == ["stop", "reset", "delete"]
    assert edit.applied_via == "worker"
    assert groups.committed_offsets(kafka, group) == {}
    assert groups.describe_group(kafka, group).state == "DEAD"
    assert_deleted(rest, connector)


def test_offsets_of_a_connector_deleted_on_the_worker_are_listed_then_cleaned_up(
    cluster, rest, tmp_path, client, editor, approver, spark, settings
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    connector, _ = source(rest, tmp_path, "orphan")
    sink, _, group = running_sink(cluster, rest, tmp_path, "orphan-sink")
    (key,) = live_keys(cluster, WORKER_TOPIC, connector)
    for name in (connector, sink):
        rest.delete(name)
        rest.wait_until_forgotten(name)
    assert run_refresh(cluster=cluster, spark=spark).status == RefreshRun.Status.SUCCEEDED

    listed = {orphan.connector: orphan for orphan in orphans(cluster)}
    assert listed[connector].topics == {WORKER_TOPIC: 1}
    assert (listed[sink].type, listed[sink].group, listed[sink].partitions) == ("sink", group, 1)
    client.force_login(editor)
    assert (
        f'data-connector="{connector}"'
        in client.get(f"/clusters/{cluster.name}/orphans/").content.decode()
    )
    segment = urllib.parse.quote(to_segment(connector), safe="")
    answer = client.post(
        f"/api/v1/clusters/{cluster.name}/connectors/{segment}/cleanup/",
        {"comment": "left over"},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    edit = OffsetEdit.objects.get(pk=answer.json()["id"])
    assert edit.strategy == "cleanup" and edit.changes.count() == 1
    approve_and_apply(edit, editor, approver)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == "topic"
    assert steps_of(edit) == ["absent", "tombstones"]
    assert keys_of(cluster, WORKER_TOPIC, connector) == {key: None}

    edit = stage(cluster=cluster, connector=sink, user=editor, change=Cleanup())
    approve_and_apply(edit, editor, approver)
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert steps_of(edit) == ["absent", "group-delete"]
    assert groups.committed_offsets(cluster.kafka_settings(), group) == {}

    assert run_refresh(cluster=cluster, spark=spark).status == RefreshRun.Status.SUCCEEDED
    left = {orphan.connector for orphan in orphans(cluster)}
    assert connector not in left and sink not in left


def test_a_clean_up_of_a_live_connector_and_an_unknown_name_are_refused(
    cluster, rest, tmp_path, client, editor
):
    connector, _ = source(rest, tmp_path, "alive")
    with pytest.raises(EditStateConflict, match="still exists"):
        stage(cluster=cluster, connector=connector, user=editor, change=Cleanup())
    client.force_login(editor)
    segment = urllib.parse.quote(to_segment(connector), safe="")
    url = f"/api/v1/clusters/{cluster.name}/connectors/{segment}/cleanup/"
    answer = client.post(url, {}, content_type="application/json")
    assert answer.status_code == 409 and "still exists" in answer.json()["detail"]
    unknown = f"/api/v1/clusters/{cluster.name}/connectors/no-such-{RUN}/delete/"
    answer = client.post(unknown, {}, content_type="application/json")
    assert answer.status_code == 404 and f"no-such-{RUN}" in answer.json()["detail"]
    assert not OffsetEdit.objects.exists()
    rest.delete(connector)


@pytest.mark.parametrize("worker_kind", ["closed-port", "html"])
def test_a_removal_whose_worker_is_down_or_not_a_worker_writes_nothing(
    cluster, rest, tmp_path, editor, approver, worker_kind
):
    connector, _ = source(rest, tmp_path, f"kept-{worker_kind}")
    before = live_keys(cluster, WORKER_TOPIC, connector)
    edit = approve(
        stage(cluster=cluster, connector=connector, user=editor, change=Removal()), editor, approver
    )
    with FakeWorker() as fake:
        fake.answer("GET", "/", 200, b"<html><title>Login</title></html>", "text/html")
        url = closed_port_url() if worker_kind == "closed-port" else fake.url
        Cluster.objects.filter(pk=cluster.pk).update(connect_url=url)
        edit.cluster.refresh_from_db()
        apply_edit(edit=edit, user=approver)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED
    words = "no Connect worker answered" if worker_kind == "closed-port" else "answered HTML"
    assert words in edit.error and "Nothing was done" in edit.error
    assert rest.status(connector)["connector"]["state"] == "RUNNING"
    assert live_keys(cluster, WORKER_TOPIC, connector) == before
    # Staging with such a worker warns that it could not be asked.
    again = stage(cluster=edit.cluster, connector=connector, user=editor, change=Removal())
    assert any("could not be asked" in warning for warning in again.warnings), again.warnings

    # An apply whose process died leaves the edit applying: reconciling it reads back what
    # is left (everything, here) and says so.
    Cluster.objects.filter(pk=cluster.pk).update(connect_url=rest.url)
    make_stuck(edit)
    reconcile_edit(edit=edit, user=approver)
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    assert f"1 live key(s) of the connector in {WORKER_TOPIC}" in edit.error
    assert "the connector still exists on the worker" in edit.error
    rest.delete(connector)


def test_on_a_worker_without_kip875_writes_the_offsets_are_tombstoned_directly(
    cluster, rest, tmp_path, editor, approver, monkeypatch
):
    connector, _ = source(rest, tmp_path, "old-worker")
    (key,) = live_keys(cluster, WORKER_TOPIC, connector)
    real_info = ConnectRestAdapter.worker_info

    def as_connect_3_5(self):
        info = real_info(self)
        return dataclasses.replace(info, capabilities=worker_capabilities("3.5.2"))

    monkeypatch.setattr(ConnectRestAdapter, "worker_info", as_connect_3_5)
    edit = stage(cluster=cluster, connector=connector, user=editor, change=Removal())
    approve_and_apply(edit, editor, approver)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert edit.applied_via == "topic"
    assert steps_of(edit) == ["stop", "reset-skipped", "tombstones", "delete"]
    assert keys_of(cluster, WORKER_TOPIC, connector)[key] is None
    assert_deleted(rest, connector)
