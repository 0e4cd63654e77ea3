"""Least privilege for edits, proven on the secured runtime: a principal holding exactly
SECURITY.md's viewing and editing sets applies edits directly (a source's transaction, a
sink group's commit and delete), through the worker's HTTPS REST API (KIP-875) and removes a
connector; without one ACL of the editing set an edit names the missing permission and
writes nothing."""

import secrets
import uuid

import pytest

from devkit.secured import create_acls, delete_acls
from offsets.edits.workflow import Removal, stage
from offsets.kafka import offsets_writer
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support import secured_runtime
from tests.support.edit_steps import approve_and_apply, stage_approve_apply
from tests.support.worker_files import file_sink, file_source, stopped, write_lines

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
SOURCE = f"sed-{RUN}-source"
SINK = f"sed-{RUN}-sink"
DATA_TOPIC = f"sed-{RUN}-data"
SINK_GROUP = f"connect-{SINK}"
OFFSETS_TOPIC = secured_runtime.WORKER_TOPICS["offsets_topic"]
State = OffsetEdit.State


@pytest.fixture(scope="module")
def editing(secured_kafka, tmp_path_factory) -> dict:
    """A stopped file source and file sink with offsets committed, and a principal of its
    own (a client certificate) holding exactly the viewing and editing sets."""
    rest = secured_kafka.rest()
    folder = tmp_path_factory.mktemp("secured-edits")
    write_lines(folder / "in.txt", ["one", "two"])
    rest.create(SOURCE, file_source(folder / "in.txt", DATA_TOPIC))
    rest.wait_for_offsets(SOURCE, lambda o: o and o[0]["offset"]["position"] == 8)
    rest.create(SINK, file_sink(folder / "out.txt", DATA_TOPIC))
    rest.wait_for_offsets(SINK, lambda o: o and o[0]["offset"]["kafka_offset"] == 2)
    stopped(rest, SOURCE)
    stopped(rest, SINK)
    client = secured_kafka.authority.client_files(f"editor-{RUN}", secrets.token_hex(8))
    principal = client.principal
    viewing = secured_runtime.viewing_acls(
        principal,
        connect_topics=secured_runtime.WORKER_TOPICS.values(),
        data_topics=[DATA_TOPIC],
        sink_groups=[SINK_GROUP],
    )
    editing = secured_runtime.editing_acls(
        principal, offsets_topics=[OFFSETS_TOPIC], sink_groups=[SINK_GROUP]
    )
    # The other secured modules refresh as the dashboard's own principals, and a refresh sees
    # every connector of the shared worker: they may view these two as well.
    shared = [
        binding
        for other in (
            f"User:{secured_runtime.DASHBOARD_USER}",
            secured_kafka.dashboard_cert.principal,
        )
        for binding in secured_runtime.viewing_acls(
            other, connect_topics=[], data_topics=[DATA_TOPIC], sink_groups=[SINK_GROUP]
        ).values()
        if binding.resource_pattern_type.name == "LITERAL"
    ]
    create_acls(secured_kafka.setup, [*viewing.values(), *editing.values(), *shared])
    settings = secured_kafka.mutual_tls(client)
    del settings["bootstrap.servers"]
    return {"rest": rest, "folder": folder, "settings": settings, "acls": editing}


def register(name, secured_kafka, editing, monkeypatch, *, worker: bool):
    return secured_runtime.register(
        f"{name}-{'worker' if worker else 'direct'}",
        secured_kafka.info.ssl_bootstrap,
        editing["settings"],
        secured_kafka,
        monkeypatch,
        worker=worker,
    )


def held(editing, connector: str) -> list:
    """What the worker says the connector's offsets are now."""
    return [entry["offset"] for entry in editing["rest"].offsets(connector)["offsets"]]


def source_edit(editing, cluster, editor, approver) -> OffsetEdit:
    """Set the source's one partition to a position it does not hold yet."""
    (now,) = held(editing, SOURCE)
    return stage_approve_apply(
        cluster, SOURCE, editor, approver,
        strategy="set",
        partition={"filename": str(editing["folder"] / "in.txt")},
        offset={"position": now["position"] + 1},
    )  # fmt: skip


def sink_edit(editing, cluster, editor, approver) -> OffsetEdit:
    """Commit the sink's one partition at an offset it does not hold yet (or holds none)."""
    now = held(editing, SINK)
    value = 0 if now and now[0]["kafka_offset"] else 1
    return stage_approve_apply(cluster, SINK, editor, approver, strategy="offset", value=value)


def sink_delete(editing, cluster, editor, approver) -> OffsetEdit:
    """Delete the sink group's committed offsets (directly: the whole group is deleted)."""
    return stage_approve_apply(cluster, SINK, editor, approver, strategy="delete-offsets")


