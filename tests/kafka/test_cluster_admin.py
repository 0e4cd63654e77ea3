import pytest

from offsets.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="root-password"))
    return client


@pytest.fixture
def cluster():
    return Cluster.objects.create(
        name="prod",
        bootstrap_servers="k:9093",
        client_config={"security.protocol": "SASL_SSL", "sasl.password": "hunter2-secret"},
    )


def form_data(cluster, client_config):
    return {
        "name": cluster.name,
        "bootstrap_servers": cluster.bootstrap_servers,
        "client_config": client_config,
        "offsets_topic": cluster.offsets_topic,
        "configs_topic": cluster.configs_topic,
        "status_topic": cluster.status_topic,
        "connect_url": "",
        "offset_flush_interval_ms": 60000,
        "refresh_every_seconds": 60,
    }


def test_the_admin_never_renders_a_sasl_password(admin_client, cluster):
    response = admin_client.get(f"/admin/offsets/cluster/{cluster.pk}/change/")
    assert response.status_code == 200
    assert b"hunter2-secret" not in response.content
    assert b"********" in response.content


def test_saving_with_the_mask_keeps_the_stored_secret(admin_client, cluster):
    data = form_data(cluster, '{"security.protocol": "SASL_SSL", "sasl.password": "********"}')
    data["bootstrap_servers"] = "k2:9093"
    response = admin_client.post(f"/admin/offsets/cluster/{cluster.pk}/change/", data)
    assert response.status_code == 302, response.content[:2000]
    cluster.refresh_from_db()
    assert cluster.bootstrap_servers == "k2:9093"
    assert cluster.client_config["sasl.password"] == "hunter2-secret"


def test_a_new_secret_replaces_the_stored_one(admin_client, cluster):
    data = form_data(cluster, '{"security.protocol": "SASL_SSL", "sasl.password": "new-one"}')
    assert (
        admin_client.post(f"/admin/offsets/cluster/{cluster.pk}/change/", data).status_code == 302
    )
    cluster.refresh_from_db()
    assert cluster.client_config["sasl.password"] == "new-one"


def test_the_mask_for_a_secret_never_stored_is_refused(admin_client, cluster):
    data = form_data(cluster, '{"ssl.key.password": "********"}')
    response = admin_client.post(f"/admin/offsets/cluster/{cluster.pk}/change/", data)
    assert response.status_code == 200
    assert b"enter the secret value, not the mask" in response.content
    cluster.refresh_from_db()
    assert cluster.client_config["sasl.password"] == "hunter2-secret"


def test_a_standalone_worker_is_registered_with_its_offsets_file(admin_client, db):
    data = {
        "name": "edge",
        "kind": "standalone",
        "bootstrap_servers": "",
        "offsets_file": "/data/connect.offsets",
        "client_config": "{}",
        "offsets_topic": "connect-offsets",
        "configs_topic": "connect-configs",
        "status_topic": "connect-status",
        "offset_flush_interval_ms": "60000",
        "refresh_every_seconds": "60",
    }
    assert admin_client.post("/admin/offsets/cluster/add/", data).status_code == 302
    cluster = Cluster.objects.get(name="edge")
    assert (cluster.kind, cluster.offsets_file) == ("standalone", "/data/connect.offsets")
