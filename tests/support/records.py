"""Records of offsets topics for the fold's and the merge's tests, made by hand or at random."""

import random
from collections import Counter

import pyarrow as pa

from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.spark import partials as P

WORKER = "connect-offsets"
OWN = "connect-offsets-eos"


def key(connector, partition):
    return jackson.dumps_key(connector, partition)


def value(offset):
    return None if offset is None else jackson.dumps(offset)


class Message:
    """The five accessors of a confluent-kafka message that the fold reads."""

    def __init__(self, partition, offset, timestamp_ms, key, value):
        self._fields = (partition, offset, timestamp_ms, key, value)

    def partition(self):
        return self._fields[0]

    def offset(self):
        return self._fields[1]

    def timestamp(self):
        return (1, self._fields[2])

    def key(self):
        return self._fields[3]

    def value(self):
        return self._fields[4]


def random_records(seed: int, count: int) -> list[tuple]:
    """Return `count` random records of the seed `seed`, in topic order."""
    # Each record: (topic, kafka_partition, kafka_offset, timestamp_ms, key, value).
    rng = random.Random(seed)
    keys = [key(c, {"t": i}) for c in ("a", "b", "eos") for i in range(4)]
    keys.append(b'["a", {"t":0}]')  # the same logical partition as a's t=0: key drift
    progress: Counter = Counter()
    next_offset: Counter = Counter()
    records = []
    for step in range(count):
        k = rng.choice(keys)
        topic = OWN if k.startswith(b'["eos"') and rng.random() < 0.5 else WORKER
        roll = rng.random()
        if roll < 0.65:
            progress[k] += rng.randint(1, 5)
            v = value({"offset": progress[k]})
        elif roll < 0.75:
            progress[k] -= rng.randint(1, 20)  # a rewind
            v = value({"offset": progress[k]})
        elif roll < 0.83:
            v = None
        elif roll < 0.88:
            v = value({"file": "f"})  # no progress field
        elif roll < 0.94:
            v = rng.choice([b"not json", b"[1]", b"\xff\xfe", b'{"a":{"b":1}}'])
        else:
            k = rng.choice([b"junk", b'{"a":1}', None, b'["c",[1]]'])
            v = value({"offset": 1})
        # Now and then a key the database cannot store (without drawing on rng: the seeds'
        # other cases stay as they were).
        if step % 41 == 40:
            k = key("c\x00", {"t": "x"})
        elif step % 43 == 42:
            k = key("c", {"t": "\ud800"})
        elif (step % 37 == 36 and k in keys) or step == count - 1:
            # A value the runtime reads but the database cannot store; the last record is
            # one, so that a read always ends some key on one.
            k = k if k in keys else keys[1]
            v = value({"offset": progress[k], "file": "\ud800"})
        partition = java_partition(k, 3) if k is not None else rng.randrange(3)
        timestamp = 1_000_000 + step * 1000 + rng.randint(-900, 900)
        slot = (topic, partition)
        records.append(
            (
                topic,
                partition,
                next_offset[slot],
                timestamp if step % 47 != 46 else 2**62,  # now and then after the year 9999
                k,
                v,
            )
        )
        next_offset[slot] += 1
    return records


def partials_frame(spark, records, bucket_seconds=300):
    """Fold the records like the source does: per topic, Kafka partitions split over tasks."""
    batches = []
    for topic in (WORKER, OWN):
        for task in ({0, 2}, {1}):
            messages = [Message(*r[1:]) for r in records if r[0] == topic and r[1] in task]
            batches += P.fold_messages(topic, bucket_seconds, [messages])
    table = pa.Table.from_batches(batches, schema=P.SUMMARY_ARROW)
    return spark.createDataFrame(table.to_pandas(), P.SUMMARY_SCHEMA)
