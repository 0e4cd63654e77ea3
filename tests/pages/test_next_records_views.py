"""A stuck sink's next records, without a broker: when the section shows, that contents need
the record viewer role (and without it nothing is read from Kafka), a broker that cannot be
read shown in place, hostile names kept as data, and who may skip."""

import pytest
from django.urls import reverse

from offsets.queries import next_records
from offsets.rights.roles import RECORD_VIEWERS_GROUP, ensure_role_groups
from tests.support import factories
from tests.support.users import user_with

pytestmark = pytest.mark.django_db

NAME = 'sink"<b>x</b>'


@pytest.fixture
def cluster():
    # Port 1: nothing listens there, so a read fails at once and visibly.
    return factories.cluster("c1")


@pytest.fixture
def record_viewer(db, django_user_model):
    user = user_with(django_user_model, "rita")
    user.groups.add(ensure_role_groups()[RECORD_VIEWERS_GROUP])
    return user


@pytest.fixture
def no_kafka(monkeypatch):
    """Fail the test on any read of a record."""

    def refuse(*args, **kwargs):
        raise AssertionError("a record was read")

    monkeypatch.setattr(next_records.kafka_records, "records_at", refuse)


def stuck_sink(cluster, status="STALL", **fields):
    factories.run(cluster)
    snapshot = factories.snapshot(cluster, NAME, "sink", **fields)
    factories.sink_lags(cluster, NAME, "orders", 2, status=status)
    factories.sink_lags(cluster, NAME, "idle", 1, status="OK", lag_records=0)
    return snapshot


def url(cluster, tail=""):
    return reverse("connector-next-records", args=[cluster.name, NAME]) + tail


def page_url(cluster):
    return reverse("connector", args=[cluster.name, NAME])


def test_a_healthy_sink_has_no_section_and_reads_nothing(client, cluster, record_viewer, no_kafka):
    stuck_sink(cluster, status="OK")
    client.force_login(record_viewer)
    page = client.get(page_url(cluster))
    assert page.status_code == 200
    assert 'id="next-records-section"' not in page.content.decode()
    html = client.get(url(cluster)).content.decode()
    assert "The sink is not stuck now" in html


@pytest.mark.parametrize(
    ("status", "tasks"), [("STALL", {"0": "RUNNING"}), ("STOP", {}), ("OK", {"0": "FAILED"})]
)
def test_a_stalled_stopped_or_failed_sink_offers_its_next_records(
    client, cluster, user, no_kafka, status, tasks
):
    stuck_sink(cluster, status=status, task_states=tasks)
    client.force_login(user)
    page = client.get(page_url(cluster)).content.decode()
    assert 'id="next-records-section"' in page and 'id="show-next-records"' in page
    # The section loads on a click, never with the page or its polls.
    assert 'hx-trigger="click from:#show-next-records"' in page
    shown = client.get(page_url(cluster) + "?records=show").content.decode()
    assert 'hx-trigger="load"' in shown


def test_without_the_role_the_positions_show_the_role_is_named_and_nothing_is_read(
    client, cluster, user, no_kafka, settings
):
    settings.ACCESS_CONTACT = "#kafka-help on chat"
    stuck_sink(cluster)
    client.force_login(user)
    html = client.get(url(cluster)).content.decode()
    assert 'id="record-role-needed"' in html
    assert "record viewer" in html and "Record viewers" in html and "#kafka-help on chat" in html
    assert "The sink reads offset 90 next." in html and "The sink reads offset 91 next." in html
    assert 'id="record-idle-0"' not in html  # no lag: not listed
    assert "Skip this record" not in html  # a viewer stages nothing
    api = client.get(f"/api/v1{url(cluster)}").json()
    assert not api["may_read"] and api["contact"] == "#kafka-help on chat"
    assert [(row["position"], row["record"]) for row in api["partitions"]] == [
        (90, None),
        (91, None),
    ]


def test_an_editor_without_the_role_can_skip_at_the_position(client, cluster, editor, no_kafka):
    stuck_sink(cluster)
    client.force_login(editor)
    html = client.get(url(cluster)).content.decode()
    assert html.count("Skip this record") == 2
    assert 'name="offset" value="90"' in html and "to offset 91" in html


def test_a_broker_that_cannot_be_read_is_said_in_place(client, cluster, record_viewer, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    stuck_sink(cluster)
    client.force_login(record_viewer)
    response = client.get(url(cluster))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-field="record-error"') == 2
    assert "orders-0" in html and 'id="record-role-needed"' not in html


def test_the_connector_name_is_data_everywhere(client, cluster, editor, no_kafka):
    stuck_sink(cluster)
    client.force_login(editor)
    html = client.get(url(cluster)).content.decode()
    assert "<b>x</b>" not in html


def test_outside_the_grants_it_is_an_unknown_connector_and_a_viewer_may_not_skip(
    client, cluster, django_user_model, user, no_kafka
):
    stuck_sink(cluster)
    stranger = django_user_model.objects.create_user("stranger", password="x")
    client.force_login(stranger)
    assert client.get(url(cluster)).status_code == 404
    assert client.post(url(cluster, "skip/"), {}).status_code == 404
    assert client.get(f"/api/v1{url(cluster)}").status_code == 404
    client.force_login(user)
    body = {"topic": "orders", "partition": 0, "offset": 90}
    assert client.post(url(cluster, "skip/"), body).status_code == 403
    api = client.post(f"/api/v1{url(cluster, 'skip/')}", body, content_type="application/json")
    assert api.status_code == 403


def test_a_skip_without_its_record_is_bad_input(client, cluster, editor, no_kafka):
    stuck_sink(cluster)
    client.force_login(editor)
    response = client.post(url(cluster, "skip/"), {"topic": "orders", "partition": "-1"})
    assert response.status_code == 400
    assert "needs its topic, partition and offset" in response.content.decode()
    api = client.post(
        f"/api/v1{url(cluster, 'skip/')}", {"topic": "orders"}, content_type="application/json"
    )
    assert api.status_code == 400 and set(api.json()) == {"partition", "offset"}
