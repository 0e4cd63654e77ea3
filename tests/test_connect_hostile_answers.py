"""A worker's answer is hostile data: redirects, malformed framing, drips and huge bodies.

A fake worker on loopback answers each shape; a second listener on another loopback address
stands for the host a redirect points at and records whatever reaches it. The adapter, the
worker page, the API and the connector controls answer each with the adapter's own errors,
never a 500, and no credential leaves for the second address.
"""

import pytest

from offsets.kafka.connect_rest import ConnectRedirected, ConnectRest, ConnectSettings
from offsets.models import AuditEvent, Cluster
from offsets.services import alert_channels
from offsets.services.alert_channels import DeliveryFailed
from tests.fake_connect_worker import FakeWorker

pytestmark = pytest.mark.django_db

SECRET = "worker-pw-9c2e55"
VERSION = {"version": "3.7.0", "commit": "abc", "kafka_cluster_id": "k"}


@pytest.fixture
def worker():
    with FakeWorker() as fake:
        fake.answer("GET", "/", 200, VERSION)
        yield fake


@pytest.fixture
def elsewhere():
    """Another host (a second loopback address) that records what reaches it."""
    with FakeWorker(host="127.0.0.2") as fake:
        fake.answer("GET", "/", 200, VERSION)
        yield fake


@pytest.fixture
def cluster(worker):
    return Cluster.objects.create(
        name="c1",
        bootstrap_servers="127.0.0.1:1",
        connect_url=worker.url,
        connect_username="dash",
        connect_password=SECRET,
    )


def rest(worker: FakeWorker, **settings) -> ConnectRest:
    return ConnectRest(
        ConnectSettings(urls=(worker.url,), username="dash", password=SECRET, timeout=5, **settings)
    )


# --- Redirects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_a_redirect_is_an_error_naming_its_target_and_is_never_followed(
    worker, elsewhere, status, method
):
    path = "/connectors/c/offsets"
    worker.redirect(method, path, f"{elsewhere.url}{path}?token=abc123", status)
    elsewhere.answer(method, path, 200, {"offsets": []})
    adapter = rest(worker)
    with pytest.raises(ConnectRedirected) as error:
        if method == "GET":
            adapter.offsets("c")
        else:
            adapter.alter_offsets("c", [])
    assert error.value.status == status
    assert f"redirects to {elsewhere.url}{path}" in error.value.message
    assert "abc123" not in error.value.message  # a token in the Location is masked
    assert elsewhere.requests == []


@pytest.mark.parametrize(
    "location", ["ftp://127.0.0.2/pub", "https://127.0.0.2:8443/", "http://127.0.0.1:notaport/"]
)
def test_a_redirect_to_another_scheme_or_a_bad_port_is_the_same_error(worker, location):
    worker.redirect("GET", "/", location)
    with pytest.raises(ConnectRedirected, match="redirects to"):
        rest(worker).worker_info()


def test_the_worker_page_and_api_report_a_redirect_and_send_nothing_elsewhere(
    client, user, worker, elsewhere, cluster
):
    worker.redirect("GET", "/", f"{elsewhere.url}/login")
    client.force_login(user)
    page = client.get("/clusters/c1/worker/")
    assert page.status_code == 200 and b"redirects to" in page.content
    api = client.get("/api/v1/clusters/c1/worker/")
    assert api.status_code == 502 and "redirects to" in api.json()["detail"]
    assert elsewhere.requests == []


def test_a_stop_answered_with_a_redirect_is_audited_and_nothing_reaches_the_target(
    client, editor, worker, elsewhere, cluster
):
    worker.redirect("PUT", "/connectors/src/stop", f"{elsewhere.url}/connectors/src/stop", 307)
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/src/stop/")
    assert response.status_code == 502 and "redirects to" in response.json()["detail"]
    assert AuditEvent.objects.get(connector="src").action == "control-failed"
    assert elsewhere.requests == []


def test_a_webhook_that_redirects_fails_naming_the_target_host_and_nothing_is_resent(
    worker, elsewhere
):
    worker.redirect("POST", "/hook", f"{elsewhere.url}/hook", 307)
    with pytest.raises(DeliveryFailed, match=r"a redirect to 127\.0\.0\.2 that is not followed"):
        alert_channels.post_json(f"{worker.url}/hook", "{}")
    assert elsewhere.requests == []
