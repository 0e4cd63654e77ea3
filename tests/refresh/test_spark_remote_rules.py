"""SPARK_REMOTE's settings and messages, without a server: the URL read from a file, the
settings it refuses, and the one-line errors that never show the URL's token."""

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from offsets.refresh.run_records import describe_error
from offsets.spark.errors import ConnectUnreachable

TOKEN = "tok-9f3c1b"
URL = f"sc://spark.example.com:15002/;use_ssl=true;token={TOKEN}"
# What PySpark's Connect client raises when the server refuses the connection.
GRPC_DUMP = (
    "<_MultiThreadedRendezvous of RPC that terminated with:\n"
    "\tstatus = StatusCode.UNAVAILABLE\n"
    '\tdetails = "failed to connect to all addresses; last error: UNKNOWN: '
    'ipv4:10.0.0.7:15002: Failed to connect to remote host: Connection refused"\n'
    '\tdebug_error_string = "UNAVAILABLE:failed to connect to all addresses"\n>'
)


def settings_in_a_child(**env: str) -> subprocess.CompletedProcess:
    """Load the settings as a process started with `env` would: SPARK_REMOTE is read once."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_REMOTE", "SPARK_M"))}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from dashboard import settings; print(repr(settings.SPARK_REMOTE))",
        ],
        cwd=django_settings.BASE_DIR,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_url_comes_from_spark_remote_file_and_stays_out_of_the_environment(tmp_path):
    url_file = tmp_path / "spark-remote"
    url_file.write_text(URL + "\n")
    loaded = settings_in_a_child(SPARK_REMOTE_FILE=str(url_file))
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == repr(URL)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SPARK_REMOTE": "spark://host:7077"}, "SPARK_REMOTE must be a Spark Connect URL"),
        (
            {"SPARK_REMOTE": "sc://host:15002", "SPARK_MASTER": "spark://host:7077"},
            "SPARK_MASTER and SPARK_REMOTE both set",
        ),
    ],
    ids=["not-sc", "both"],
)
def test_settings_that_cannot_work_are_refused_at_start(env, message):
    loaded = settings_in_a_child(**env)
    assert loaded.returncode != 0
    assert message in loaded.stderr


def test_a_refused_connection_is_one_line_naming_the_server_not_its_token():
    from offsets.spark.session import connect_error

    text = connect_error(URL, Exception(GRPC_DUMP))
    assert text == (
        "The Spark Connect server at spark.example.com:15002: failed to connect "
        "to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:15002: Failed to connect to "
        "remote host: Connection refused"
    )
    assert describe_error(ConnectUnreachable(text)) == text


def test_a_server_gone_mid_refresh_says_grpcs_details_in_one_line():
    assert describe_error(Exception(GRPC_DUMP)) == (
        "Spark Connect: failed to connect to all addresses; last error: UNKNOWN: "
        "ipv4:10.0.0.7:15002: Failed to connect to remote host: Connection refused"
    )


def test_spark_conf_of_the_servers_own_is_refused_before_connecting():
    from offsets.spark.session import get_spark

    with pytest.raises(ConnectUnreachable) as refused:
        get_spark(conf={"spark.executor.memory": "2g"}, remote=URL)
    assert str(refused.value) == (
        "SPARK_CONF sets spark.executor.memory: with SPARK_REMOTE, settings other than "
        "spark.sql.* are the Spark Connect server's own; set them where it starts"
    )
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ


def test_a_failed_python_task_says_what_it_raised_not_only_that_it_failed():
    # As PySpark words it: where first, the Python trace after.
    text = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "worker.py", line 3460, in main\n'
        "    check_python_version(infile)\n"
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python "
        "in worker has different version: 3.11 than that in driver: 3.12.\n"
    )
    expected = (
        "A Spark Python worker failed: PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python "
        "in worker has different version: 3.11 than that in driver: 3.12."
    )
    assert describe_error(Exception(text)) == expected
    from offsets.spark.session import connect_error

    assert connect_error(URL, Exception(text)) == (
        f"The Spark Connect server at spark.example.com:15002: {expected}"
    )


def test_a_data_source_that_the_server_cannot_unpickle_says_which_module_is_missing():
    # As a Spark Connect server words it when its Python lacks the shipped `offsets`.
    text = (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback "
        "(most recent call last):\n"
        '  File "pyspark/serializers.py", line 483, in loads\n'
        "    return cloudpickle.loads(obj, encoding=encoding)\n"
        "ModuleNotFoundError: No module named 'offsets'\n"
        " SQLSTATE: 38000\n\n"
        "JVM stacktrace:\n"
        "org.apache.spark.sql.AnalysisException\n"
        "\tat org.apache.spark.sql.errors.QueryCompilationErrors$.pythonDataSourceError(...)\n"
    )
    assert describe_error(Exception(text)) == (
        "A Spark Python worker failed: ModuleNotFoundError: No module named 'offsets'"
    )
