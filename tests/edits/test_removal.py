"""Deleting a connector with its offsets and cleaning up orphaned offsets, without a broker:
the pure rules, the orphans list from stored rows, the refusals that write nothing, the API
and the pages. tests/edits/test_remove_connector.py runs the real thing."""

import pytest

from offsets.edits import connector_control
from offsets.edits.apply import apply_edit
from offsets.edits.kinds.removal import rules as removal_rules
from offsets.formats.offset_records import latest_offsets
from offsets.models import AuditEvent, OffsetEdit, OffsetEditChange, SourceOffset
from offsets.queries.orphans import orphans
from tests.support import factories as make
from tests.support.fake_connect_worker import FakeWorker, closed_port_url

NAME = "file-src"
KEY = b'["file-src",{"filename":"a"}]'
OTHER_KEY = b'["other",{"filename":"a"}]'


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch):
    monkeypatch.setattr(connector_control, "POLL_SECONDS", 0.05)


def removal_edit(cluster, user, *, strategy="remove", state="approved") -> OffsetEdit:
    """A removal of one source partition held in two offsets topics."""
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector=NAME,
        connector_type="source",
        strategy=strategy,
        state=state,
        created_by=user,
        primary_topic="own-offsets",
        mirror_topic="connect-offsets",
        parameters={
            "topics": ["connect-offsets", "own-offsets"],
            "tombstones": {"connect-offsets": 1, "own-offsets": 1},
        },
    )
    for position, topic in enumerate(["connect-offsets", "own-offsets"]):
        OffsetEditChange.objects.create(
            edit=edit,
            position=position,
            partition={"filename": "a"},
            key_bytes=KEY,
            topic=topic,
            before={"position": position},
            before_bytes=f'{{"position":{position}}}'.encode(),
            is_delete=True,
        )
    return edit


# --- Pure rules --------------------------------------------------------------------------------


def test_connector_keys_are_the_live_keys_of_that_connector_in_each_topic():
    worker = latest_offsets([(KEY, b'{"position":1}'), (OTHER_KEY, b'{"position":9}')]).offsets
    own = latest_offsets([(KEY, b'{"position":2}'), (KEY, None)]).offsets  # tombstoned
    keys = removal_rules.connector_keys({"w": worker, "own": own}, NAME)
    assert list(keys) == [("w", KEY)]
    assert keys[("w", KEY)].value_bytes == b'{"position":1}'


def test_a_changed_value_and_a_key_that_appeared_since_staging_both_count_as_moved():
    staged = {("w", KEY): b'{"position":1}', ("w", b"k2"): b"{}"}
    now = {("w", KEY): b'{"position":2}', ("w", b"k2"): b"{}", ("own", b"k3"): b"{}"}
    observed = removal_rules.moved(staged, now)
    moved = [item.label for item in observed if item.expected != item.current]
    assert moved == [f"w: {KEY.decode()}", "own: k3"]


def test_leftovers_name_each_topic_the_group_and_the_connector():
    left = removal_rules.leftovers(
        [("w", KEY), ("w", b"x"), ("own", KEY)], "connect-s", {("t", 0): 5}, True
    )
    assert left == [
        "2 live key(s) of the connector in w",
        "1 live key(s) of the connector in own",
        "1 committed partition(s) in group connect-s",
        "the connector still exists on the worker",
    ]
    assert removal_rules.leftovers([], "g", {}, False) == []


def test_the_plan_of_a_removal_stops_resets_tombstones_and_deletes_last():
    lines = removal_rules.plan_lines(
        strategy="remove",
        connector=NAME,
        tombstones={"connect-offsets": 3, "own": 2},
        group_id="",
        group_partitions=0,
    )
    assert lines[0].startswith("Stop file-src")
    assert "Write 3 tombstone(s) to connect-offsets" in lines[2]
    assert "Write 2 tombstone(s) to own" in lines[3]
    assert lines[4] == "Delete the connector file-src on the worker."
    cleanup = removal_rules.plan_lines(
        strategy="cleanup", connector="s", tombstones={}, group_id="connect-s", group_partitions=4
    )
    assert cleanup[0] == "Delete consumer group connect-s (4 committed partition(s))."
    assert not any(line.startswith(("Stop", "Delete the connector")) for line in cleanup)


def test_steps_say_nothing_before_the_first_and_keep_the_first_error():
    steps = removal_rules.Steps()
    assert steps.text() == "nothing"
    steps.add("stop", "Stopped.")
    steps.failed("tombstones", "No tombstone was written to w.")
    steps.failed("delete", "later")
    assert steps.error == "No tombstone was written to w."
    assert steps.text() == "Stopped. No tombstone was written to w. later"


# --- Orphans from the stored rows ---------------------------------------------------------------


