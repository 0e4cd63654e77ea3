"""The benchmarks' writer of new source offsets, as a running connector's commits."""

import threading
import time
from collections import defaultdict

from devkit.demo.options import OFFSETS_PARTITIONS
from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.kafka import producers
from offsets.models import Cluster, SourceOffset


class Writer(threading.Thread):
    """Commits `rate` new offsets a second, round robin over the given partitions."""

    def __init__(self, kafka: dict, topic: str, rows: list[tuple[bytes, dict]], rate: float):
        super().__init__(daemon=True)
        self.producer = producers.java_producer(kafka)
        self.topic, self.rate = topic, rate
        self.current = {key: dict(offset) for key, offset in rows}
        self.keys = list(self.current)
        self.lock = threading.Lock()
        self.pending: dict[bytes, list[tuple[float, dict]]] = defaultdict(list)
        self.running = True

    def run(self) -> None:
        index, started = 0, time.monotonic()
        while self.running:
            key = self.keys[index % len(self.keys)]
            offset = {
                name: value + 1 if isinstance(value, int) else value
                for name, value in self.current[key].items()
            }
            self.current[key] = offset
            partition = java_partition(key, OFFSETS_PARTITIONS)
            self.producer.produce(
                self.topic, key=key, value=jackson.dumps(offset), partition=partition
            )
            self.producer.poll(0)
            with self.lock:
                self.pending[key].append((time.time(), offset))
            index += 1
            time.sleep(max(0.0, started + index / self.rate - time.monotonic()))
        self.producer.flush(30)


def offsets_to_move(cluster: Cluster) -> list[tuple[bytes, dict]]:
    """The cluster's stored worker-topic offsets with a numeric field: what a Writer moves."""
    return [
        (bytes(key), offset)
        for key, offset in SourceOffset.objects.filter(
            cluster=cluster, topic=cluster.offsets_topic, offset__isnull=False
        ).values_list("key_bytes", "offset")
        if isinstance(offset, dict) and any(isinstance(v, int) for v in offset.values())
    ]
