"""Seed the offsets topics of a bare broker and read them back: helpers the refresh benchmarks share.

No side effects on import: the benchmarks configure Django before they import this module.
"""

import shutil
import subprocess
import time
from dataclasses import dataclass

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import SeedSummary, write_demo
from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.kafka import producers

# The shared offsets topic and the exactly-once connector's own: what a refresh reads.
OFFSETS_TOPICS = ["connect-offsets", "connect-offsets-orders-cdc-eos"]
OWN_TOPICS = {"orders-cdc-eos": OFFSETS_TOPICS[1]}
OFFSETS_PARTITIONS = 25
# Flushing every so many records bounds the producer's local queue.
FLUSH_EVERY = 10_000


@dataclass(frozen=True)
class KcatRead:
    seconds: float | None  # None: kcat is missing or failed
    lines: int
    text: str


def seed_bulk(settings: dict, *, connectors: int, partitions: int, commits: int) -> SeedSummary:
    """Write the demo's connectors plus `connectors` bulk sources sharing `partitions` source
    partitions, `commits` commits each (one a minute), as seed_demo does on a bare broker."""
    print(
        f"Seeding {connectors:,} bulk connectors, {partitions:,} source partitions, "
        f"{commits:,} commits each ...",
        flush=True,
    )
    options = DemoOptions(
        end_ms=int(time.time() * 1000),
        hours=commits / 60,
        bulk_connectors=connectors,
        bulk_partitions=partitions,
    )
    summary = write_demo(settings, build_demo(options))
    total = sum(summary.records_by_topic.values())
    print(
        f"  {summary.records_by_topic['connect-offsets']:,} records in connect-offsets "
        f"({OFFSETS_PARTITIONS} partitions), {total:,} Connect records in {summary.seconds:.1f}s\n",
        flush=True,
    )
    return summary


def kcat_read(bootstrap: str, topics: list[str]) -> KcatRead:
    """kcat's read of `topics` (one after the other) to their ends: the physical baseline."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if not kcat:
        return KcatRead(None, 0, "not installed (apt-get install kcat)")
    started = time.monotonic()
    lines = 0
    for topic in topics:
        result = subprocess.run(
            [kcat, "-C", "-b", bootstrap, "-t", topic, "-e", "-q", "-f", "%k%s\n"],
            capture_output=True,
            timeout=1800,
        )
        if result.returncode != 0:
            reason = result.stderr.decode(errors="replace").strip()[:120]
            return KcatRead(None, 0, f"failed ({reason})")
        lines += result.stdout.count(b"\n")
    seconds = time.monotonic() - started
    return KcatRead(seconds, lines, f"{seconds:.2f} s ({lines:,} lines)")


def write_new_offsets(settings: dict, keys: list[bytes], count: int, first_value: int) -> None:
    """Write `count` new commits of the given keys to connect-offsets, round robin, each to
    the partition Connect's producer would choose."""
    producer = producers.java_producer(settings)
    for index in range(count):
        key = keys[index % len(keys)]
        producer.produce(
            "connect-offsets",
            key=key,
            value=jackson.dumps({"incrementing": first_value + index}),
            partition=java_partition(key, OFFSETS_PARTITIONS),
        )
        if index % FLUSH_EVERY == 0:
            producer.flush()
    producer.flush()
