"""Run Apache Kafka's broker and a Kafka Connect worker locally, from the project's jars.

The jars come from Maven Central through `kafka-runtime/` (`make kafka-runtime`) into
``KAFKA_RUNTIME_LIBS`` (``broker/`` and ``worker/``). `EmbeddedKafka(run_dir).start()` starts a
single-node KRaft broker and, unless asked not to, a distributed Connect worker with
exactly-once source support, both on free loopback ports, and waits until the broker answers
metadata and the worker's ``GET /health`` answers 200. Their pids, addresses and logs are kept
in ``<run_dir>/embedded-kafka.json`` so that `status` and `stop` find them from another
process; `stop` only signals processes whose command line names this run directory, so a
recycled pid or another run's broker is never touched. Every start formats a new log
directory: stopping loses the data, as a test or a demo wants.
"""

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings

from devkit.embedded_config import (
    BASIC_AUTH_JARS,
    basic_auth_header,
    cluster_id,
    worker_properties,
    write_basic_auth,
    write_broker_config,
    write_logging,
)
from offsets.kafka import handles
from offsets.outgoing import opener

logger = logging.getLogger(__name__)

STATE_FILE = "embedded-kafka.json"

WORKER_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"

# The health check sends the worker's credentials: a redirect is an answer, never followed.
_NO_REDIRECTS = opener()

# Brokers and workers started by this process, kept so that `stop` can collect their exit
# status (no zombies in a test run) and Popen does not warn about a live child being dropped.
_children: dict[int, subprocess.Popen] = {}


class EmbeddedKafkaError(RuntimeError):
    pass


@dataclass(frozen=True)
class RuntimeInfo:
    """What `start` started: the broker, and the worker when there is one."""

    pid: int
    bootstrap_servers: str
    log_file: str
    started_at: float
    connect_pid: int | None = None
    connect_url: str = ""
    connect_log_file: str = ""


@dataclass(frozen=True)
class StartedWorker:
    """A worker started on its own against a running broker (`EmbeddedKafka.start_worker`)."""

    pid: int
    url: str
    log_file: str


