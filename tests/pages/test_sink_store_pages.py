"""A sink's offsets store on its page, in the admin and the API: where they were read, why
they could not be, and for a class known to keep them elsewhere, the setting to add; an
edit of the store staged from the connector's edit page with the sink form."""

from html import unescape
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from dashboard.pages.edits.forms import STORE_CHOICES
from offsets.models import OffsetEdit, SinkOffsetsStore
from tests.support import factories as make
from tests.support.sink_store_fakes import store_sink

pytestmark = pytest.mark.django_db

PLUGIN = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"
PAGE = "/clusters/prod/connectors/files/"


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    return cluster


def sink(cluster, **fields):
    return make.snapshot(
        cluster,
        "files",
        "sink",
        connector_class=PLUGIN,
        config={"connector.class": PLUGIN, "offsets.file": "/data/files.offsets"},
        **fields,
    )


def test_a_plugin_sink_without_a_store_suggests_its_own_file(logged_in_client, prod):
    sink(prod, offsets_managed_externally=True, lag_records=None, lag_status="")
    html = logged_in_client.get(PAGE).content.decode()
    hint = html.split('id="offsets-outside"')[1].split("</p>")[0]
    assert "<code>/data/files.offsets</code>" in hint
    assert (
        f"/admin/offsets/sinkoffsetsstore/add/?cluster={prod.pk}&amp;connector=files"
        "&amp;kind=plugin_file&amp;offsets_file=%2Fdata%2Ffiles.offsets"
    ) in hint
    assert not SinkOffsetsStore.objects.exists(), "nothing is stored until an admin saves it"


def test_a_sink_read_from_its_store_says_where_and_links_the_setting(logged_in_client, prod):
    row = SinkOffsetsStore.objects.create(
        cluster=prod, connector="files", kind="plugin_file", offsets_file="/data/files.offsets"
    )
    sink(prod, offsets_store="offsets file /data/files.offsets", lag_records=3)
    html = logged_in_client.get(PAGE).content.decode()
    where = html.split('id="offsets-store"')[1].split("</p>")[0]
    assert "Offsets read from offsets file /data/files.offsets" in where
    assert f"/admin/offsets/sinkoffsetsstore/{row.pk}/change/" in where
    assert 'id="offsets-outside"' not in html
    body = logged_in_client.get("/api/v1/clusters/prod/connectors/files/lag/").json()
    assert (body["offsets_store"], body["offsets_store_error"]) == (
        "offsets file /data/files.offsets",
        "",
    )


def test_a_store_that_could_not_be_read_says_why(logged_in_client, prod):
    sink(
        prod,
        offsets_store="offsets file /data/files.offsets",
        offsets_store_error="line 2: expected topic:partition=offset",
        lag_records=None,
        lag_status="",
    )
    html = logged_in_client.get(PAGE).content.decode()
    error = html.split('id="offsets-store-error"')[1].split("</p>")[0]
    assert "its lag is unknown: line 2: expected topic:partition=offset" in error


def test_the_admin_form_opens_filled_in_and_checks_each_kinds_fields(admin_client, prod):
    response = admin_client.get(
        f"/admin/offsets/sinkoffsetsstore/add/?cluster={prod.pk}&connector=files"
        "&kind=plugin_file&offsets_file=/data/files.offsets"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'value="files"' in html and 'value="/data/files.offsets"' in html
    refused = admin_client.post(
        "/admin/offsets/sinkoffsetsstore/add/",
        {"cluster": prod.pk, "connector": "files", "kind": "remote_group"},
    )
    assert refused.status_code == 200
    assert "Name the consumer group that holds the sink" in refused.content.decode()
    assert not SinkOffsetsStore.objects.exists()


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"kind": "remote_group", "group_id": "g"}, "group_cluster"),
        ({"kind": "plugin_file"}, "offsets_file"),
        ({"kind": "connect_group", "offsets_file": "/x"}, "offsets_file"),
        ({"kind": "plugin_file", "offsets_file": "/x", "group_id": "g"}, "group_id"),
    ],
)
def test_a_store_names_its_own_kinds_fields_and_no_other(prod, fields, refused):
    with pytest.raises(ValidationError) as raised:
        SinkOffsetsStore(cluster=prod, connector="files", **fields).full_clean()
    assert refused in raised.value.message_dict


def test_a_source_connector_gets_no_store_and_one_not_seen_yet_may(prod):
    make.snapshot(prod, "orders-source", "source")
    with pytest.raises(ValidationError) as raised:
        SinkOffsetsStore(cluster=prod, connector="orders-source").full_clean()
    assert "is a source connector on prod" in raised.value.message_dict["connector"][0]
    SinkOffsetsStore(cluster=prod, connector="not-refreshed-yet").full_clean()


