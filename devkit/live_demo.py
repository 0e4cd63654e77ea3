"""The live demo: real connectors on the embedded Connect worker, fed by files that grow.

`LiveDemo(rest, ...)` knows the connectors (`connectors()`), creates the missing ones
(`ensure()`), and brings each to the state it is meant to show (`settle()`): most run, one is
STOPPED, one PAUSED, one FAILED (its sink file is moved under a regular file, so its task
fails on restart), one deleted after it committed (its offsets stay), and one sink is paused
and resumed in turns (`flap()`) so that its lag rises and falls. The connectors that end
stopped, paused, failed or deleted run first for a warm-up, so their offsets exist.

`LineWriter` appends numbered lines to the files the FileStream sources read and produces
some to a topic of its own: the command `live_demo` calls it a few times a second, which is
what makes commits and lag move.
"""

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from offsets.kafka import admin, producers
from offsets.kafka.connect_rest import ConnectRebalancing, ConnectRest, ConnectRestError

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
TABLE_SOURCE = "dev.offsetsdashboard.connectors.TableSourceConnector"
EXTERNAL_SINK = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"
MARKER_SINK = "dev.offsetsdashboard.connectors.MarkerFailingSinkConnector"
# The payments topic's records before and after its poison record (payment 21), which the
# payments sink fails on for good (a secret field in it shows the record's masking).
PAYMENTS_BEFORE, PAYMENTS_AFTER = 20, 10
POISON_PAYMENT = (
    '{"payment": 21, "amount": "12,50 EUR", "card_token": "tok_live_4242", "note": "poison"}'
)
STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}
BYTES = {
    "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
}
MIRROR_ALIAS = "upstream"
# How long a read refused during a rebalance is asked again (a rebalance takes a second or two).
REBALANCE_WAIT_SECONDS = 30
CLICKS_PARTITIONS = 3

# What a connector is meant to show. FLAPPING: paused and resumed in turns by `flap()`;
# POISONED: FAILED by itself, on a record of its topic.
RUNNING, PAUSED, STOPPED, FAILED, DELETED, FLAPPING, POISONED = (
    "RUNNING",
    "PAUSED",
    "STOPPED",
    "FAILED",
    "DELETED",
    "FLAPPING",
    "POISONED",
)


@dataclass(frozen=True)
class LiveConnector:
    name: str
    config: dict[str, str]
    intent: str
    shows: str

    @property
    def warms_up(self) -> bool:
        """Whether it runs first and takes its state after the warm-up (so it has offsets)."""
        return self.intent in (PAUSED, STOPPED, FAILED, DELETED)


