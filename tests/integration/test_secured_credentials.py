"""Wrong credentials on the secured runtime: a refresh ends with one plain message, within the
cluster's read timeout, that names the cause and never the secret."""

import pytest

from offsets.models import Cluster, ConnectorSnapshot, RefreshRun
from offsets.refresh.run import run_refresh
from tests.certificates import CertificateAuthority
from tests.integration import secured_runtime

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "not-the-password-4711"


def refresh_of(name: str, settings: dict, spark) -> RefreshRun:
    bootstrap = settings.pop("bootstrap.servers")
    cluster = Cluster.objects.create(
        name=name,
        bootstrap_servers=bootstrap,
        client_config=settings,
        **secured_runtime.WORKER_TOPICS,
    )
    run = run_refresh(cluster=cluster, spark=spark)
    assert not ConnectorSnapshot.objects.filter(cluster=cluster).exists()
    return run


def test_a_wrong_scram_password_fails_the_refresh_with_one_plain_message(
    db, secured_kafka, spark, history_dir
):
    run = refresh_of("wrong-password", secured_kafka.sasl(password=WRONG_PASSWORD), spark)

    assert run.status == RefreshRun.Status.FAILED
    assert "did not answer within" in run.error, run.error
    assert "\n" not in run.error and "Traceback" not in run.error
    assert WRONG_PASSWORD not in run.error


def test_an_untrusted_ca_fails_the_refresh_with_one_plain_message(
    db, secured_kafka, spark, history_dir, tmp_path
):
    stranger = CertificateAuthority(tmp_path / "stranger", "stranger-ca")
    settings = {**secured_kafka.sasl(), "ssl.ca.location": str(stranger.ca_file)}

    run = refresh_of("untrusted-ca", settings, spark)

    assert run.status == RefreshRun.Status.FAILED
    assert "did not answer within" in run.error, run.error
    assert "\n" not in run.error and "Traceback" not in run.error
