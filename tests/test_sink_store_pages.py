"""A sink's offsets store on its page, in the admin and the API: where they were read, why
they could not be, and for a class known to keep them elsewhere, the setting to add."""

import pytest
from django.core.exceptions import ValidationError

from offsets.models import SinkOffsetsStore
from tests import factories as make

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


def test_a_group_on_another_cluster_is_a_valid_store(prod):
    target = make.cluster("target")
    SinkOffsetsStore(
        cluster=prod, connector="files", kind="remote_group", group_id="g", group_cluster=target
    ).full_clean()
