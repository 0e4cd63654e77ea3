"""The record that broke it, on the REAL worker: a sink fails on one poison record; its page
shows that record (masked, escaped) to a record viewer and only its position to others; Skip
this record stages an edit past it, approved and applied with the connector stopped; the
resumed sink delivers everything after it and nothing before it twice."""

import uuid

import pytest

from offsets.kafka import groups
from offsets.models import AuditEvent, OffsetEdit
from offsets.rights.roles import RECORD_VIEWERS_GROUP, ensure_role_groups
from tests.support.connect_rest import wait_until
from tests.support.edit_steps import approve_and_apply
from tests.support.poison_sink import POISON, poisoned_sink
from tests.support.users import user_with

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]


@pytest.fixture
def record_viewer(db, django_user_model):
    user = user_with(django_user_model, "rita")
    user.groups.add(ensure_role_groups()[RECORD_VIEWERS_GROUP])
    return user


def test_the_poison_record_is_shown_skipped_and_the_resumed_sink_delivers_what_follows(
    cluster, rest, kafka, spark, history_dir, client, editor, approver, record_viewer, tmp_path
):
    name = f"poison-{RUN}"
    sink = poisoned_sink(rest, kafka, cluster, spark, name, tmp_path / "out.txt")
    try:
        base = f"/clusters/{cluster.name}/connectors/{name}/"
        client.force_login(record_viewer)
        page = client.get(base).content.decode()
        assert 'id="next-records-section"' in page and 'id="show-next-records"' in page

        # The record viewer sees the poison: its offset, key, headers and masked value.
        html = client.get(f"{base}next-records/").content.decode()
        record = html.split(f'id="record-{sink.topic}-0"')[1].split("</article>")[0]
        assert f'data-offset="{sink.poison_offset}"' in html
        assert f'data-field="record-offset">{sink.poison_offset}<' in record
        assert POISON in record and "order-42" in record
        assert "hunter2" not in html and "********" in record
        assert "&lt;script&gt;x&lt;/script&gt;" in record and "<script>x" not in html
        assert "trace-id" in record and "t-1" in record and "abc.def" not in html
        assert "Skip this record" not in html  # a record viewer alone stages nothing

        # The API answers the same, with the same roles.
        api = client.get(f"/api/v1{base}next-records/").json()
        (row,) = api["partitions"]
        assert api["shown"] and api["may_read"]
        assert row["record"]["offset"] == sink.poison_offset
        assert '"password": "********"' in row["record"]["value"]["text"]

        # An editor without the role sees the position and the role to ask for, no contents.
        client.force_login(editor)
        html = client.get(f"{base}next-records/").content.decode()
        assert 'id="record-role-needed"' in html and "record viewer" in html
        assert POISON not in html and "order-42" not in html
        assert f"reads offset {sink.poison_offset} next" in html
        api = client.get(f"/api/v1{base}next-records/").json()
        assert not api["may_read"] and api["partitions"][0]["record"] is None
        assert "record viewer role" in api["role_needed"]

        # The API's skip needs the editor role, as the page's does.
        client.force_login(record_viewer)
        refused = client.post(
            f"/api/v1{base}next-records/skip/",
            {"topic": sink.topic, "partition": 0, "offset": sink.poison_offset},
            content_type="application/json",
        )
        assert refused.status_code == 403 and "editor role" in refused.json()["detail"]
        assert client.post(f"{base}next-records/skip/", {}).status_code == 403
        client.force_login(editor)

        # Skip this record: staged as an edit to the offset after it; its page follows.
        response = client.post(
            f"{base}next-records/skip/",
            {"topic": sink.topic, "partition": 0, "offset": sink.poison_offset, "comment": "bad"},
        )
        assert response.status_code == 302
        edit = OffsetEdit.objects.get(cluster=cluster, connector=name)
        assert response["Location"] == f"/clusters/{cluster.name}/edits/{edit.pk}/"
        (change,) = edit.changes.all()
        assert (change.before, change.after) == (
            {"kafka_offset": sink.poison_offset},
            {"kafka_offset": sink.poison_offset + 1},
        )
        said = f"{sink.topic}-0 offset {sink.poison_offset}"
        link = f"{base}?records=show#record-{sink.topic}-0"
        assert said in edit.comment and link in edit.comment and "bad" in edit.comment
        staged = edit.audit_events.get(action=AuditEvent.Action.STAGED)
        assert said in staged.comment and link in staged.comment

        # Approved and applied by another user once the connector is stopped.
        rest.stop(name)
        rest.wait_for_state(name, "STOPPED")
        edit = approve_and_apply(edit, editor, approver)
        assert edit.state == OffsetEdit.State.APPLIED, edit.error
        rest.resume(name)
        lines = wait_until(
            lambda: sink.output.read_text().splitlines() if sink.output.exists() else [],
            lambda lines: len(lines) >= len(sink.before) + len(sink.after),
            timeout=90,
            what=f"{sink.output.name} holding every record after the poison",
        )
        assert lines == sink.before + sink.after
        rest.wait_for_state(name, "RUNNING", tasks=1)

        # Once the sink reads past the record, skipping it again (a stale page) is refused:
        # it would move the sink back.
        end = sink.poison_offset + 1 + len(sink.after)
        wait_until(
            lambda: groups.committed_offsets(kafka, f"connect-{name}"),
            lambda offsets: offsets.get((sink.topic, 0)) == end,
            timeout=90,
            what=f"the sink's group committed {end}",
        )
        stale = {"topic": sink.topic, "partition": 0, "offset": sink.poison_offset}
        refused = client.post(f"{base}next-records/skip/", stale)
        assert refused.status_code == 400
        assert f"already reads {sink.topic}-0 at offset {end}" in refused.content.decode()
        api = client.post(
            f"/api/v1{base}next-records/skip/", stale, content_type="application/json"
        )
        assert api.status_code == 400 and "Nothing was staged" in api.json()["offset"][0]
        assert OffsetEdit.objects.filter(cluster=cluster, connector=name).count() == 1
    finally:
        rest.delete(name)