def test_a_group_on_another_cluster_is_a_valid_store(prod):
    target = make.cluster("target")
    SinkOffsetsStore(
        cluster=prod, connector="files", kind="remote_group", group_id="g", group_cluster=target
    ).full_clean()


# --- Staging an edit of the store from the connector's edit page ------------------------------

EDITS = "/clusters/prod/connectors/files/edits/"


@pytest.fixture
def store_client(client, monkeypatch, prod, tmp_path, editor):
    client.force_login(editor)
    client.sink = store_sink(monkeypatch, prod, tmp_path)
    return client


def test_the_edit_page_offers_the_sink_form_for_the_store_naming_it(store_client):
    html = store_client.get(EDITS).content.decode()
    sentence = unescape(html.split('id="store-sentence"')[1].split("</p>")[0])
    assert f"keeps its offsets in the plugin's file {store_client.sink.path}" in sentence
    assert "the edit staged here writes them there" in sentence
    assert 'href="?into=group#stage"' in sentence
    tabs = html.split('class="tabs"')[1].split("</nav>")[0]
    assert [label for _, label in STORE_CHOICES] == [
        "To earliest",
        "To latest",
        "To an offset",
        "Shift by N",
        "To a date-time",
        "Back by a duration",
    ]
    assert all(f'data-strategy="{value}"' in tabs for value, _ in STORE_CHOICES)
    assert "copy-group" not in tabs and "delete-offsets" not in tabs


def test_a_staged_store_edit_shows_its_store_and_strategy(store_client):
    response = store_client.post(EDITS, {"strategy": "shift", "value": "-2", "partitions": ""})
    edit = OffsetEdit.objects.get()
    assert response.status_code == 302 and response.url == f"/clusters/prod/edits/{edit.pk}/"
    assert (edit.strategy, edit.parameters["as"], edit.parameters["value"]) == (
        "store-offset",
        "shift",
        -2,
    )
    html = store_client.get(response.url).content.decode()
    store = html.split('id="edit-store"')[1].split("</dd>")[0]
    assert f"offsets file {store_client.sink.path}, written there" in store
    assert 'id="edit-store-strategy">shifted by -2</dd>' in html


@pytest.mark.parametrize(
    ("posted", "error"),
    [
        ({"strategy": "offset"}, "A number is required."),
        ({"strategy": "offset", "value": "-1"}, "An offset is 0 or more."),
        ({"strategy": "datetime"}, "Choose the date-time."),
        ({"strategy": "latest", "partitions": "orders-7"}, "orders-7 is not a partition"),
    ],
)
def test_a_bad_input_on_the_store_form_is_named_and_stages_nothing(store_client, posted, error):
    response = store_client.post(EDITS, posted)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not OffsetEdit.objects.exists()


def test_connect_groups_form_stays_behind_its_warning(store_client):
    html = store_client.get(f"{EDITS}?into=group").content.decode()
    warning = html.split('id="store-group"')[1].split("</p>")[0]
    assert "not from its Connect group: an edit of the group does not move it" in warning
    assert 'data-strategy="copy-group"' in html
    assert '<input type="hidden" name="into" value="group">' in html
    assert 'id="store-sentence"' not in html


def test_a_store_that_cannot_be_read_offers_no_form_and_says_why(store_client):
    store_client.sink.holds("orders:0=5\n")
    html = store_client.get(EDITS).content.decode()
    why = html.split('id="store-unreadable"')[1].split("</p>")[0]
    assert "which cannot be read now" in why
    assert "line 1: expected topic:partition=offset" in why
    assert 'class="tabs"' not in html and "Stage the edit" not in html
    response = store_client.post(EDITS, {"strategy": "latest"})
    assert response.status_code == 400 and not OffsetEdit.objects.exists()
    assert 'id="store-unreadable"' in response.content.decode()


def test_a_store_linked_to_a_secret_says_why_without_quoting_it(store_client, tmp_path):
    # A line the masking of Kafka's text does not know: only the reader keeps it off the page.
    secret = tmp_path / "environ"
    secret.write_text("LOGIN=hunter2\n")
    Path(store_client.sink.path).unlink()
    Path(store_client.sink.path).symlink_to(secret)
    html = store_client.get(EDITS).content.decode()
    why = html.split('id="store-unreadable"')[1].split("</p>")[0]
    assert "line 1: expected topic:partition=offset" in why
    assert "hunter2" not in html
