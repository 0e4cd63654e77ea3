"""What Kafka holds after an edit, read back plainly: offsets topics and sink groups."""

from offsets.formats.offset_records import latest_offsets
from offsets.kafka import groups, reading
from tests.support.demo_data import EOS_TOPICS, S3_GROUP


def latest(settings: dict, topic: str = "connect-offsets") -> dict:
    """Return the last committed record of each key of an offsets topic, by key bytes."""
    fast = {**settings, "fetch.wait.max.ms": 10}
    records = reading.read_topic(fast, topic, timeout=5, batch_size=1)
    return latest_offsets((r.key, r.value) for r in records).offsets


def eos_records(settings: dict) -> dict:
    """Return every record of the exactly-once source's offsets topics, both isolation levels."""
    # In (partition, offset) order: a consumer interleaves partitions in no fixed order, and two
    # reads of the same records once came back interleaved differently (a failed CI run).
    fast = {**settings, "fetch.wait.max.ms": 10}
    return {
        (topic, level): sorted(
            (r.partition, r.offset, r.key, r.value)
            for r in reading.read_topic(fast, topic, isolation_level=level, timeout=5, batch_size=1)
        )
        for topic in EOS_TOPICS
        for level in ("read_committed", "read_uncommitted")
    }


def committed(fresh_demo, group: str = S3_GROUP) -> dict:
    """Return the offsets `group` has committed on the demo's broker ({} for none)."""
    return groups.committed_offsets(fresh_demo.settings, group)
