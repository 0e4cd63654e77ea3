"""Secrets end to end on the secured runtime: a refresh over SASL_SSL with a SASL password and a
key password set shows neither in any page, API answer, export, audit entry, log record, Spark
plan, process command line or Spark event log; the same passwords kept in files
(`${file:...}`) never reach the database or `add_cluster`'s command line either."""

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkit.secured import create_acls
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.models import AuditEvent, RefreshRun
from offsets.refresh.run import run_refresh
from offsets.spark.kafka_source import NAME
from tests.support import secured_runtime
from tests.support.access import endpoints, sample_params
from tests.support.worker_files import file_source, write_lines

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent.parent
RUN = uuid.uuid4().hex[:8]
SOURCE = f"ssec-{RUN}-source"


@pytest.fixture(scope="module")
def viewed(secured_kafka, tmp_path_factory) -> Iterator[Path]:
    """A file source with a committed offset; the dashboard's SCRAM user holds the viewing
    set of the worker's topics. Returns the source's file."""
    rest = secured_kafka.rest()
    path = tmp_path_factory.mktemp("secured-secrets") / "in.txt"
    write_lines(path, ["one"])
    rest.create(SOURCE, file_source(path, f"ssec-{RUN}-data"))
    rest.wait_for_offsets(SOURCE, lambda o: o and o[0]["offset"]["position"] == 4)
    viewing = secured_runtime.viewing_acls(
        f"User:{secured_runtime.DASHBOARD_USER}",
        connect_topics=secured_runtime.WORKER_TOPICS.values(),
        data_topics=[],
        sink_groups=[],
    )
    create_acls(secured_kafka.setup, list(viewing.values()))
    yield path
    # pytest-django runs the test without a database last, after other modules: this fixture
    # is then made again.
    rest.delete(SOURCE)


def client_settings(secured_kafka) -> dict:
    """SECURITY.md's SASL_SSL settings, plus a client certificate whose key has a password
    (the listener does not ask for it, but librdkafka loads it: the password is used)."""
    settings = secured_kafka.sasl()
    del settings["bootstrap.servers"]
    cert = secured_kafka.dashboard_cert
    return {
        **settings,
        "ssl.certificate.location": str(cert.cert),
        "ssl.key.location": str(cert.key),
        "ssl.key.password": cert.key_password,
    }


def secrets_of(secured_kafka) -> list[str]:
    return [
        secured_kafka.users.passwords[secured_runtime.DASHBOARD_USER],
        secured_kafka.dashboard_cert.key_password,
        secured_kafka.rest_password,
    ]


def plan_strings(spark) -> str:
    """What Spark keeps of every query it ran (its SQL tab and event log are made of these)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    texts = []
    for index in range(executions.size()):
        execution = executions.apply(index)
        texts += [
            execution.description(),
            execution.details(),
            execution.physicalPlanDescription(),
        ]
    return "\n".join(texts)


def test_a_secured_refresh_shows_its_passwords_nowhere(
    viewed, secured_kafka, spark, history_dir, client, admin_user, editor, monkeypatch, caplog
):
    secrets = secrets_of(secured_kafka)
    cluster = secured_runtime.register(
        "secrets",
        secured_kafka.info.sasl_bootstrap,
        client_settings(secured_kafka),
        secured_kafka,
        monkeypatch,
    )
    caplog.set_level(logging.DEBUG)

    run = run_refresh(cluster=cluster, spark=spark)
    edit = stage(
        cluster=cluster,
        connector=SOURCE,
        user=editor,
        change=OffsetChange(
            StageRequest(
                strategy="set", partition={"filename": str(viewed)}, offset={"position": 1}
            )
        ),
    )

    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    client.force_login(admin_user)
    params = sample_params(
        cluster=cluster.name, connector=SOURCE, edit_pk=edit.pk, admin_pk=cluster.pk
    )
    urls = [endpoint.url for endpoint in endpoints(params)]
    urls += [
        f"/clusters/{cluster.name}/export/?from_beginning=on",
        f"/api/v1/edits/export/?cluster={cluster.name}&from_beginning=true",
    ]
    seen = {}
    for url in dict.fromkeys(urls):
        response = client.get(url)
        seen[f"GET {url} -> {response.status_code}"] = response.content.decode("utf-8", "replace")
    assert sum(" -> 200" in what for what in seen) > 50
    audit = AuditEvent.objects.filter(edit__cluster=cluster)
    assert audit.exists()
    seen["audit"] = json.dumps(list(audit.values("details", "comment")), default=str)
    seen["logs"] = caplog.text
    seen["Spark plans"] = plan_strings(spark)
    assert NAME in seen["Spark plans"]  # the refresh's reads are there
    seen["ps"] = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    leaks = [what for what, text in seen.items() for secret in secrets if secret in text]
    assert not leaks, leaks


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def command_lines_while(process: subprocess.Popen, *, timeout: float = 300) -> str:
    """Every process's command line, looked at every half second until `process` ends."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        assert time.monotonic() < deadline, "the refresh did not end"
        seen.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout)
        # The pause is the wait for the process: ps in a tight loop would take a core from it.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.5)
    return "\n".join(seen)


