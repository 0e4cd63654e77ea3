"""The image as a company runs it: the README's deploy steps (deploy/quickstart) in a fresh
clone, with podman-compose: both images built, compose.env written, PostgreSQL, `migrate`,
`web` and `scheduler` started, the first admin, an API token and a cluster added, against the
session's broker and worker, all on the host's network, with DEBUG off and JSON logs.

`make test-image` runs this module (and the other container tests); CI runs it as a step of
its own. The deployment (tests/support/compose_stack.py) is made once for the module and taken
down at its end; a test that stops or changes a part of it (the database, the scheduler, the
scheduler moved onto compose's Spark Connect server) puts it back before it ends.
"""

import functools
import json
import os
import re
import signal
import time
from datetime import UTC, datetime

import httpx
import psycopg
import pytest

from devkit import embedded_config
from devkit.embedded import free_port
from offsets.refresh.run_records import STOPPED
from tests.support.compose_stack import CLUSTER, CONFIG_SECRET, RUN, Stack
from tests.support.connect_rest import ConnectRest, wait_until
from tests.support.podman import fresh_clone, podman
from tests.support.worker_files import STRING_CONVERTERS

# Only `make test-image` runs these: they need podman and build the images.
pytestmark = pytest.mark.container

PERIOD = 5  # the cluster's refresh period, seconds
UID = "10001"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, kafka_runtime):
    stack = Stack(fresh_clone(tmp_path_factory.mktemp("deployment") / "clone"), kafka_runtime)
    try:
        stack.write_env_file()
        started = time.monotonic()
        output = stack.deploy()
        print(f"deploy/quickstart took {time.monotonic() - started:.0f} s:\n{output}")
        stack.token = re.search(r"Generated token (\w+) for user admin", output)[1]
        # The cluster the steps added, pointed at the embedded worker's topics, its password
        # and a short period.
        topics = embedded_config.WORKER_TOPICS
        stack.run_once(
            "add_cluster", CLUSTER, "--update", "--bootstrap-servers",
            stack.kafka.bootstrap_servers, "--connect-url", stack.kafka.connect_url,
            "--connect-username", "dashboard", "--connect-password-env", "CONNECT_PASSWORD",
            "--refresh-every", str(PERIOD),
            "--offset-flush-interval-ms", str(embedded_config.WORKER_FLUSH_INTERVAL_MS),
            "--offsets-topic", topics["offsets_topic"], "--configs-topic", topics["configs_topic"],
            "--status-topic", topics["status_topic"],
        )  # fmt: skip
        wait_until(
            lambda: _answers(f"{stack.base}/healthz"), bool, timeout=60, what="the web server"
        )
        yield stack
    finally:
        stack.remove()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_the_web_process_runs_as_non_root_and_serves_with_debug_off(stack):
    assert podman("exec", stack.names["web"], "id", "-u").stdout.strip() == UID
    assert podman("exec", stack.names["scheduler"], "id", "-u").stdout.strip() == UID
    login = httpx.get(f"{stack.base}/login/", timeout=10)
    assert login.status_code == 200
    stylesheet = re.search(r'href="(/static/[^"]+\.[0-9a-f]{12}\.css)"', login.text)
    assert stylesheet, "the login page links its stylesheet under a hashed name"
    css = httpx.get(stack.base + stylesheet[1], headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert css.status_code == 200 and css.headers["Content-Encoding"] == "gzip"
    clusters = stack.api("/clusters/")
    assert clusters.status_code == 200 and CLUSTER in clusters.text
    missing = stack.api("/clusters/no-such-cluster/")
    assert missing.status_code == 404 and "Traceback" not in missing.text


def _commit_three_rows(rest: ConnectRest, connector: str) -> None:
    """A table source that commits its three rows' offsets, once they are committed."""
    rest.create(
        connector,
        {
            "connector.class": "dev.offsetsdashboard.connectors.TableSourceConnector",
            "tasks.max": "1",
            "topic": f"{connector}-out",
            "tables": "customers",
            "max.rows": "3",
            "poll.interval.ms": "300",
            "connection.password": CONFIG_SECRET,
            **STRING_CONVERTERS,
        },
    )
    wait_until(
        lambda: rest.offsets(connector)["offsets"],
        lambda offsets: [e["offset"].get("incrementing") for e in offsets] == [3],
        timeout=60,
        what="the table source's last row committed",
    )


def _shows_three_rows(stack, connector: str) -> bool:
    """Whether the dashboard's API shows the table source's last committed row."""
    answer = stack.api(f"/clusters/{CLUSTER}/connectors/{connector}/partitions/")
    partitions = answer.json().get("source_partitions", []) if answer.is_success else []
    return [p["offset"].get("incrementing") for p in partitions] == [3]


def test_a_commit_on_the_worker_shows_within_the_clusters_period(stack, kafka_runtime):
    rest = ConnectRest(kafka_runtime.connect_url)
    connector = f"ct-source-{RUN}"
    try:
        _commit_three_rows(rest, connector)
        committed = time.monotonic()
        shown = functools.partial(_shows_three_rows, stack, connector)
        wait_until(shown, bool, timeout=120, what="the commit in the dashboard's API")
        print(f"commit shown by the scheduled refresh {time.monotonic() - committed:.1f} s later")
    finally:
        rest.delete(connector)
    ready = wait_until(
        lambda: httpx.get(f"{stack.base}/readyz", timeout=10),
        lambda answer: answer.status_code == 200,
        timeout=60,
        what="/readyz to answer ready",
    )
    assert ready.json()["status"] == "ready"
    logs = stack.logs()
    for secret in stack.secrets:
        assert secret not in logs
    # The dashboard's processes write one JSON object a line, Spark's JVM included (its log4j
    # profile for JSON logs), but for the JVM's own warning about the incubator module Spark
    # loads, which no profile reaches.
    lines = [
        json.loads(line)
        for line in stack.logs("web", "scheduler").splitlines()
        if line and not line.startswith("WARNING: Using incubator modules")
    ]
    assert all(line["level"] and line["logger"] for line in lines)
    assert any(f"{CLUSTER}: refresh #" in line.get("message", "") for line in lines)
    assert any(line["logger"] == "request" and line["path"] == "/readyz" for line in lines)


def test_readyz_turns_unready_when_the_database_stops_and_ready_when_it_is_back(stack):
    def readiness() -> tuple[int, dict]:
        answer = httpx.get(f"{stack.base}/readyz", timeout=15)
        return answer.status_code, answer.json()

    wait_until(readiness, lambda answer: answer[0] == 200, timeout=120, what="/readyz ready")
    # The database goes away under a running refresh: the harder case for the scheduler.
    cut_id = _running_run(stack)[0]
    podman("stop", "--time", "10", stack.names["postgres"])
    try:
        _, body = wait_until(
            readiness, lambda answer: answer[0] == 503, timeout=30, what="/readyz unready"
        )
        assert body["status"] == "unready" and body["checks"]["database"] != "ok"
        assert stack.database_password not in json.dumps(body)
        assert httpx.get(f"{stack.base}/healthz", timeout=10).status_code == 200
    finally:
        podman("start", stack.names["postgres"])
        stack.wait_for_postgres()
    # The scheduler lived through the outage: the cut run ends (its outcome written once the
    # database is back, or taken over once its lease ran out), and the cluster's refreshes go on.
    wait_until(readiness, lambda answer: answer[0] == 200, timeout=120, what="/readyz ready again")
    wait_until(
        lambda: {run[0]: run[1] for run in stack.runs()}[cut_id],
        lambda status: status != "running",
        timeout=120,
        what="the run the outage cut to end",
    )
    _running_run(stack)


def _running_run(stack) -> tuple:
    """A refresh the scheduler starts from now on, once it is running.

    Only a run started after the call counts: a run of the database outage above may still read
    RUNNING while its thread waits to write its outcome (the refresh's write retries).
    """
    before = max((run[0] for run in stack.runs()), default=0)
    try:
        return wait_until(
            lambda: next(
                (run for run in stack.runs() if run[0] > before and run[1] == "running"), None
            ),
            bool,
            timeout=120,
            what="a scheduled refresh to be running",
        )
    except AssertionError as timed_out:
        scheduler = podman("logs", "--tail", "30", stack.names["scheduler"], check=False)
        raise AssertionError(f"{timed_out}\nThe scheduler's log:\n{scheduler.stderr}") from None


def test_postgres_stops_with_a_fast_shutdown_and_starts_again_without_recovery(stack):
    name = stack.names["postgres"]
    # A client that never leaves, as the web and scheduler processes keep theirs.
    client = psycopg.connect(stack.database_url.replace("postgres://", "postgresql://"))
    client.execute("SELECT 1")
    stopping = datetime.now(UTC).isoformat()
    started = time.monotonic()
    try:
        podman("stop", name, timeout=60)  # the container's grace period: podman's 10 s
        stopped_in = time.monotonic() - started
        exit_code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        stop_log = stack.logs("postgres", since=stopping)
    finally:
        client.close()
        podman("start", name)
        stack.wait_for_postgres()
    assert exit_code == "0", stop_log
    assert stopped_in < 5, stop_log
    assert "received fast shutdown request" in stop_log
    start_log = stack.logs("postgres", since=stopping)
    assert "database system was shut down at" in start_log, start_log
    for crashed in ("was interrupted", "not properly shut down", "automatic recovery"):
        assert crashed not in start_log


def test_sigterm_ends_the_scheduler_within_ten_seconds_and_marks_its_refresh(stack):
    run_id = _running_run(stack)[0]
    started = time.monotonic()
    try:
        # SIGTERM, then SIGKILL after 15 s (an exit code of 137); `stop`, as an operator's
        # `podman stop` or compose's, since a container of compose's that exits on a signal
        # sent with `podman kill` is started again at once (restart: unless-stopped).
        podman("stop", "--time", "15", stack.names["scheduler"], timeout=60)
        stopped_in = time.monotonic() - started
        exit_code = podman("inspect", "--format", "{{.State.ExitCode}}", stack.names["scheduler"])
        logs = podman("logs", "--tail", "40", stack.names["scheduler"]).stderr
        assert exit_code.stdout.strip() == "0", logs
        assert stopped_in < 10
        (status, error), *_ = stack.query(
            "SELECT status, error FROM offsets_refreshrun WHERE id = %s", run_id
        )
        # It ended as interrupted, or finished on its own in the seconds it was given.
        assert (status, error) == ("failed", STOPPED) or status == "succeeded", logs
        assert not [run for run in stack.runs() if run[1] == "running"]
    finally:
        # The next test needs its scheduler, whatever this one found.
        podman("start", stack.names["scheduler"])


def _kill_mid_refresh(stack) -> tuple:
    """Kill the scheduler while a refresh runs; return that run.

    An incremental refresh here takes a second or two, about what `podman kill` takes to
    reach the container, so the container's process is killed from the host (SIGKILL to the
    pid podman reports, read before the run is awaited) the moment a run reads RUNNING. A run
    that ended before the kill did is no killed run: the kill is tried again on the next one.
    """
    name = stack.names["scheduler"]
    for _ in range(10):
        killed = podman("inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
        run = _running_run(stack)
        os.kill(int(killed), signal.SIGKILL)
        # Gone: exited, or already started again by compose's restart policy.
        wait_until(
            lambda: podman("inspect", "--format", "{{.State.Pid}}", name).stdout.strip(),
            lambda pid, killed=killed: pid != killed,
            timeout=60,
            what="the killed scheduler's process to be gone",
        )
        if {pk: status for pk, status, *_ in stack.runs()}[run[0]] == "running":
            return run
        podman("start", stack.names["scheduler"])
    raise AssertionError("Ten refreshes in a row ended before the kill reached them.")


def test_a_scheduler_killed_mid_refresh_and_started_again_leaves_nothing_stuck(stack):
    killed_id, _, _, killed_host = _kill_mid_refresh(stack)
    podman("start", stack.names["scheduler"])

    def settled() -> bool:
        runs = {run[0]: run for run in stack.runs()}
        later = [run for pk, run in runs.items() if pk > killed_id and run[1] == "succeeded"]
        return runs[killed_id][1] == "failed" and bool(later)

    try:
        wait_until(
            settled,
            bool,
            timeout=180,
            what="the killed run abandoned and a later refresh succeeded",
        )
    except AssertionError as timed_out:
        scheduler = podman("logs", "--tail", "60", stack.names["scheduler"], check=False)
        raise AssertionError(
            f"{timed_out}\nRuns since: {[run for run in stack.runs() if run[0] >= killed_id]}"
            f"\nThe scheduler's log:\n{scheduler.stderr}"
        ) from None
    (error,) = stack.query("SELECT error FROM offsets_refreshrun WHERE id = %s", killed_id)[0]
    # The new container has a new pid namespace: the killed run is taken over once its lease
    # runs out (tuning.REFRESH_LEASE_SECONDS), or at once when the kernel gave the new
    # namespace the old one's number and pid 1 there started at another time (pid_gone).
    assert "pid namespace" in killed_host
    assert error.startswith("Abandoned: its process (1 on"), error
    assert "stopped renewing its lease" in error or error.endswith(") is gone."), error


def test_the_scheduler_refreshes_on_the_compose_spark_connect_server_and_holds_no_jvm(
    stack, kafka_runtime
):
    """docs/deploy.md's Spark Connect setup on this deployment: `deploy/compose-env
    --spark-connect` on its compose.env (the server on a port of the test's own), then the
    profile's server and the scheduler made anew together, as the docs' command makes them. A
    commit on the worker is stored by a refresh on that server (its tasks read Kafka and write
    the history on the shared volume, which the scheduler merges), and the scheduler's container
    runs no JVM. The scheduler goes back to its own Spark at the end. In this module's
    deployment rather than one of its own: the image tests' budget pays for one compose project.
    """
    local_env = stack.env_file.read_text()
    stack.run("deploy/compose-env", "--spark-connect")
    remote_env = stack.env_file.read_text().replace(":15002", f":{free_port()}")
    stack.env_file.write_text(remote_env)
    token = re.search(r"^SPARK_CONNECT_AUTHENTICATE_TOKEN=(.+)$", remote_env, re.MULTILINE)[1]
    rest = ConnectRest(kafka_runtime.connect_url)
    connector = f"ct-remote-{RUN}"
    before = max((run[0] for run in stack.runs()), default=0)
    started = time.monotonic()
    try:
        stack.compose(
            "--profile", "spark-connect", "up", "-d", "--no-deps", "--force-recreate",
            "spark-connect", "scheduler",
        )  # fmt: skip
        server, scheduler = stack.containers("spark-connect")[0], stack.names["scheduler"]
        namespace = podman("exec", scheduler, "readlink", "/proc/1/ns/pid").stdout
        host = f"%(pid namespace {re.search(r'[0-9]+', namespace)[0]})"
        _commit_three_rows(rest, connector)
        peaks = {server: (0, 0), scheduler: (0, 0)}

        def refreshed_on_the_server() -> bool:
            for name, peak in peaks.items():
                peaks[name] = tuple(map(max, peak, stack.memory_mb(name)))
            read = stack.query(
                "SELECT r.records_read FROM offsets_refreshrun r JOIN offsets_cluster c "
                "ON c.id = r.cluster_id WHERE c.name = %s AND r.status = 'succeeded' "
                "AND r.host LIKE %s",
                CLUSTER,
                host,
            )
            return any(records for (records,) in read) and _shows_three_rows(stack, connector)

        try:
            wait_until(
                refreshed_on_the_server,
                bool,
                timeout=180,
                what="a refresh on the Spark Connect server",
            )
        except AssertionError as timed_out:
            tails = [podman("logs", "--tail", "30", name, check=False) for name in peaks]
            raise AssertionError(
                f"{timed_out}\nThe runs: {stack.runs()[-5:]}\nThe server's and the scheduler's "
                f"logs:\n{''.join(tail.stdout + tail.stderr for tail in tails)}"
            ) from None
        print(
            f"stored by a refresh on Spark Connect {time.monotonic() - started:.0f} s after "
            f"compose up; memory (usage / resident MB) at most: server {peaks[server]}, "
            f"scheduler {peaks[scheduler]}; after it: server {stack.memory_mb(server)}, "
            f"scheduler {stack.memory_mb(scheduler)}; the runs since (id, status, error): "
            f"{[(pk, status, error[:90]) for pk, status, error, _ in stack.runs() if pk > before]}"
        )
        processes = podman("exec", scheduler, "ps", "-eo", "comm=").stdout.split()
        assert "java" not in processes and "python" in processes, processes
        # The server's JVM is its container's first process: a stop's SIGTERM reaches it.
        assert podman("exec", server, "ps", "-o", "comm=", "-p", "1").stdout.strip() == "java"
        assert token not in stack.logs("scheduler") + podman("logs", server).stderr
    finally:
        rest.delete(connector)
        stack.env_file.write_text(local_env)
        for name in stack.containers("spark-connect"):
            podman("rm", "--force", name, timeout=60)
        stack.compose("up", "-d", "--no-deps", "--force-recreate", "scheduler")
