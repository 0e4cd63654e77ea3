"""The demo Connect cluster as the tests know it: its clock, its connectors, its result rows."""

import time

from offsets.formats import jackson

# The demo ends at the start of the test run (to the minute), so that "how long ago" rules
# (stalls, lag in time) see what an operator would; the records are otherwise deterministic.
DEMO_END_MS = int(time.time() * 1000) // 60_000 * 60_000

# The refresh's results, in the order their foreign keys need.
REFRESH_MODELS = (
    "Cluster",
    "RefreshRun",
    "ReadPosition",
    "ConnectorSnapshot",
    "SourceOffset",
    "CommitBucket",
    "RewindEvent",
    "KeyDrift",
    "MalformedCount",
    "SinkPartitionLag",
    "LagSample",
    "ConnectorStateChange",
)

AUDIT = "file-source-audit"  # STOPPED in the demo
AUDIT_PARTITION = {"filename": "/var/log/app/audit.log"}
AUDIT_KEY = jackson.dumps_key(AUDIT, AUDIT_PARTITION)

EOS = "orders-cdc-eos"  # a source with its own offsets topic, mirrored to the worker topic
EOS_TOPIC = "connect-offsets-orders-cdc-eos"
EOS_KEY = jackson.dumps_key(EOS, {"server": "orders-db"})
EOS_TOPICS = (EOS_TOPIC, "connect-offsets")  # an edit of EOS writes both

S3 = "s3-sink-orders"  # topics orders (6 partitions) and payments (3)
S3_GROUP = "connect-s3-sink-orders"
# The partition of S3's that the partial deletes take away: the others must come back.
DELETED = ("payments", 2)
