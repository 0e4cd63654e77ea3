import pytest

from offsets.models import Cluster

pytestmark = pytest.mark.django_db


def test_pages_require_login(client):
    Cluster.objects.create(name="c1", bootstrap_servers="127.0.0.1:1")
    for url in ("/", "/clusters/c1/connectors/", "/clusters/c1/live/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")


def test_home_lists_clusters(logged_in_client):
    Cluster.objects.create(name="prod-eu", bootstrap_servers="kafka:9092")
    response = logged_in_client.get("/")
    assert response.status_code == 200
    assert b"prod-eu" in response.content


def test_home_explains_how_to_add_a_cluster_when_there_is_none(logged_in_client):
    response = logged_in_client.get("/")
    assert b"add_cluster" in response.content


def test_an_unknown_cluster_is_a_404(logged_in_client):
    assert logged_in_client.get("/clusters/nope/connectors/").status_code == 404
    assert logged_in_client.get("/clusters/nope/live/").status_code == 404


def test_an_unreachable_broker_is_reported_not_a_crash(logged_in_client, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    Cluster.objects.create(name="down", bootstrap_servers="127.0.0.1:1")
    response = logged_in_client.get("/clusters/down/live/")
    assert response.status_code == 503
    assert b"Cannot read the cluster" in response.content
    assert b"did not answer" in response.content


@pytest.mark.integration
def test_the_live_state_page_lists_the_demo_connectors_with_their_states(
    logged_in_client, demo_cluster
):
    response = logged_in_client.get("/clusters/demo/live/")
    assert response.status_code == 200
    html = response.content.decode()
    for name in (
        "jdbc-source-inventory",
        "mm2-us-east-source",
        "es-sink-clicks",
        "legacy-inventory-source",
    ):
        assert f'data-connector="{name}"' in html
    assert "deleted (offsets remain)" in html
    assert "MirrorMaker 2" in html
    assert "own offsets topic (exactly-once)" in html
    assert "search-indexer-clicks" in html
    for state in ("RUNNING", "PAUSED", "STOPPED", "FAILED"):
        assert f">{state}<" in html
    # Secrets from connector configs never reach the page.
    assert "s3cr3t-inventory" not in html
