import pytest

from offsets.models import Cluster

pytestmark = pytest.mark.django_db


def test_the_api_requires_login(client):
    assert client.get("/api/v1/clusters/").status_code == 401
    assert client.get("/api/v1/schema/").status_code == 401


def test_it_lists_clusters_without_their_client_secrets(logged_in_client):
    Cluster.objects.create(
        name="c1", bootstrap_servers="k:9092", client_config={"sasl.password": "hunter2"}
    )
    response = logged_in_client.get("/api/v1/clusters/")
    assert response.status_code == 200
    assert response.json() == [
        {
            "name": "c1",
            "kind": "distributed",
            "offsets_file": "",
            "bootstrap_servers": "k:9092",
            "offsets_topic": "connect-offsets",
            "configs_topic": "connect-configs",
            "status_topic": "connect-status",
            "connect_url": "",
            "connect_urls": [],
            "connect_username": "",
            "connect_password_set": False,
            "connectors": 0,
            "counts_by_state": {},
            "failed_tasks": 0,
            "total_sink_lag": None,
            "worst_lag_status": None,
            "last_refresh": None,
            "last_successful_refresh": None,
            "results_as_of": None,
            "results_age_seconds": None,
            "stale": False,
            "warning": None,
        }
    ]
    assert b"hunter2" not in response.content


def test_it_says_which_clusters_are_standalone_workers_and_where_their_file_is(
    logged_in_client, tmp_path
):
    Cluster.objects.create(name="d1", bootstrap_servers="k:9092")
    Cluster.objects.create(
        name="s1", kind=Cluster.Kind.STANDALONE, offsets_file=str(tmp_path / "offsets.dat")
    )
    listed = {c["name"]: c for c in logged_in_client.get("/api/v1/clusters/").json()}
    assert (listed["d1"]["kind"], listed["d1"]["offsets_file"]) == ("distributed", "")
    assert (listed["s1"]["kind"], listed["s1"]["offsets_file"]) == (
        "standalone",
        str(tmp_path / "offsets.dat"),
    )


def test_connector_state_of_an_unknown_cluster_is_404(logged_in_client):
    assert logged_in_client.get("/api/v1/clusters/nope/state/").status_code == 404


def test_connector_state_of_an_unreachable_cluster_is_503(logged_in_client, settings):
    settings.KAFKA_READ_TIMEOUT = 1  # a closed port: no answer comes later
    Cluster.objects.create(name="down", bootstrap_servers="127.0.0.1:1")
    response = logged_in_client.get("/api/v1/clusters/down/state/")
    assert response.status_code == 503
    assert "did not answer" in response.json()["detail"]


@pytest.mark.integration
def test_connector_state_lists_the_demo_connectors(logged_in_client, demo_cluster):
    response = logged_in_client.get("/api/v1/clusters/demo/state/")
    assert response.status_code == 200
    by_name = {c["name"]: c for c in response.json()}
    assert by_name["es-sink-clicks"]["sink_group"] == "search-indexer-clicks"
    assert by_name["file-source-audit"]["target_state"] == "STOPPED"
    assert by_name["jdbc-source-inventory"]["task_states"] == {"0": "RUNNING", "1": "RUNNING"}


def test_the_openapi_schema_is_served(logged_in_client):
    response = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200
    assert "/api/v1/clusters/" in response.json()["paths"]
