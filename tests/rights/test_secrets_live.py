"""Secrets against the real broker: the demo's connector configs carry passwords, the cluster's
client settings a SASL password; after a real refresh (Spark) no page, API response, export or
log shows them, and neither does the refresh command's output when the cluster is unreachable."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets.kafka import reading
from offsets.models import ConnectorSnapshot, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.access import endpoints, sample_params
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent.parent
# The demo's connectors hold these in their configs (devkit/demo/connectors.py), as real ones would.
DEMO_CONNECTOR_SECRETS = ["s3cr3t-inventory", "pg-orders-pw", "AKIA-demo-secret", "audit-pw"]
# librdkafka accepts SASL and SSL settings on a PLAINTEXT connection and leaves them unused,
# so the real broker is reached with the secrets present in every client the app creates.
CLIENT_SECRETS = {
    "sasl.username": "dash",
    "sasl.password": "LIVE-SASL-PASSWORD-5e1b",
    "ssl.key.password": "LIVE-SSL-KEY-PASSWORD-c0a7",
}
SECRETS = [*DEMO_CONNECTOR_SECRETS, "LIVE-SASL-PASSWORD", "LIVE-SSL-KEY-PASSWORD"]


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_after_a_real_refresh_nothing_shows_a_secret(
    client, fresh_demo, spark, editor, admin_user, settings, tmp_path, caplog
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    cluster = fresh_demo.cluster
    cluster.client_config = CLIENT_SECRETS
    cluster.save()
    caplog.set_level(logging.DEBUG)

    run = run_refresh(cluster=cluster, spark=spark)

    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    names = list(ConnectorSnapshot.objects.filter(cluster=cluster).values_list("name", flat=True))
    # The secrets really are in the config topic the pages are built from ...
    raw = b"".join(
        r.value or b""
        for r in reading.read_topic(fresh_demo.settings, "connect-configs", timeout=5)
    )
    assert all(secret.encode() in raw for secret in DEMO_CONNECTOR_SECRETS)
    # ... and the refresh stored the configurations masked already (not even the database).
    stored = "".join(str(s.config) for s in ConnectorSnapshot.objects.filter(cluster=cluster))
    assert "connection.password" in stored and not leaks(stored)
    edit = make_edit(cluster, editor, connector="jdbc-source-inventory")
    client.force_login(admin_user)
    urls = []
    for name in names:
        params = sample_params(
            cluster=cluster.name, connector=name, edit_pk=edit.pk, admin_pk=cluster.pk
        )
        urls += [e.url for e in endpoints(params) if "connector" in e.name or "connectors" in e.url]
    params = sample_params(
        cluster=cluster.name, connector=names[0], edit_pk=edit.pk, admin_pk=cluster.pk
    )
    urls += [e.url for e in endpoints(params)]
    urls += [
        f"/clusters/{cluster.name}/export/",
        f"/clusters/{cluster.name}/export/?from_beginning=on",
        f"/api/v1/edits/export/?cluster={cluster.name}&from_beginning=true",
    ]
    problems, shown = [], 0
    for url in dict.fromkeys(urls):
        response = client.get(url)
        shown += response.status_code == 200
        found = leaks(response.content.decode("utf-8", "replace"))
        if found:
            problems.append(f"GET {url} -> {response.status_code} shows {found}")
    assert not problems, "\n".join(problems)
    assert not leaks(caplog.text)
    assert shown > 50
    page = client.get(f"/clusters/{cluster.name}/connectors/jdbc-source-inventory/")
    assert "connection.password" in page.content.decode()


def test_the_refresh_command_on_an_unreachable_cluster_prints_no_secret(tmp_path):
    """The command's output and the run's error, as an operator or a log collector sees them."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "RUN_DIR": str(tmp_path / "run"),
        "OFFSETS_HISTORY_PATH": str(tmp_path / "history"),
        "KAFKA_READ_TIMEOUT": "2",
        "LOG_LEVEL": "DEBUG",
    }

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    assert manage("migrate", "--no-input", "-v", "0").returncode == 0
    settings_args = [f"--client-config={key}={value}" for key, value in CLIENT_SECRETS.items()]
    added = manage("add_cluster", "far", "--bootstrap-servers", "127.0.0.1:1", *settings_args)
    assert added.returncode == 0, added.stderr
    refreshed = manage("refresh_offsets", "--cluster", "far")
    assert refreshed.returncode != 0
    assert "Refresh failed" in refreshed.stderr
    output = added.stdout + added.stderr + refreshed.stdout + refreshed.stderr
    assert not leaks(output), output[-3000:]
    shown = manage(
        "shell",
        "-c",
        "from offsets.models import RefreshRun; print(RefreshRun.objects.get().error)",
    )
    assert shown.stdout.strip() and not leaks(shown.stdout)
