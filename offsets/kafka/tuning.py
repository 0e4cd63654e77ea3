"""How this project's Kafka readers poll and fetch, and why each setting has its value."""

# consume(n, timeout) waits until n messages arrived OR the timeout passed, so a long timeout
# is paid in full at every end of data: poll briefly and keep our own deadline instead.
POLL_SECONDS = 0.02

# Reads here run to the end of the data: at the end, a fetch would otherwise wait the default
# 500 ms on the broker for records that are not coming before the end is reported.
READER_WAIT_MS = 20
READER_SETTINGS = {"fetch.wait.max.ms": READER_WAIT_MS}

# The snapshot planner's fetch wait. On Kafka the wait matters only when no planned partition
# has a record to send (a fetch with records is answered at once): a refresh with nothing
# new, or partitions ending in a transaction marker, cost it once. Brokers that stop filling
# an answer once the wait has passed (some Kafka-compatible ones) answer a refresh's new
# records in fewer rounds with 50 ms than with 20.
PLANNER_WAIT_MS = 50

# The planner reads on from a previous position through at most this many records per
# partition to find its end; further behind, it skips ahead to the last record.
CATCH_UP_RECORDS = 20_000

# How many messages the planner takes off the queue at a time; fewer means it was drained.
PLANNER_BATCH = 1000


def short_read_settings(settings: dict, *, wait_ms: int = READER_WAIT_MS) -> dict:
    """Return a cluster's settings for reads that fetch little: Connect's config and status
    topics, the planner's read of the offsets topics' new records (with PLANNER_WAIT_MS), a
    record's timestamp.

    A cluster's fetch tuning is for the bulk reads of the offsets topic, and a short read
    gains nothing from it: with a large fetch.min.bytes every fetch of a small topic waits out
    the whole fetch.wait.max.ms. The fetch wait is `wait_ms`, or a shorter one the cluster
    sets.
    """
    wait = min(int(settings.get("fetch.wait.max.ms", wait_ms)), wait_ms)
    return {**settings, "fetch.min.bytes": 1, "fetch.wait.max.ms": wait}
