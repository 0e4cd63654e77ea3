"""Sinks whose offsets live outside Connect's group, on the REAL worker.

A sink copying records and committing their offsets through a transactional producer into a
group on a second broker (KIP-656's MirrorSinkTask case: the project's TransactionalOffsetsSink)
and the project's ExternalOffsetsSink with its properties file: each shows its lag from its
store once an admin says where it is, and an edit of that store, applied with the connector stopped, is
where the sink resumes (its output file shows the records read again). The second broker is
the session's scratch broker (`fresh_kafka`); names carry this module run's suffix.
"""

import uuid

import pytest

from offsets.edits.workflow import (
    OffsetChange,
    StageRequest,
    StoreChange,
    apply_edit,
    cancel_edit,
    stage,
)
from offsets.kafka import admin, groups, producers
from offsets.models import (
    AuditEvent,
    Cluster,
    ConnectorSnapshot,
    OffsetEdit,
    RefreshRun,
    SinkOffsetsStore,
    SinkPartitionLag,
)
from offsets.refresh.run import run_refresh
from offsets.sink_stores import StoreSetting, plugin_file
from tests.support.connect_rest import STRING_CONVERTERS, wait_until
from tests.support.edit_steps import approve_and_apply
from tests.support.worker_files import produce, topic_values

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
TRANSACTIONAL_SINK = "dev.offsetsdashboard.connectors.TransactionalOffsetsSinkConnector"
EXTERNAL_SINK = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"


def refresh(cluster, spark) -> ConnectorSnapshot:
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    return run


def lag_of(cluster, connector: str) -> tuple:
    (row,) = SinkPartitionLag.objects.filter(cluster=cluster, connector=connector)
    return (row.committed, row.log_end, row.lag_records, row.status, row.group)


def produce_more(kafka: dict, topic: str, values: list[str]) -> None:
    producer = producers.java_producer(kafka)
    for value in values:
        producer.produce(topic, value=value.encode(), on_delivery=producers.raise_on_delivery_error)
    assert producer.flush(10) == 0


def wait_for_lines(path, expected: list[str]) -> None:
    wait_until(
        lambda: path.read_text().splitlines() if path.exists() else [],
        lambda lines: lines == expected,
        timeout=90,
        what=f"{path.name} holding {expected}",
    )


def stop(rest, connector: str) -> None:
    rest.stop(connector)
    rest.wait_for_state(connector, "STOPPED")


def test_a_sink_committing_into_a_group_on_another_cluster_lags_and_resumes_from_an_edit(
    cluster,
    rest,
    kafka,
    fresh_kafka,
    spark,
    history_dir,
    logged_in_client,
    editor,
    approver,
    tmp_path,
    settings,
):
    settings.LAG_SAMPLE_SECONDS = 0
    connector, topic, group = f"txsink-{RUN}", f"txsink-{RUN}-in", f"txsink-{RUN}-offsets"
    target_kafka = {"bootstrap.servers": fresh_kafka}
    output = tmp_path / "tx.txt"
    produce(kafka, topic, [f"v{i}" for i in range(5)])
    # The copies' topic: the target's broker refuses offsets of a topic it does not have.
    admin.create_topics(target_kafka, [admin.TopicSpec(topic, 1, {})])
    rest.create(
        connector,
        {
            "connector.class": TRANSACTIONAL_SINK,
            "tasks.max": "1",
            "topics": topic,
            "file": str(output),
            "target.bootstrap.servers": fresh_kafka,
            "target.group.id": group,
            **STRING_CONVERTERS,
        },
    )
    try:
        wait_for_lines(output, [f"v{i}" for i in range(5)])
        wait_until(
            lambda: groups.committed_offsets(target_kafka, group),
            lambda offsets: offsets == {(topic, 0): 5},
            timeout=60,
            what=f"{group}'s offsets on the second broker",
        )
        # Committed with the offsets in one transaction: the copies are there too.
        assert topic_values(target_kafka, topic) == [f"v{i}" for i in range(5)]
        target = Cluster.objects.create(name=f"target-{RUN}", bootstrap_servers=fresh_kafka)

        # Connect's group has no commit: read there, the sink seems to lag by every record.
        refresh(cluster, spark)
        assert lag_of(cluster, connector) == (None, 5, 5, "OK", f"connect-{connector}")

        SinkOffsetsStore.objects.create(
            cluster=cluster,
            connector=connector,
            kind=SinkOffsetsStore.Kind.REMOTE_GROUP,
            group_id=group,
            group_cluster=target,
        )
        refresh(cluster, spark)
        assert lag_of(cluster, connector) == (5, 5, 0, "OK", group)
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        where = f"group {group} on cluster {target.name}"
        assert (snapshot.offsets_store, snapshot.offsets_store_error) == (where, "")
        assert (snapshot.lag_records, snapshot.offsets_managed_externally) == (0, False)
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{connector}/")
        assert f"Offsets read from {where}" in page.content.decode()
        body = logged_in_client.get(
            f"/api/v1/clusters/{cluster.name}/connectors/{connector}/lag/"
        ).json()
        assert (body["offsets_store"], body["lag_records"]) == (where, 0)

        # Stopped, with 3 more records: it lags by them, from the group on the other cluster.
        stop(rest, connector)
        produce_more(kafka, topic, ["v5", "v6", "v7"])
        refresh(cluster, spark)
        assert lag_of(cluster, connector) == (5, 8, 3, "STOP", group)

        # An edit of that group, applied with the connector stopped: shifted back by 3 from
        # its 5, to offset 2. Staged through the API by an editor with a sink strategy.
        logged_in_client.force_login(editor)
        staged = logged_in_client.post(
            "/api/v1/edits/",
            {
                "cluster": cluster.name,
                "connector": connector,
                "strategy": "store-offset",
                "as": "shift",
                "shift": -3,
            },
            content_type="application/json",
        )
        assert staged.status_code == 201, staged.content
        edit = OffsetEdit.objects.get(pk=staged.json()["id"])
        assert (edit.group_id, edit.parameters["store"]["cluster"]) == (group, target.name)
        assert (edit.parameters["as"], edit.parameters["value"]) == ("shift", -3)
        edit = approve_and_apply(edit, editor, approver)
        assert edit.state == OffsetEdit.State.APPLIED, edit.error
        assert [check["name"] for check in edit.lock_checks][:3] == [
            "connector-stopped",
            "group-inactive",
            "nothing-moved",
        ]
        assert groups.committed_offsets(target_kafka, group) == {(topic, 0): 2}
        applied = AuditEvent.objects.get(edit_id=edit.pk, action=AuditEvent.Action.APPLIED)
        assert applied.details["store"] == where

        # Resumed, it reads again from the edited offset: v2 to v7 follow the first five.
        rest.resume(connector)
        wait_for_lines(output, [f"v{i}" for i in range(5)] + [f"v{i}" for i in range(2, 8)])
        wait_until(
            lambda: groups.committed_offsets(target_kafka, group),
            lambda offsets: offsets == {(topic, 0): 8},
            timeout=60,
            what=f"{group} caught up",
        )
    finally:
        rest.delete(connector)