@pytest.mark.django_db
def test_orphans_are_deleted_connectors_with_live_offsets_in_any_topic_or_a_group():
    cluster = make.cluster("c1")
    make.snapshot(cluster, "alive")
    make.source_offsets(cluster, "alive", 2)
    make.source_offsets(cluster, "gone", 3)
    make.source_offsets(cluster, "gone", 1, topic="gone-own-offsets")
    tombstoned = make.source_offsets(cluster, "tombstoned", 2)
    SourceOffset.objects.filter(pk__in=[row.pk for row in tombstoned]).update(
        offset=None, offset_text=None
    )
    make.snapshot(cluster, "old-sink", "sink", deleted=True, partitions=4)
    make.snapshot(cluster, "empty-sink", "sink", deleted=True, partitions=0)

    found = orphans(cluster)

    assert [(o.connector, o.type) for o in found] == [("gone", "source"), ("old-sink", "sink")]
    assert found[0].topics == {"connect-offsets": 3, "gone-own-offsets": 1}
    assert (found[1].group, found[1].partitions) == ("connect-old-sink", 4)


@pytest.mark.django_db
def test_the_api_lists_orphans_and_404s_an_unknown_cluster(logged_in_client):
    cluster = make.cluster("c1")
    make.source_offsets(cluster, "gone", 2)
    answer = logged_in_client.get("/api/v1/clusters/c1/orphans/")
    assert answer.status_code == 200
    assert answer.json() == [
        {
            "connector": "gone",
            "type": "source",
            "topics": {"connect-offsets": 2},
            "group": "",
            "partitions": 0,
        }
    ]
    assert logged_in_client.get("/api/v1/clusters/nope/orphans/").status_code == 404


@pytest.mark.django_db
def test_the_orphans_page_offers_a_clean_up_to_editors_only(client, editor, user):
    cluster = make.cluster("c1")
    make.source_offsets(cluster, "gone<b>", 2)
    client.force_login(user)
    page = client.get("/clusters/c1/orphans/").content.decode()
    assert "gone&lt;b&gt;" in page and "Clean up" not in page
    client.force_login(editor)
    page = client.get("/clusters/c1/orphans/").content.decode()
    assert 'action="/clusters/c1/connectors/gone%3Cb%3E/remove/cleanup/"' in page


# --- Staging refusals ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_staging_needs_the_editor_role_a_known_cluster_and_a_reachable_kafka(
    client, user, editor, settings
):
    settings.KAFKA_READ_TIMEOUT = 1  # its Kafka is a closed port: no answer comes later
    make.cluster("c1")
    client.force_login(user)
    url = "/api/v1/clusters/c1/connectors/x/delete/"
    assert client.post(url, {}, content_type="application/json").status_code == 403
    client.force_login(editor)
    assert client.post("/api/v1/clusters/nope/connectors/x/delete/").status_code == 404
    answer = client.post("/api/v1/clusters/c1/connectors/x/cleanup/", {}, "application/json")
    assert answer.status_code == 503 and answer.json()["detail"]
    assert not OffsetEdit.objects.exists()


@pytest.mark.django_db
def test_the_page_answers_a_refused_staging_in_place_with_its_status(client, editor, settings):
    settings.KAFKA_READ_TIMEOUT = 1  # its Kafka is a closed port: no answer comes later
    make.cluster("c1")
    client.force_login(editor)
    answer = client.post("/clusters/c1/connectors/x/remove/delete/", HTTP_HX_REQUEST="true")
    assert answer.status_code == 503
    assert "could not be reached" in answer.content.decode()
    assert client.post("/clusters/c1/connectors/x/remove/nope/").status_code == 404


# --- Apply refusals: nothing written, the edit stays approved -----------------------------------


def assert_refused(edit: OffsetEdit, words: str) -> None:
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED, edit.error
    assert words in edit.error
    assert "Nothing was done" in edit.error
    refused = edit.audit_events.get(action=AuditEvent.Action.APPLY_REFUSED)
    assert words in refused.details["error"]


@pytest.mark.django_db
def test_a_removal_without_a_worker_url_is_refused(approver, editor):
    edit = removal_edit(make.cluster("c1"), editor)
    apply_edit(edit=edit, user=approver)
    assert_refused(edit, "has no worker URL")


@pytest.mark.django_db
def test_a_removal_with_the_worker_down_is_refused(approver, editor):
    edit = removal_edit(make.cluster("c1", connect_url=closed_port_url()), editor)
    apply_edit(edit=edit, user=approver)
    assert_refused(edit, "no Connect worker answered")


@pytest.mark.django_db
def test_a_removal_with_a_worker_url_answering_html_is_refused(approver, editor):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, b"<!doctype html><title>Grafana</title>", "text/html")
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor)
        apply_edit(edit=edit, user=approver)
    assert_refused(edit, "answered HTML")
    assert [r["method"] for r in worker.requests] == ["GET"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (200, {"commit": "c"}, "answered no version"),
        (200, b"{trunc", "not valid JSON"),
        (401, {"message": "no"}, "refused the credentials"),
    ],
)
def test_a_removal_with_a_malformed_or_refusing_worker_answer_is_refused(
    approver, editor, status, body, words
):
    with FakeWorker() as worker:
        worker.answer("GET", "/", status, body)
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor)
        apply_edit(edit=edit, user=approver)
    assert_refused(edit, words)