@dataclass
class LiveDemo:
    """The live connectors of one worker. `namespace` prefixes every connector, topic and file
    (tests use their own); `data_dir` holds the files the sources read and the sinks write."""

    rest: ConnectRest
    bootstrap_servers: str
    data_dir: Path
    namespace: str = ""
    flap_seconds: float = 30.0
    _flap_paused: bool = field(default=False, init=False)

    def name(self, base: str) -> str:
        return f"{self.namespace}{base}"

    def topic(self, base: str) -> str:
        return f"live.{self.namespace}{base}"

    def path(self, base: str) -> Path:
        return self.data_dir / f"{self.namespace}{base}"

    @property
    def clicks_topic(self) -> str:
        """A topic the line writer produces to itself, without transactions (Connect's source
        tasks write in transactions on this worker, so their topics end in a commit marker:
        the newest record's timestamp, for a lag in time, is found only on this one)."""
        return self.topic("clicks")

    @property
    def payments_topic(self) -> str:
        return self.topic("payments")

    @property
    def source_files(self) -> dict[str, Path]:
        """The files the generator appends to, by the share of lines each one gets."""
        return {
            "app": self.path("app.log"),
            "audit": self.path("audit.log"),
            "orders": self.path("orders.log"),
        }

    def connectors(self) -> list[LiveConnector]:
        def file_source(file: str, topic: str, **extra: str) -> dict[str, str]:
            config = {"connector.class": FILE_SOURCE, "tasks.max": "1"}
            return {**config, "file": str(self.path(file)), "topic": topic, **STRINGS, **extra}

        def file_sink(topics: str, file: str, **extra: str) -> dict[str, str]:
            config = {"connector.class": FILE_SINK, "tasks.max": "1"}
            return {**config, "topics": topics, "file": str(self.path(file)), **STRINGS, **extra}

        app, audit, orders = self.topic("app-logs"), self.topic("audit"), self.topic("orders")
        inventory = self.topic("inventory")
        mirrored = f"{MIRROR_ALIAS}.{app}"
        return [
            LiveConnector(
                self.name("app-logs-source"),
                file_source("app.log", app),
                RUNNING,
                "file source: its byte position moves every second",
            ),
            LiveConnector(
                self.name("audit-source"),
                file_source("audit.log", audit),
                RUNNING,
                "file source of the audit log",
            ),
            LiveConnector(
                self.name("orders-eos-source"),
                file_source(
                    "orders.log",
                    orders,
                    **{
                        "exactly.once.support": "required",
                        "offsets.storage.topic": self.topic("orders-eos-offsets"),
                        "transaction.boundary": "poll",
                    },
                ),
                RUNNING,
                "exactly-once file source with its own offsets topic",
            ),
            LiveConnector(
                self.name("inventory-table-source"),
                {
                    "connector.class": TABLE_SOURCE,
                    "tasks.max": "1",
                    "topic": inventory,
                    "tables": "orders,customers,shipments",
                    "poll.interval.ms": "1000",
                },
                RUNNING,
                "JDBC-like source: one partition per table, multi-field offsets",
            ),
            LiveConnector(
                self.name("mm2-upstream-source"),
                {
                    **one_broker_mirror(
                        self.bootstrap_servers, app, source_alias=MIRROR_ALIAS, target_alias="local"
                    ),
                    **BYTES,
                },
                RUNNING,
                f"MirrorMaker 2: mirrors {app} to {mirrored} on the same broker",
            ),
            LiveConnector(
                self.name("app-logs-sink"),
                file_sink(app, "app-logs.out"),
                RUNNING,
                "file sink that keeps up",
            ),
            LiveConnector(
                self.name("audit-sink"),
                file_sink(audit, "audit.out"),
                RUNNING,
                "file sink of the audit topic",
            ),
            LiveConnector(
                self.name("clicks-sink"),
                file_sink(self.clicks_topic, "clicks.out"),
                FLAPPING,
                f"file sink paused {self.flap_seconds:g} s out of every {2 * self.flap_seconds:g}:"
                " its lag (records and time) rises and falls",
            ),
            LiveConnector(
                self.name("warehouse-sink"),
                {
                    "connector.class": EXTERNAL_SINK,
                    "tasks.max": "1",
                    "topics": inventory,
                    "file": str(self.path("warehouse.out")),
                    "offsets.file": str(self.path("warehouse.offsets")),
                },
                RUNNING,
                "sink that keeps its offsets in its own file (commits nothing to Connect)",
            ),
            LiveConnector(
                self.name("archive-source"),
                file_source("archive.log", self.topic("archive")),
                STOPPED,
                "STOPPED after reading the archive",
            ),
            LiveConnector(
                self.name("mirror-sink"),
                file_sink(mirrored, "mirror.out"),
                PAUSED,
                "PAUSED sink of the mirrored topic: its lag grows",
            ),
            LiveConnector(
                self.name("orders-sink"),
                file_sink(orders, "orders.out"),
                FAILED,
                "FAILED sink (its file cannot be created): its lag grows from the failure",
            ),
            LiveConnector(
                self.name("payments-sink"),
                {
                    "connector.class": MARKER_SINK,
                    "tasks.max": "1",
                    "topics": self.payments_topic,
                    "file": str(self.path("payments.out")),
                    "fail.on.value": POISON_PAYMENT,
                    # One record a batch: the failing batch is the poison alone, so the
                    # committed offset stops right at it.
                    "consumer.override.max.poll.records": "1",
                    **STRINGS,
                },
                POISONED,
                "sink FAILED on one poison record: its page shows the record and Skip",
            ),
            LiveConnector(
                self.name("retired-source"),
                file_source("retired.log", self.topic("retired")),
                DELETED,
                "deleted after its first commits: its offsets remain",
            ),
        ]

    def prepare_files(self) -> None:
        """Create the data folder and the files the sources read, with a first line or few."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for path in self.source_files.values():
            path.touch()
        for base, lines in (("archive.log", 200), ("retired.log", 50)):
            path = self.path(base)
            if not path.exists():
                path.write_text("".join(f"{base} line {n}\n" for n in range(1, lines + 1)))

    def prepare_topics(self, kafka: dict) -> None:
        """Create the clicks topic (3 partitions) and the payments topic (its records and
        poison) unless they exist."""
        existing = admin.topic_partition_counts(kafka)
        if self.clicks_topic not in existing:
            admin.create_topics(kafka, [admin.TopicSpec(self.clicks_topic, CLICKS_PARTITIONS, {})])
        if self.payments_topic not in existing:
            admin.create_topics(kafka, [admin.TopicSpec(self.payments_topic, 1, {})])
            poison_at = PAYMENTS_BEFORE + 1
            values = {
                n: f'{{"payment": {n}, "amount": "{n},00 EUR"}}'
                for n in range(1, poison_at + 1 + PAYMENTS_AFTER)
            }
            values[poison_at] = POISON_PAYMENT
            producer = producers.java_producer(kafka)
            for n in range(1, poison_at + 1 + PAYMENTS_AFTER):
                producer.produce(
                    self.payments_topic,
                    key=f"payment-{n}".encode(),
                    value=values[n].encode(),
                    on_delivery=producers.raise_on_delivery_error,
                )
            producer.flush(10)

    def ensure(self) -> dict[str, str]:
        """Create the connectors the worker lacks; return what happened to each one.

        The connector meant to be deleted is created once per worker: a marker file says
        which worker deleted it (its URL and broker; both change when the worker restarts).
        """
        existing = self.rest.connectors()
        outcome = {}
        for connector in self.connectors():
            if connector.name in existing:
                outcome[connector.name] = "exists"
                continue
            if connector.intent == DELETED and self._deleted_here(connector):
                outcome[connector.name] = "deleted before"
                continue
            try:
                self.rest.create(connector.name, connector.config)
            except ConnectRestError as exc:
                if exc.status != 409:  # created meanwhile by another run
                    raise
                outcome[connector.name] = "exists"
            else:
                outcome[connector.name] = "created"
        return outcome

    def settle(self) -> dict[str, str]:
        """Bring every connector to the state it shows; return the changes.

        Run after the warm-up: a flapping sink left paused by an earlier run is resumed.
        """
        existing = self.rest.connectors()
        changes = {}
        for connector in self.connectors():
            status = existing.get(connector.name)
            if status is None:
                continue
            if connector.intent == FLAPPING and status.state == "PAUSED":
                self.rest.resume(connector.name)  # the loop pauses it in its turn
                changes[connector.name] = "resumed"
            elif connector.intent == DELETED:
                self.rest.delete(connector.name)
                self._marker(connector).write_text(self._worker())
                changes[connector.name] = "deleted"
            elif connector.intent == STOPPED and status.state != "STOPPED":
                self.rest.stop(connector.name)
                changes[connector.name] = "stopped"
            elif connector.intent == PAUSED and status.state != "PAUSED":
                self.rest.pause(connector.name)
                changes[connector.name] = "paused"
            elif connector.intent == FAILED and not self._broken(connector):
                self.rest.put_config(connector.name, self.broken_config(connector))
                changes[connector.name] = "broken"
        return changes

    def broken_config(self, connector: LiveConnector) -> dict[str, str]:
        """Its config with the sink file under a regular file: the task fails as it starts."""
        blocker = self.path("not-a-folder")
        blocker.write_text("A file where the failed sink expects a folder.\n")
        return {**connector.config, "file": str(blocker / "out.txt")}

    def _broken(self, connector: LiveConnector) -> bool:
        # Just after the connectors were created or changed, the worker refuses reads until
        # its rebalance is done: ask again.
        deadline = time.monotonic() + REBALANCE_WAIT_SECONDS
        while True:
            try:
                config = self.rest.config(connector.name)
            except ConnectRebalancing:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
                continue
            return config.get("file") != connector.config["file"]

    def _worker(self) -> str:
        return f"{self.rest.url} {self.bootstrap_servers}"

    def _marker(self, connector: LiveConnector) -> Path:
        return self.data_dir / f"{connector.name}.deleted"

    def _deleted_here(self, connector: LiveConnector) -> bool:
        try:
            return self._marker(connector).read_text() == self._worker()
        except FileNotFoundError:
            return False

    def flap(self) -> str | None:
        """Pause the flapping sinks if they run, resume them if paused; return the new state."""
        self._flap_paused = not self._flap_paused
        for connector in self.connectors():
            if connector.intent == FLAPPING:
                if self._flap_paused:
                    self.rest.pause(connector.name)
                else:
                    self.rest.resume(connector.name)
        return PAUSED if self._flap_paused else RUNNING

    def intended(self) -> dict[str, str]:
        """The state each remaining connector should reach, as `ConnectorStatus.summary` says."""
        return {
            connector.name: FAILED if connector.intent == POISONED else connector.intent
            for connector in self.connectors()
            if connector.intent not in (DELETED, FLAPPING)
        }

    def wait_for_intended(self, *, timeout: float = 60.0) -> dict[str, str]:
        """Wait until every connector shows its intended state; return what each one shows."""
        return self.wait_for(self.intended(), timeout=timeout)

    def wait_for(self, wanted: dict[str, str], *, timeout: float = 60.0) -> dict[str, str]:
        """Wait until each named connector shows its state in `wanted` (or the time is up);
        return what each one shows (MISSING: the worker does not have it)."""
        deadline = time.monotonic() + timeout
        while True:
            existing = self.rest.connectors()
            if all(_shows(existing.get(name), state) for name, state in wanted.items()):
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        return {name: existing[name].summary if name in existing else "MISSING" for name in wanted}


def one_broker_mirror(
    bootstrap_servers: str, topics: str, *, source_alias: str, target_alias: str
) -> dict[str, str]:
    """A MirrorSourceConnector config mirroring `topics` within one single-node broker.

    Replication factors of 1 (one broker), an explicit topic list (the default `.*` would
    mirror Connect's own topics), a 5 s topic refresh, and no config, ACL, heartbeat or
    checkpoint syncing.
    """
    return {
        "connector.class": MIRROR_SOURCE,
        "tasks.max": "1",
        "source.cluster.alias": source_alias,
        "target.cluster.alias": target_alias,
        "source.cluster.bootstrap.servers": bootstrap_servers,
        "target.cluster.bootstrap.servers": bootstrap_servers,
        "topics": topics,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "refresh.topics.interval.seconds": "5",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
    }


def _shows(status, intent: str) -> bool:
    """Whether a connector shows its intended state; a RUNNING one once its tasks run too."""
    if status is None or status.summary != intent:
        return False
    return intent != RUNNING or (bool(status.tasks) and set(status.tasks) == {"RUNNING"})


class LineWriter:
    """Appends numbered, timestamped lines to the source files and produces some to a topic,
    `lines_per_second` in all.

    The app log gets most of them, the others a share each, at random (seeded), so offsets
    move at different paces. The topic's lines go to its partitions in turn.
    """

    SHARES = {"app": 5, "audit": 2, "orders": 2, "clicks": 3}

    def __init__(
        self,
        files: dict[str, Path],
        *,
        lines_per_second: float,
        topics: dict[str, str] | None = None,
        kafka: dict | None = None,
        seed: int = 7,
    ) -> None:
        self.files = files
        self.topics = topics or {}
        self.producer = producers.java_producer(kafka) if self.topics else None
        self.partitions = admin.topic_partition_counts(kafka) if self.topics else {}
        self.lines_per_second = lines_per_second
        self.random = random.Random(seed)
        # Numbering goes on from the lines an earlier run wrote to the files.
        self.written = {name: _line_count(path) for name, path in files.items()}
        self.written |= dict.fromkeys(self.topics, 0)
        self._owed = 0.0
        self._last = time.monotonic()

    def write_due(self) -> int:
        """Write the lines due since the last call; return how many."""
        now = time.monotonic()
        self._owed += (now - self._last) * self.lines_per_second
        self._last = now
        count = int(self._owed)
        self._owed -= count
        if count:
            self.write(count)
        return count

    def write(self, count: int) -> None:
        names = [*self.files, *self.topics]
        weights = [self.SHARES.get(name, 1) for name in names]
        batch: dict[str, list[str]] = {}
        for name in self.random.choices(names, weights, k=count):
            self.written[name] += 1
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            batch.setdefault(name, []).append(f"{stamp} {name} event {self.written[name]}\n")
        for name, lines in batch.items():
            if name in self.files:
                with open(self.files[name], "a") as file:
                    file.write("".join(lines))
            else:
                self.produce(self.topics[name], lines, first=self.written[name] - len(lines))

    def produce(self, topic: str, lines: list[str], *, first: int) -> None:
        partitions = self.partitions.get(topic, 1)
        for number, line in enumerate(lines, start=first):
            self.producer.produce(
                topic,
                value=line.rstrip("\n").encode(),
                partition=number % partitions,
                on_delivery=producers.raise_on_delivery_error,
            )
        self.producer.poll(0)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(10)


def _line_count(path: Path) -> int:
    try:
        with open(path, "rb") as file:
            return sum(1 for _ in file)
    except FileNotFoundError:
        return 0
