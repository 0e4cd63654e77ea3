"""A move on the secured runtime: a principal holding exactly SECURITY.md's viewing set of both
Connect clusters' topics moves a stopped file source from the secured worker (A) to a second
secured Connect cluster (B: a worker group with its own config, offsets and status topics on
the same broker, over SASL_SSL, serving HTTPS with client certificates and basic auth). B's
worker holds the moved offsets, and resumed there the source goes on from them, not from the
file's start.

A move writes only through B's worker (create STOPPED, KIP-875 PATCH, read back), as B's
principal: the dashboard's own reads both clusters' topics, so no editing ACL is granted, and
ACLs only allow, so the viewing and editing sets together move it too."""

import secrets
import uuid

import pytest

from devkit.secured import SecuredKafka, create_acls
from offsets.edits.workflow import Move, stage
from offsets.models import OffsetEdit
from tests.support import secured_runtime
from tests.support.connect_rest import ConnectRest, canonical
from tests.support.edit_steps import approve_and_apply
from tests.support.worker_files import file_source, stopped, topic_values, write_lines

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
SOURCE = f"smv-{RUN}-source"
DATA_TOPIC = f"smv-{RUN}-data"
TARGET_GROUP = "tls-connect-b"
TARGET_TOPICS = {
    "offsets_topic": "tls-connect-b-offsets",
    "configs_topic": "tls-connect-b-configs",
    "status_topic": "tls-connect-b-status",
}


@pytest.fixture(scope="module")
def target(secured_kafka, tmp_path_factory):
    """B's worker, started by this module alone: only a move needs a second secured Connect
    cluster (about 20 s to start)."""
    runtime = SecuredKafka(tmp_path_factory.mktemp("secured-connect-b"))
    worker = runtime.start_secured_worker(
        secured_kafka.info,
        tls=secured_kafka.tls,
        users=secured_kafka.users,
        rest_users={secured_runtime.REST_USER: secured_kafka.rest_password},
        group_id=TARGET_GROUP,
        topics=TARGET_TOPICS,
    )
    yield worker.url
    runtime.stop_worker(worker)


@pytest.fixture(scope="module")
def mover(secured_kafka, target) -> dict:
    """A principal of its own (a client certificate) holding exactly the viewing set of both
    Connect clusters' topics; its client settings."""
    client = secured_kafka.authority.client_files(f"mover-{RUN}", secrets.token_hex(8))
    connect_topics = [*secured_runtime.WORKER_TOPICS.values(), *TARGET_TOPICS.values()]
    viewing = secured_runtime.viewing_acls(
        client.principal, connect_topics=connect_topics, data_topics=[], sink_groups=[]
    )
    create_acls(secured_kafka.setup, list(viewing.values()))
    settings = secured_kafka.mutual_tls(client)
    del settings["bootstrap.servers"]
    return settings


def test_the_viewing_set_moves_a_source_to_a_second_secured_cluster_which_resumes_from_it(
    secured_kafka, target, mover, editor, approver, client, monkeypatch, tmp_path
):
    rest_a = secured_kafka.rest()
    rest_b = ConnectRest(
        target,
        auth=(secured_runtime.REST_USER, secured_kafka.rest_password),
        context=secured_kafka.rest_context(),
    )
    path = tmp_path / "in.txt"
    write_lines(path, ["one", "two"])
    rest_a.create(SOURCE, file_source(path, DATA_TOPIC))
    rest_a.wait_for_offsets(SOURCE, lambda o: o and o[0]["offset"]["position"] == 8)
    stopped(rest_a, SOURCE)
    bootstrap = secured_kafka.info.ssl_bootstrap
    cluster_a = secured_runtime.register(
        f"move-a-{RUN}", bootstrap, mover, secured_kafka, monkeypatch
    )
    cluster_b = secured_runtime.register(
        f"move-b-{RUN}", bootstrap, mover, secured_kafka, monkeypatch,
        connect_url=target, topics=TARGET_TOPICS,
    )  # fmt: skip

    edit = approve_and_apply(
        stage(cluster=cluster_a, connector=SOURCE, user=editor, change=Move(cluster_b, {})),
        editor,
        approver,
    )

    assert edit.state == OffsetEdit.State.APPLIED, (edit.error, edit.lock_checks)
    assert edit.applied_via == "worker"
    moved = rest_b.offsets(SOURCE)["offsets"]
    assert canonical(moved) == canonical(rest_a.offsets(SOURCE)["offsets"])
    assert [entry["offset"] for entry in moved] == [{"position": 8}]
    assert rest_b.status(SOURCE)["connector"]["state"] == "STOPPED"

    # Resumed on B through the dashboard, the source reads on from the moved position: its
    # records reach the topic before its offset is committed, so at the new position the
    # topic holds each line once.
    client.force_login(approver)
    resumed = client.post(f"/api/v1/edits/{edit.pk}/resume-target/", {})
    assert resumed.status_code == 200, resumed.content
    rest_b.wait_for_state(SOURCE, "RUNNING", tasks=1)
    write_lines(path, ["three"], append=True)
    rest_b.wait_for_offsets(SOURCE, lambda o: o and o[0]["offset"]["position"] == 14)
    assert topic_values(secured_kafka.setup, DATA_TOPIC) == ["one", "two", "three"]
    rest_b.delete(SOURCE)
    rest_a.delete(SOURCE)