@pytest.mark.django_db
def test_a_removal_of_a_connector_the_worker_does_not_know_is_refused(approver, editor):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, {"version": "3.6.1", "commit": "c"})
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor)
        apply_edit(edit=edit, user=approver)
    assert_refused(edit, "has no connector 'file-src'")
    assert {r["method"] for r in worker.requests} == {"GET"}


@pytest.mark.django_db
def test_a_removal_whose_stop_does_not_finish_is_refused_before_anything_is_deleted(
    approver, editor, monkeypatch
):
    monkeypatch.setattr(connector_control, "WAIT_SECONDS", 0.2)
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, {"version": "3.6.1", "commit": "c"})
        worker.connector(NAME, NAME)
        worker.answer("GET", f"/connectors/{NAME}/config", 200, {"connector.class": "x"})
        worker.on_put = {}  # the worker accepts the stop but never gets there
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor)
        apply_edit(edit=edit, user=approver)
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED
    assert "not STOPPED with no tasks" in edit.error and "Nothing was deleted" in edit.error
    assert "DELETE" not in {r["method"] for r in worker.requests}


@pytest.mark.django_db
def test_a_clean_up_of_a_connector_that_exists_on_the_worker_is_refused(approver, editor):
    with FakeWorker() as worker:
        worker.answer("GET", f"/connectors/{NAME}/config", 200, {"connector.class": "x"})
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor, strategy="cleanup")
        apply_edit(edit=edit, user=approver)
    assert_refused(edit, "exists on the worker")


@pytest.mark.django_db
def test_a_clean_up_the_worker_cannot_confirm_is_refused(approver, editor):
    with FakeWorker() as worker:
        worker.answer("GET", f"/connectors/{NAME}/config", 200, b"{not json", "application/json")
        edit = removal_edit(make.cluster("c1", connect_url=worker.url), editor, strategy="cleanup")
        apply_edit(edit=edit, user=approver)
    assert_refused(edit, "could not confirm")
    assert "not valid JSON" in edit.error


# --- The edit's page -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_removal_edit_page_shows_the_plan_and_each_tombstones_topic(client, editor):
    edit = removal_edit(make.cluster("c1"), editor, state="draft")
    client.force_login(editor)
    page = client.get(f"/clusters/c1/edits/{edit.pk}/").content.decode()
    assert 'id="removal-plan"' in page
    assert "Write 1 tombstone(s) to own-offsets" in page
    assert "Delete the connector file-src on the worker." in page
    assert 'data-topic="own-offsets"' in page and 'data-topic="connect-offsets"' in page


# --- Which strategy a connector takes ------------------------------------------------------------


def context(deleted: bool):
    from offsets.domain.connectors import Connector

    return Connector(
        name=NAME,
        type="source",
        deleted=deleted,
        target_state=None if deleted else "STOPPED",
        connector_state=None,
        task_states={},
        mirrormaker2=False,
    )


@pytest.mark.parametrize(
    ("strategy", "deleted", "on_worker", "refused"),
    [
        ("remove", False, True, None),
        ("remove", False, None, None),  # no worker answer: the config topic decides
        ("remove", True, None, "does not exist any more"),
        ("remove", False, False, "does not exist on the worker"),
        ("cleanup", True, False, None),
        ("cleanup", True, None, None),
        ("cleanup", True, True, "still exists (on the worker)"),
        ("cleanup", False, False, "still exists (in the config topic)"),
    ],
)
def test_a_removal_needs_the_connector_and_a_clean_up_needs_it_gone_everywhere(
    strategy, deleted, on_worker, refused
):
    from offsets.edits.errors import EditStateConflict
    from offsets.edits.kinds.removal.kind import check_strategy

    if refused is None:
        check_strategy(strategy, context(deleted), on_worker)
    else:
        with pytest.raises(
            EditStateConflict, match=refused.replace("(", r"\(").replace(")", r"\)")
        ):
            check_strategy(strategy, context(deleted), on_worker)


@pytest.mark.django_db
def test_the_connector_page_offers_a_delete_to_editors_on_a_cluster_with_a_worker(
    client, editor, user
):
    cluster = make.cluster("c1", connect_url="http://127.0.0.1:1")
    make.run(cluster)
    make.snapshot(cluster, "live-src")
    make.snapshot(cluster, "dead-src", deleted=True, target_state="")
    client.force_login(user)
    assert (
        "Delete connector with its offsets"
        not in client.get("/clusters/c1/connectors/live-src/").content.decode()
    )
    client.force_login(editor)
    page = client.get("/clusters/c1/connectors/live-src/").content.decode()
    assert 'action="/clusters/c1/connectors/live-src/remove/delete/"' in page
    assert "Delete connector with its offsets" in page
    page = client.get("/clusters/c1/connectors/dead-src/").content.decode()
    assert 'action="/clusters/c1/connectors/dead-src/remove/cleanup/"' in page


@pytest.mark.django_db
def test_the_clusters_page_links_each_cluster_to_its_orphans(logged_in_client):
    make.cluster("c1")
    page = logged_in_client.get("/").content.decode()
    assert 'href="/clusters/c1/orphans/"' in page