def test_the_plugins_file_store_shows_the_lag_and_takes_an_edit_the_sink_resumes_from(
    cluster,
    rest,
    kafka,
    spark,
    history_dir,
    logged_in_client,
    editor,
    approver,
    tmp_path,
    settings,
):
    settings.LAG_SAMPLE_SECONDS = 0
    connector, topic = f"filestore-{RUN}", f"filestore-{RUN}-in"
    output, offsets_file = tmp_path / "out.txt", tmp_path / "sink.offsets"
    produce(kafka, topic, [f"w{i}" for i in range(4)])
    rest.create(
        connector,
        {
            "connector.class": EXTERNAL_SINK,
            "tasks.max": "1",
            "topics": topic,
            "file": str(output),
            "offsets.file": str(offsets_file),
            **STRING_CONVERTERS,
        },
    )
    try:
        wait_for_lines(output, [f"w{i}" for i in range(4)])

        # Its class keeps its offsets elsewhere: no lag, and the page suggests its own file.
        refresh(cluster, spark)
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        assert (snapshot.offsets_managed_externally, snapshot.lag_records) == (True, None)
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{connector}/")
        hint = page.content.decode().split('id="offsets-outside"')[1].split("</p>")[0]
        assert f"<code>{offsets_file}</code>" in hint
        assert "kind=plugin_file" in hint and "offsets_file=" in hint
        assert not SinkOffsetsStore.objects.filter(connector=connector).exists()

        SinkOffsetsStore.objects.create(
            cluster=cluster,
            connector=connector,
            kind=SinkOffsetsStore.Kind.PLUGIN_FILE,
            offsets_file=str(offsets_file),
        )
        refresh(cluster, spark)
        assert lag_of(cluster, connector) == (4, 4, 0, "OK", "")
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        assert (snapshot.offsets_managed_externally, snapshot.lag_records) == (False, 0)
        assert snapshot.offsets_store == f"offsets file {offsets_file}"
        # An edit of Connect's group says it would not move this sink.
        group_edit = stage(
            cluster=cluster,
            connector=connector,
            user=editor,
            change=OffsetChange(StageRequest("earliest")),
        )
        assert any(f"read from offsets file {offsets_file}" in w for w in group_edit.warnings)
        cancel_edit(edit=group_edit, user=editor)

        # Applied while the connector runs, the lock check refuses it and writes nothing.
        edit = stage(
            cluster=cluster,
            connector=connector,
            user=editor,
            change=StoreChange(StageRequest("offset", value=1)),
        )
        edit = approve_and_apply(edit, editor, approver)
        assert edit.state == OffsetEdit.State.APPROVED
        refused = [check["name"] for check in edit.lock_checks if not check["passed"]]
        assert refused == ["connector-stopped"], edit.error
        assert plugin_file.read(StoreSetting("plugin_file", path=str(offsets_file))) == {
            (topic, 0): 4
        }

        stop(rest, connector)
        produce_more(kafka, topic, ["w4"])
        refresh(cluster, spark)
        assert lag_of(cluster, connector) == (4, 5, 1, "STOP", "")

        edit = apply_edit(edit=edit, user=approver)
        assert edit.state == OffsetEdit.State.APPLIED, edit.error
        page = logged_in_client.get(f"/clusters/{cluster.name}/edits/{edit.pk}/")
        assert f"offsets file {offsets_file}" in page.content.decode()
        store = StoreSetting("plugin_file", path=str(offsets_file))
        assert plugin_file.read(store) == {(topic, 0): 1}
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]

        # The edit page's table shows the offsets its form edits: the store's; and the
        # Connect group's (never committed by this sink) when that group is to be edited.
        edits_page = f"/clusters/{cluster.name}/connectors/{connector}/edits/"
        html = logged_in_client.get(edits_page).content.decode()
        assert f'data-partition="{topic}-0"><td>{topic}-0</td><td>1</td>' in html
        assert f"Committed as the plugin&#x27;s file {offsets_file} holds them" in html
        html = logged_in_client.get(f"{edits_page}?into=group").content.decode()
        assert f'data-partition="{topic}-0"><td>{topic}-0</td><td>\u2013</td>' in html
        assert 'id="offsets-read-from"' not in html

        rest.resume(connector)
        wait_for_lines(output, [f"w{i}" for i in range(4)] + [f"w{i}" for i in range(1, 5)])
    finally:
        rest.delete(connector)