def runtime_libs() -> Path:
    return Path(settings.KAFKA_RUNTIME_LIBS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise EmbeddedKafkaError(
            "Java was not found: the broker and the Connect worker need Java 17 or later"
            " (apt-get install openjdk-17-jre-headless)."
        )
    return java


def _classpath(part: str) -> str:
    folder = runtime_libs() / part
    if not any(folder.glob("*.jar")):
        raise EmbeddedKafkaError(
            f"Kafka's jars are missing from {folder}: build them with `make kafka-runtime`"
            " (Maven fetches them from Maven Central)."
        )
    return f"{folder}/*"


def _plugin_path(folder: Path) -> str:
    """`folder` as a worker's plugin.path, once it holds a plugin (a folder of jars, or one)."""
    folder = Path(folder).resolve()
    if not any(folder.glob("*/*.jar")) and not any(folder.glob("*.jar")):
        raise EmbeddedKafkaError(
            f"No Connect plugin in {folder}: fetch them with `make kafka-plugins`"
            " (Maven fetches them from Maven Central)."
        )
    return str(folder)


def _require_basic_auth_jars() -> None:
    if not any((runtime_libs() / "worker").glob(BASIC_AUTH_JARS)):
        raise EmbeddedKafkaError(
            f"Connect's basic auth extension ({BASIC_AUTH_JARS}) is missing from "
            f"{runtime_libs() / 'worker'}: rebuild the jars with `make kafka-runtime`."
        )


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    interesting = [line for line in text if " ERROR " in line or "Exception" in line]
    return "\n".join((interesting or text)[-lines:])


def is_runtime_process(pid: int, run_dir: Path) -> bool:
    """Whether `pid` is a java process started for `run_dir` (its config files live there)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    marker = str(Path(run_dir).resolve()).encode()
    return bool(cmdline) and cmdline[0].endswith(b"java") and any(marker in a for a in cmdline)


@handles.released_after
def wait_for_broker(
    bootstrap_servers: str, *, timeout: float, process=None, log=None, client=None
) -> None:
    """Block until the broker answers a metadata request, or raise after `timeout` seconds.

    `client` adds client settings (a secured listener's credentials)."""
    deadline = time.monotonic() + timeout
    admin = handles.admin_client({**(client or {}), "bootstrap.servers": bootstrap_servers})
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        _raise_if_exited(process, "broker", log)
        try:
            if admin.list_topics(timeout=1).brokers:
                return
        except Exception as exc:  # KafkaException while the port is not open yet
            last_error = exc
        time.sleep(0.1)
    raise EmbeddedKafkaError(
        f"The broker at {bootstrap_servers} did not answer metadata within {timeout:.0f} s"
        f" ({last_error}).{_tail_note(log)}"
    )


def wait_for_worker(
    url: str,
    *,
    timeout: float,
    process=None,
    log=None,
    auth: tuple[str, str] | None = None,
    https_context=None,
) -> None:
    """Block until the worker's GET /health answers 200 (503 while it starts).

    With basic auth on, the extension guards /health like every other resource (401 without
    credentials, whatever the worker's health), so `auth` is sent to see the real answer.
    `https_context` is the TLS client context of an HTTPS REST API.
    """
    client = opener(https_context) if https_context is not None else _NO_REDIRECTS
    deadline = time.monotonic() + timeout
    last = "no answer"
    headers = {"Authorization": basic_auth_header(*auth)} if auth else {}
    while time.monotonic() < deadline:
        _raise_if_exited(process, "Connect worker", log)
        try:
            health = urllib.request.Request(f"{url}/health", headers=headers)
            with client.open(health, timeout=2) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise EmbeddedKafkaError(
        f"The Connect worker at {url} was not healthy within {timeout:.0f} s ({last})."
        f"{_tail_note(log)}"
    )


def _raise_if_exited(process, what: str, log) -> None:
    if process is not None and process.poll() is not None:
        raise EmbeddedKafkaError(
            f"The {what} exited during start-up (exit {process.returncode}).{_tail_note(log)}"
        )


def _tail_note(log) -> str:
    if log is None:
        return ""
    tail = _log_tail(Path(log))
    return f" Its log, {log}, ends with:\n{tail}" if tail else f" See {log}."


class EmbeddedKafka:
    """The broker (and worker) whose configuration and state live in `run_dir`."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.state_path = self.run_dir / STATE_FILE

    def status(self) -> RuntimeInfo | None:
        """Return what is running, or None (removing a stale state file)."""
        try:
            info = RuntimeInfo(**json.loads(self.state_path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError):
            logger.warning("Ignoring unreadable %s", self.state_path)
            self.state_path.unlink(missing_ok=True)
            return None
        if not is_runtime_process(info.pid, self.run_dir):
            self.stop_processes(info)
            self.state_path.unlink(missing_ok=True)
            return None
        return info

    def start(
        self,
        *,
        port: int | None = None,
        connect_port: int | None = None,
        worker: bool = True,
        advertised: str | None = None,
        plugins: Path | None = None,
        timeout: float = 90.0,
    ) -> RuntimeInfo:
        """Start the broker, and the worker unless `worker` is false, unless running; return them.

        `advertised` is the address the broker gives clients (default its own): a test puts a
        proxy there. `plugins` is a plugin folder (`plugin.path`) the worker loads besides the
        classpath's plugins.
        """
        running = self.status()
        if running:
            return running
        java = _java()
        broker_cp = _classpath("broker")
        worker_cp = _classpath("worker") if worker else ""
        _check_ports(port, connect_port)
        port = port or free_port()
        address = f"127.0.0.1:{port}"
        jvm = write_logging(self.run_dir)
        server = write_broker_config(
            self.run_dir, port=port, controller_port=free_port(), advertised=advertised or address
        )
        broker_log = self.run_dir.resolve() / "broker.log"
        _format_storage([java, *jvm, "-cp", broker_cp], server, timeout)
        broker = self._start_process(
            [java, *jvm, "-cp", broker_cp, "kafka.Kafka", str(server)],
            broker_log,
            lambda process: wait_for_broker(
                address, timeout=timeout, process=process, log=broker_log
            ),
            f"Broker at {address}",
        )
        info = RuntimeInfo(
            pid=broker.pid,
            bootstrap_servers=advertised or address,
            log_file=str(broker_log),
            started_at=time.time(),
        )
        if worker:
            try:
                options = {"plugin_path": _plugin_path(plugins)} if plugins is not None else {}
                info = self._start_worker(
                    info, java, jvm, worker_cp, connect_port, timeout, options
                )
            except EmbeddedKafkaError:
                self._kill(broker)
                raise
        self.state_path.write_text(json.dumps(asdict(info)))
        return info

    def _start_worker(
        self, info, java, jvm, classpath, connect_port, timeout, options
    ) -> RuntimeInfo:
        worker, url, log = self._launch_worker(
            java, jvm, classpath, info.bootstrap_servers, connect_port, timeout, "connect", options
        )
        return RuntimeInfo(
            **{
                **asdict(info),
                "connect_pid": worker.pid,
                "connect_url": url,
                "connect_log_file": str(log),
            }
        )

    def _launch_worker(
        self, java, jvm, classpath, bootstrap, port, timeout, name, options, auth=None
    ):
        """Start a worker whose files are `<name>-distributed.properties` and `<name>.log`.

        `auth` is the (username, password) its start-up health check sends.
        """
        run_dir = self.run_dir.resolve()
        rest_port = port or free_port()
        url = f"http://127.0.0.1:{rest_port}"
        config = run_dir / f"{name}-distributed.properties"
        config.write_text(
            worker_properties(bootstrap_servers=bootstrap, rest_port=rest_port, **options)
        )
        log = run_dir / f"{name}.log"
        worker = self._start_process(
            [java, *jvm, "-cp", classpath, WORKER_MAIN, str(config)],
            log,
            lambda process: wait_for_worker(
                url, timeout=timeout, process=process, log=log, auth=auth
            ),
            f"Connect worker at {url}",
        )
        return worker, url, log

    def start_worker(
        self,
        *,
        bootstrap_servers: str,
        group_id: str,
        topics: dict[str, str],
        basic_auth: dict[str, str] | None = None,
        plugins: Path | None = None,
        timeout: float = 90.0,
    ) -> "StartedWorker":
        """Start one more worker against a running broker: another Connect cluster.

        Its group and internal topics are its own; `stop_worker` stops it. Nothing is kept in
        the state file: the process that starts it stops it (a test session). `basic_auth`
        (username -> password) makes its REST API demand one of those users. `plugins` is a
        plugin folder (`plugin.path`) it loads besides the classpath's plugins.
        """
        jvm = write_logging(self.run_dir)
        options = {"group_id": group_id, "topics": topics}
        if plugins is not None:
            options["plugin_path"] = _plugin_path(plugins)
        classpath, auth = _classpath("worker"), None
        if basic_auth is not None:
            jaas = write_basic_auth(self.run_dir, group_id, basic_auth)
            _require_basic_auth_jars()
            jvm.append(f"-Djava.security.auth.login.config={jaas}")
            options["basic_auth"] = True
            auth = next(iter(basic_auth.items()))
        worker, url, log = self._launch_worker(
            _java(), jvm, classpath, bootstrap_servers, None, timeout, group_id, options, auth
        )
        return StartedWorker(pid=worker.pid, url=url, log_file=str(log))

    def stop_worker(self, worker: "StartedWorker", *, timeout: float = 30.0) -> None:
        """Stop a worker `start_worker` started (only a process of this run directory)."""
        self._stop_pid(worker.pid, timeout)

    def start_process(self, command: list[str], log_path: Path, wait, what: str):
        """Spawn `command` as one of this run directory's processes (`stop_worker` stops it),
        waiting for it with `wait(process)`."""
        return self._start_process(command, log_path, wait, what)

    def _start_process(self, command: list[str], log_path: Path, wait, what: str):
        """Spawn `command` and wait for it with `wait(process)`; killed if it never gets ready."""
        process = self._spawn(command, log_path)
        started = time.monotonic()
        try:
            wait(process)
        except EmbeddedKafkaError:
            self._kill(process)
            raise
        logger.info("%s ready in %.1f s", what, time.monotonic() - started)
        return process

    def _spawn(self, command: list[str], log_path: Path) -> subprocess.Popen:
        with open(log_path, "ab") as log:
            # A new session, so Ctrl-C in the terminal that ran `start` does not stop it.
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.run_dir,
                start_new_session=True,
            )
        _children[process.pid] = process
        return process

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        _children.pop(process.pid, None)
        process.kill()
        process.wait()

    def stop(self, *, timeout: float = 30.0, kill: bool = False) -> RuntimeInfo | None:
        """Stop the worker, then the broker, that this run directory started; return them.

        `kill` ends them at once (SIGKILL) instead of letting them shut down cleanly: for a
        throw-away broker whose data nobody reads again.
        """
        info = self.status()
        if info is None:
            return None
        # Let go of idle client connections before the broker goes.
        handles.release_unused()
        self.stop_processes(info, timeout=0 if kill else timeout)
        self.state_path.unlink(missing_ok=True)
        return info

    def stop_processes(self, info: RuntimeInfo, *, timeout: float = 30.0) -> None:
        """Stop both processes, each given `timeout` seconds to end before SIGKILL."""
        # The worker first: it leaves its group and flushes offsets while the broker is up.
        for pid in (info.connect_pid, info.pid):
            if pid is not None:
                self._stop_pid(pid, timeout)

    def _stop_pid(self, pid: int, timeout: float) -> None:
        child = _children.pop(pid, None)
        if child is not None:
            if timeout <= 0:
                child.kill()
                child.wait()
                return
            child.terminate()
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return
        if not is_runtime_process(pid, self.run_dir):
            return
        os.kill(pid, signal.SIGTERM if timeout > 0 else signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while is_runtime_process(pid, self.run_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        if is_runtime_process(pid, self.run_dir):
            os.kill(pid, signal.SIGKILL)


def _check_ports(port: int | None, connect_port: int | None) -> None:
    for wanted, what in ((port, "broker"), (connect_port, "Connect worker")):
        if wanted and not port_is_free(wanted):
            raise EmbeddedKafkaError(
                f"Port {wanted} on 127.0.0.1 is taken: choose another for the {what}"
                " or leave it out for a free one."
            )


def _format_storage(java_cp: list[str], server: Path, timeout: float, extra=()) -> None:
    """Format the broker's storage for KRaft (a no-op on storage formatted already).

    `extra` adds options (`--add-scram` users)."""
    format_storage = ["kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(server)]
    format_storage += extra
    formatted = subprocess.run(
        [*java_cp, *format_storage, "--ignore-formatted"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if formatted.returncode != 0:
        raise EmbeddedKafkaError(
            "Formatting the broker's storage failed:\n"
            + (formatted.stderr or formatted.stdout)[-2000:]
        )