def test_passwords_in_files_stay_out_of_the_database_the_process_list_and_spark_event_log(
    viewed, secured_kafka, tmp_path
):
    """The refresh command in a process of its own: Spark's event log is a setting of the
    SparkContext, fixed at its start, and the test process's shared one has it off."""
    secrets = secrets_of(secured_kafka)
    settings = client_settings(secured_kafka)
    for key in ("sasl.password", "ssl.key.password"):
        secret_file = tmp_path / key
        secret_file.write_text(settings[key] + "\n")
        settings[key] = f"${{file:{secret_file}}}"
    events = tmp_path / "spark-events"
    events.mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "RUN_DIR": str(tmp_path / "run"),
        "OFFSETS_HISTORY_PATH": str(tmp_path / "history"),
        "LOG_LEVEL": "DEBUG",
        "SPARK_MASTER": "local[1]",
        "SPARK_CONF": f"spark.eventLog.enabled=true,spark.eventLog.dir=file://{events},"
        "spark.eventLog.compress=false",
    }
    topics = secured_runtime.WORKER_TOPICS
    assert manage(env, "migrate", "--no-input", "-v", "0").returncode == 0
    added = manage(
        env, "add_cluster", "from-files",
        f"--bootstrap-servers={secured_kafka.info.sasl_bootstrap}",
        f"--offsets-topic={topics['offsets_topic']}",
        f"--configs-topic={topics['configs_topic']}",
        f"--status-topic={topics['status_topic']}",
        *[f"--client-config={key}={value}" for key, value in settings.items()],
    )  # fmt: skip
    assert added.returncode == 0, added.stderr

    # Into files, not pipes: a child logging at DEBUG would fill a pipe nobody reads yet.
    with (tmp_path / "refresh.out").open("w+") as out:
        refresh = subprocess.Popen(
            [sys.executable, "manage.py", "refresh_offsets", "--cluster", "from-files"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        command_lines = command_lines_while(refresh)
        out.seek(0)
        output = out.read()

    assert refresh.returncode == 0, output[-3000:]
    event_log = "\n".join(
        path.read_text(errors="replace") for path in events.rglob("*") if path.is_file()
    )
    assert NAME in event_log  # the refresh's reads were logged
    database = (tmp_path / "db.sqlite3").read_bytes().decode("utf-8", "replace")
    assert "${file:" in database
    seen = {
        "ps": command_lines,
        "output": added.stdout + added.stderr + output,
        "event log": event_log,
        "database": database,
    }
    leaks = [what for what, text in seen.items() for secret in secrets if secret in text]
    assert not leaks, leaks