@pytest.mark.parametrize("worker", [False, True], ids=["direct", "through-the-worker"])
def test_the_editing_set_applies_source_and_sink_edits(
    editing, secured_kafka, editor, approver, monkeypatch, worker
):
    cluster = register("edits", secured_kafka, editing, monkeypatch, worker=worker)
    via = "worker" if worker else "topic"

    for edit_of in (source_edit, sink_edit, sink_delete, sink_edit):
        edit = edit_of(editing, cluster, editor, approver)
        assert edit.state == State.APPLIED, (edit_of.__name__, edit.error)
        assert edit.applied_via == via, edit_of.__name__
    assert held(editing, SINK) == [{"kafka_offset": edit.changes.get().after["kafka_offset"]}]


def test_the_editing_set_removes_a_connector(editing, secured_kafka, editor, approver, monkeypatch):
    connector = f"sed-{RUN}-removed"
    rest = editing["rest"]
    write_lines(editing["folder"] / "removed.txt", ["one"])
    rest.create(connector, file_source(editing["folder"] / "removed.txt", DATA_TOPIC))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 4)
    cluster = register("removal", secured_kafka, editing, monkeypatch, worker=True)

    edit = approve_and_apply(
        stage(cluster=cluster, connector=connector, user=editor, change=Removal()), editor, approver
    )

    assert edit.state == State.APPLIED, edit.error
    assert connector not in rest.call("GET", "/connectors")


WRONG_REST = {
    "password": ({"connect_password": "not-the-password-4711"}, "HTTP 401"),
    "client-certificate": ({"connect_cert_file": "", "connect_key_file": ""}, "BAD_CERTIFICATE"),
}


@pytest.mark.parametrize("wrong", WRONG_REST)
def test_a_worker_refusing_the_rest_login_leaves_the_edit_approved_with_one_plain_message(
    editing, secured_kafka, editor, approver, monkeypatch, wrong
):
    fields, cause = WRONG_REST[wrong]
    cluster = register(f"wrong-rest-{wrong}", secured_kafka, editing, monkeypatch, worker=True)
    Cluster.objects.filter(pk=cluster.pk).update(**fields)
    cluster.refresh_from_db()
    before = held(editing, SOURCE)

    edit = source_edit(editing, cluster, editor, approver)

    # Not written around: wrong credentials are a setup to fix, not a worker away.
    assert edit.state == State.APPROVED, (edit.state, edit.error)
    assert edit.error.startswith("The Connect worker: ") and cause in edit.error, edit.error
    assert "\n" not in edit.error and "not-the-password-4711" not in edit.error
    assert held(editing, SOURCE) == before


def transactional_id(cluster) -> str:
    return offsets_writer.transactional_id(cluster.name, SOURCE)


# Each editing ACL: the direct edit that needs it, its connector, and what a refusal names.
NEEDED_BY = {
    f"WRITE the topic {OFFSETS_TOPIC!r}": (
        source_edit, SOURCE, lambda cluster: f"WRITE the topic {OFFSETS_TOPIC!r}"
    ),
    f"WRITE the transactional ids prefixed {secured_runtime.TRANSACTIONAL_ID_PREFIX!r}": (
        source_edit, SOURCE,
        lambda cluster: f"WRITE the transactional id {transactional_id(cluster)!r}",
    ),
    f"READ the consumer group {SINK_GROUP!r}": (
        sink_edit, SINK, lambda cluster: f"READ the consumer group {SINK_GROUP!r}"
    ),
    f"DELETE the consumer group {SINK_GROUP!r}": (
        sink_delete, SINK, lambda cluster: f"DELETE the consumer group {SINK_GROUP!r}"
    ),
}  # fmt: skip
EDITING_SET = list(NEEDED_BY)


# Ids without the run's suffix: every test process must collect the same ones.
@pytest.mark.parametrize("missing", EDITING_SET, ids=[m.replace(RUN, "RUN") for m in EDITING_SET])
def test_without_one_acl_of_the_editing_set_an_edit_names_it_and_writes_nothing(
    editing, secured_kafka, editor, approver, monkeypatch, missing
):
    edit_of, connector, refused = NEEDED_BY[missing]
    binding = editing["acls"][missing]
    cluster = register(
        f"without-{EDITING_SET.index(missing)}", secured_kafka, editing, monkeypatch, worker=False
    )
    before = held(editing, connector)
    delete_acls(secured_kafka.setup, [binding])
    try:
        secured_runtime.wait_for_acl(secured_kafka.setup, binding, present=False)

        edit = edit_of(editing, cluster, editor, approver)
    finally:
        create_acls(secured_kafka.setup, [binding])
        secured_runtime.wait_for_acl(secured_kafka.setup, binding, present=True)

    assert edit.state == State.FAILED, (edit.state, edit.error)
    assert f"The dashboard's principal may not {refused(cluster)} (" in edit.error, edit.error
    assert "\n" not in edit.error and "Traceback" not in edit.error
    # Failed at once, or after reading the group back when the request's outcome was unknown.
    last = edit.audit_events.order_by("pk").last()
    assert last.action in (AuditEvent.Action.FAILED, AuditEvent.Action.RECONCILED)
    assert last.details["error"] == edit.error
    assert held(editing, connector) == before
