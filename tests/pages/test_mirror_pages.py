"""A MirrorMaker 2 source's page without lag: why, and how to choose its upstream cluster."""

import pytest

from tests.support import factories as make

pytestmark = pytest.mark.django_db

MIRROR_CONFIG = {
    "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "source.cluster.alias": "east",
    "source.cluster.bootstrap.servers": "east-1:9092,east-2:9092",
}


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    return cluster


def mirror(cluster, **fields):
    return make.snapshot(
        cluster,
        "mirror",
        connector_class=MIRROR_CONFIG["connector.class"],
        config=MIRROR_CONFIG,
        mirrormaker2=True,
        source_alias="east",
        lag_status="",
        **fields,
    )


def hint(client) -> str:
    html = client.get("/clusters/prod/connectors/mirror/").content.decode()
    return html.split('id="upstream-hint"')[1].split("</p>")[0]


def test_without_an_upstream_the_page_says_how_to_choose_one(logged_in_client, prod):
    mirror(prod)
    text = hint(logged_in_client)
    assert "Register the upstream cluster" in text
    assert f"/admin/offsets/mirrorupstream/add/?cluster={prod.pk}&amp;source_alias=east" in text


def test_the_registered_cluster_its_bootstrap_servers_name_is_suggested(logged_in_client, prod):
    east = make.cluster("east-kafka", bootstrap_servers="east-2:9092")
    mirror(prod)
    text = hint(logged_in_client)
    assert "<strong>east-kafka</strong>" in text
    assert f"upstream={east.pk}" in text


def test_an_upstream_that_did_not_answer_says_why(logged_in_client, prod):
    mirror(
        prod, upstream_cluster="east-kafka", upstream_error="Kafka at east-1:9092 did not answer"
    )
    html = logged_in_client.get("/clusters/prod/connectors/mirror/").content.decode()
    assert 'id="upstream-hint"' not in html
    error = html.split('id="upstream-error"')[1].split("</p>")[0]
    assert "east-kafka did not answer" in error and "Kafka at east-1:9092" in error


def test_the_admin_form_opens_filled_in(admin_client, prod):
    east = make.cluster("east-kafka", bootstrap_servers="east-1:9092")
    response = admin_client.get(
        f"/admin/offsets/mirrorupstream/add/?cluster={prod.pk}&source_alias=east&upstream={east.pk}"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'value="east"' in html and f'<option value="{east.pk}" selected>' in html
