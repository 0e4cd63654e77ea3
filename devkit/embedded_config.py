"""The files the embedded broker and Connect worker start from: their properties, logging and
Connect's basic auth.

The text is built by pure functions; `write_broker_config`, `write_logging` and
`write_basic_auth` put it into a run directory. `devkit.embedded` starts and supervises the
processes that read it.
"""

import base64
import os
import shutil
from pathlib import Path

# The worker's group and internal topics. They differ from Connect's defaults
# (connect-offsets, ...) so that a cluster seeded by `seed_demo` can share the broker without
# the worker trying to run its made-up connectors.
WORKER_GROUP = "embedded-connect"
WORKER_TOPICS = {
    "offsets_topic": "embedded-connect-offsets",
    "configs_topic": "embedded-connect-configs",
    "status_topic": "embedded-connect-status",
}
# How often the worker commits source offsets (offset.flush.interval.ms); a cluster registered
# with `add_cluster --embedded` records it, so stalls are judged on the worker's real pace.
WORKER_FLUSH_INTERVAL_MS = 1000

# Connect's own basic auth on the REST API (connect-basic-auth-extension): a worker started
# with `basic_auth` checks every request against a users file through JAAS.
BASIC_AUTH_EXTENSION = (
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
)
BASIC_AUTH_LOGIN_MODULE = (
    "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
)
BASIC_AUTH_JARS = "connect-basic-auth-extension-*.jar"

JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.

    Kafka's own generator avoids a leading '-', which its command-line parsing would take for
    an option; any other character is accepted.
    """
    while True:
        value = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not value.startswith("-"):
            return value


def broker_properties(
    *, data_dir: Path, port: int, controller_port: int, advertised: str, extra: dict | None = None
) -> str:
    """A single-node KRaft broker's properties; `extra` adds or replaces settings (listeners,
    security)."""
    return _properties(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{advertised}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data_dir),
            "num.partitions": "1",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # A group's first member joins at once instead of after 3 s.
            "group.initial.rebalance.delay.ms": "0",
            # The log cleaner looks for work every half second, so compaction shows in a test.
            "log.cleaner.backoff.ms": "500",
            "log.cleaner.dedupe.buffer.size": "33554432",
            **(extra or {}),
        }
    )


def worker_properties(
    *,
    bootstrap_servers: str,
    rest_port: int,
    group_id: str = WORKER_GROUP,
    topics: dict[str, str] = WORKER_TOPICS,
    basic_auth: bool = False,
    plugin_path: str = "",
    extra: dict | None = None,
) -> str:
    """A distributed worker's properties; another group and topics make another Connect cluster.

    `basic_auth` turns on Connect's basic auth extension (its JAAS file is a JVM option).
    `plugin_path` adds plugin folders, each loaded in a class loader of its own. `extra` adds
    or replaces settings (security, an HTTPS listener).
    """
    extensions = {"rest.extension.classes": BASIC_AUTH_EXTENSION} if basic_auth else {}
    plugins = {"plugin.path": plugin_path} if plugin_path else {}
    return _properties(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "offset.storage.topic": topics["offsets_topic"],
            "config.storage.topic": topics["configs_topic"],
            "status.storage.topic": topics["status_topic"],
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.flush.interval.ms": str(WORKER_FLUSH_INTERVAL_MS),
            "exactly.once.source.support": "enabled",
            "consumer.isolation.level": "read_committed",
            "listeners": f"http://127.0.0.1:{rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(rest_port),
            # Plugins are jars on the classpath, found by their service manifests; plugin.path
            # is set only for a worker that loads more (an empty value is refused).
            "plugin.discovery": "service_load",
            "scheduled.rebalance.max.delay.ms": "0",
            **extensions,
            **plugins,
            **(extra or {}),
        }
    )


def standalone_properties(*, bootstrap_servers: str, rest_port: int, offsets_file: str) -> str:
    """A standalone worker's properties: its offsets in `offsets_file`, flushed every second."""
    return _properties(
        {
            "bootstrap.servers": bootstrap_servers,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "offset.storage.file.filename": java_property(offsets_file),
            "offset.flush.interval.ms": str(WORKER_FLUSH_INTERVAL_MS),
            "listeners": f"http://127.0.0.1:{rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(rest_port),
            "plugin.discovery": "service_load",
        }
    )


def connector_properties(config: dict[str, str]) -> str:
    """A connector's configuration as the properties file ConnectStandalone reads."""
    return "".join(f"{java_property(k)}={java_property(v)}\n" for k, v in config.items())


def java_property(text: str) -> str:
    """`text` escaped as a key or value of a Java properties file.

    Properties.load reads ISO-8859-1 and gives `=`, `:`, `#`, `!`, spaces and backslashes a
    meaning, so those are escaped with a backslash and anything outside printable ASCII is
    written as UTF-16 `\\uXXXX` escapes.
    """
    escaped = []
    for char in text:
        if not " " <= char <= "~":
            units = char.encode("utf-16-be")
            escaped += [f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)]
        elif char in "\\=:#! ":
            escaped.append("\\" + char)
        else:
            escaped.append(char)
    return "".join(escaped)


def basic_auth_users(users: dict[str, str]) -> str:
    """The users file of PropertyFileLoginModule: one `username=password` line each."""
    for username in users:
        # The worker splits the Authorization header at the first colon.
        if not username or ":" in username:
            raise ValueError(f"A basic auth username must be non-empty, without ':': {username!r}")
    return "".join(f"{java_property(u)}={java_property(p)}\n" for u, p in users.items())


def basic_auth_jaas(users_file: Path) -> str:
    """The JAAS file whose `KafkaConnect` entry the basic auth extension logs requests in with."""
    quoted = str(users_file).replace("\\", "\\\\").replace('"', '\\"')
    return f'KafkaConnect {{\n  {BASIC_AUTH_LOGIN_MODULE} required\n  file="{quoted}";\n}};\n'


def basic_auth_header(username: str, password: str) -> str:
    pair = f"{username}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


# Both JVMs log to standard output, which `start` sends to their log files.
LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


def _properties(values: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


def write_logging(run_dir: Path) -> list[str]:
    """Write the JVMs' logging configuration into `run_dir` (made if missing); return the JVM
    options that start them with it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir = run_dir.resolve()
    (run_dir / "log4j2.properties").write_text(LOG4J2)
    return [*JVM_OPTIONS, f"-Dlog4j2.configurationFile={run_dir / 'log4j2.properties'}"]


def write_broker_config(
    run_dir: Path, *, port: int, controller_port: int, advertised: str, extra: dict | None = None
) -> Path:
    """Write the broker's configuration on empty storage into `run_dir`; return its file."""
    run_dir = run_dir.resolve()
    data_dir = run_dir / "kafka-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    server = run_dir / "broker.properties"
    server.write_text(
        broker_properties(
            data_dir=data_dir,
            port=port,
            controller_port=controller_port,
            advertised=advertised,
            extra=extra,
        )
    )
    return server


def write_basic_auth(run_dir: Path, name: str, users: dict[str, str]) -> Path:
    """Write `<name>-users.properties` and `<name>-jaas.conf` into `run_dir`; return the JAAS
    file."""
    if not users:
        # PropertyFileLoginModule lets every request in when its users file is empty.
        raise ValueError("basic_auth needs at least one user: an empty users file allows all.")
    run_dir = run_dir.resolve()
    users_file = run_dir / f"{name}-users.properties"
    users_file.write_text(basic_auth_users(users), encoding="ascii")
    jaas = run_dir / f"{name}-jaas.conf"
    jaas.write_text(basic_auth_jaas(users_file), encoding="utf-8")
    return jaas
