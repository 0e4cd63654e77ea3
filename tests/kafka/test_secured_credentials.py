"""Wrong credentials on the secured runtime: a refresh, the live page and the API each end with
one plain message, within the cluster's read timeout, that names the cause and never the secret
(nor does the alert a failed refresh raises);
a worker that refuses the dashboard's REST password or client certificate says so on the
worker page and in the API."""

import json
import secrets

import pytest
from django.urls import reverse
from django.utils import timezone

from offsets.alerts.evaluation import evaluate
from offsets.models import AlertDelivery, AlertRule, Cluster, ConnectorSnapshot, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support import secured_runtime
from tests.support.certificates import CertificateAuthority

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "not-the-password-4711"


def cluster_of(name: str, settings: dict) -> Cluster:
    bootstrap = settings.pop("bootstrap.servers")
    return Cluster.objects.create(
        name=name,
        bootstrap_servers=bootstrap,
        client_config=settings,
        **secured_runtime.WORKER_TOPICS,
    )


def refresh_of(name: str, settings: dict, spark) -> RefreshRun:
    cluster = cluster_of(name, settings)
    run = run_refresh(cluster=cluster, spark=spark)
    assert not ConnectorSnapshot.objects.filter(cluster=cluster).exists()
    return run


def assert_one_plain_line(message: str, cause: str, *secrets_: str) -> None:
    assert "did not answer within" in message and cause in message, message
    assert "\n" not in message and "Traceback" not in message
    for secret in secrets_:
        assert secret not in message


def test_a_wrong_scram_password_fails_the_refresh_with_one_plain_message(
    db, secured_kafka, spark, history_dir
):
    rule = AlertRule(
        name="on-call", channel=AlertRule.Channel.WEBHOOK, target="http://127.0.0.1:9/hook"
    )
    rule.full_clean()
    rule.save()
    run = refresh_of("wrong-password", secured_kafka.sasl(password=WRONG_PASSWORD), spark)

    assert run.status == RefreshRun.Status.FAILED
    assert_one_plain_line(run.error, "Authentication failed", WRONG_PASSWORD)
    # The alert it raises carries the same line, and no password either.
    evaluate(now=timezone.now())
    (delivery,) = AlertDelivery.objects.filter(body__condition="refresh-failing")
    body = json.dumps(delivery.body)
    assert "Authentication failed" in body
    assert WRONG_PASSWORD not in body
    assert secured_kafka.sasl()["sasl.password"] not in body


def test_an_untrusted_ca_fails_the_refresh_with_one_plain_message(
    db, secured_kafka, spark, history_dir, tmp_path
):
    stranger = CertificateAuthority(tmp_path / "stranger", "stranger-ca")
    settings = {**secured_kafka.sasl(), "ssl.ca.location": str(stranger.ca_file)}

    run = refresh_of("untrusted-ca", settings, spark)

    assert run.status == RefreshRun.Status.FAILED
    assert_one_plain_line(run.error, "certificate verify failed")


def test_an_expired_client_certificate_fails_the_refresh_with_one_plain_message(
    db, secured_kafka, spark, history_dir
):
    key_password = secrets.token_hex(8)
    expired = secured_kafka.authority.client_files(
        f"expired-{secrets.token_hex(4)}", key_password, expired=True
    )

    run = refresh_of("expired-cert", secured_kafka.mutual_tls(expired), spark)

    assert run.status == RefreshRun.Status.FAILED
    # The broker's TLS (Java) answers an expired certificate with this alert, not "expired".
    assert_one_plain_line(run.error, "alert certificate unknown", key_password)


def test_a_wrong_password_gives_one_plain_message_on_the_live_page_and_in_the_api(
    db, secured_kafka, admin_client
):
    cluster = cluster_of("wrong-password-live", secured_kafka.sasl(password=WRONG_PASSWORD))

    page = admin_client.get(reverse("live-state", args=[cluster.name]))
    answer = admin_client.get(reverse("api-connector-states", args=[cluster.name]))

    assert page.status_code == 503 and answer.status_code == 503
    assert_one_plain_line(answer.json()["detail"], "Authentication failed", WRONG_PASSWORD)
    assert "Authentication failed" in page.content.decode()
    assert WRONG_PASSWORD not in page.content.decode()


def worker_cluster(name: str, secured_kafka, **connect) -> Cluster:
    """A cluster whose worker URL is the secured worker's, reached with `connect`'s settings."""
    settings = secured_kafka.sasl()
    return Cluster.objects.create(
        name=name,
        bootstrap_servers=settings.pop("bootstrap.servers"),
        client_config=settings,
        connect_url=secured_kafka.info.connect_url,
        connect_username=secured_runtime.REST_USER,
        connect_ca_file=str(secured_kafka.tls.ca),
        **connect,
        **secured_runtime.WORKER_TOPICS,
    )


def rest_settings(secured_kafka, wrong: str) -> dict:
    cert = {
        "connect_cert_file": str(secured_kafka.rest_cert.cert),
        "connect_key_file": str(secured_kafka.rest_cert.key),
    }
    if wrong == "password":
        return {**cert, "connect_password": WRONG_PASSWORD}
    return {"connect_password": secured_kafka.rest_password}  # no client certificate


@pytest.mark.parametrize(
    "wrong, cause",
    [("password", "HTTP 401"), ("client-certificate", "BAD_CERTIFICATE")],
)
def test_a_refused_rest_login_gives_one_plain_message_on_the_worker_page_and_in_the_api(
    db, secured_kafka, admin_client, wrong, cause
):
    connect = rest_settings(secured_kafka, wrong)
    cluster = worker_cluster(f"wrong-rest-{wrong}", secured_kafka, **connect)

    page = admin_client.get(reverse("worker", args=[cluster.name]))
    answer = admin_client.get(reverse("api-worker", args=[cluster.name]))

    detail = answer.json()["detail"]
    assert answer.status_code == 502 and cause in detail, (answer.status_code, detail)
    assert "\n" not in detail and "Traceback" not in detail
    assert cause in page.content.decode()
    for shown in (detail, page.content.decode()):
        assert connect["connect_password"] not in shown
