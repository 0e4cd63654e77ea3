"""Every performance setting of the refresh and the reads, each with why it exists.

The rest of the code asks here and knows no figure. Measurements are from the refresh
benchmark (`make bench-refresh`: ~1M offsets records, 2,000 source partitions, 25 Kafka
partitions) on the project's 2-core machine with the embedded Apache Kafka broker;
docs/performance.md keeps the dated runs.
"""

import math

# --- The session (offsets.spark.session.get_spark) -------------------------------------------

# The driver's JVM compiles with C1 only. The JVM's share of a refresh is planning queries and
# merging folds, a little of a large code base each time, so the C2 compiler kept compiling
# beside the read and the broker: the first full refresh of a session took 16.6-17.7 s with C1
# alone against 20.5-26.9 s, and 26 CPU seconds against 36-46; warm refreshes take the same
# wall time either way, with a quarter less CPU for an incremental. C1 alone would shrink the
# code cache to 48 MB, which one long session fills ("Out of space in CodeCache"), so the
# cache keeps the 240 MB the JVM reserves with both compilers. SPARK_CONF's
# spark.driver.extraJavaOptions replaces both.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

SESSION_CONF = {
    # Batches between the JVM and Python travel as Arrow, not pickled rows.
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The results are small (about a row per key); Spark's default 200 shuffle partitions
    # would each cost a task.
    "spark.sql.shuffle.partitions": "4",
    # The driver holds the collected results, a few hundred MB for a million keys.
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS,
}

# A Spark Connect session's retries of a call the server did not answer (PySpark's
# DefaultPolicy's arguments, milliseconds): 0.25 + 0.5 + 1 + 2 + 4 s, so a refresh whose
# server is down fails in about 8 s, and a server that restarts within that is waited for.
# PySpark's own default waits ten minutes, a refresh's whole lease many times over.
CONNECT_RETRIES = {"max_retries": 5, "initial_backoff": 250, "backoff_multiplier": 2.0}

# --- Refresh claims (offsets.refresh.background) ---------------------------------------------

# A refresh's claim on its cluster is a lease: the process running it renews it every
# REFRESH_LEASE_RENEW_SECONDS (a thread of its own, beside Spark), and a claim whose lease ran
# out is taken over by the next claim, a scheduler's round or a Refresh button's. The lease is
# how long a killed scheduler's cluster waits: a scheduler round comes every second, so the
# next scheduler refreshes it within the lease plus a round (the promise is 30 s). It is also
# how long a live holder may go without reaching the database before it loses its claim: four
# renewals, so a database busy or failing over for 15 s costs nothing, and a holder that lost
# its claim anyway saves nothing (its save checks the claim under the cluster's lock).
REFRESH_LEASE_SECONDS = 20
# A renewal is one UPDATE of one row: every 5 s is nothing for the database, and leaves three
# missed renewals' room inside the lease.
REFRESH_LEASE_RENEW_SECONDS = 5


# --- The read -------------------------------------------------------------------------------

# A read task has a fixed cost (a Python worker, a consumer, a fetch session), so a topic read
# gets about one task per this many records, up to SPARK_MAX_READ_TASKS.
RECORDS_PER_READ_TASK = 100_000

# An incremental refresh's planner reads on to find the partitions' ends anyway; it keeps up to
# this many of those records (one read task's worth, ~30 MB in the driver), and Spark folds
# them in one task instead of fetching them from Kafka a second time.
PLANNER_KEEPS_RECORDS = 100_000


def read_tasks(records: int, max_tasks: int) -> int:
    """How many Spark tasks read a topic holding `records` new records."""
    return max(1, min(max_tasks, records // RECORDS_PER_READ_TASK + 1))


# --- The merge ------------------------------------------------------------------------------

# The merge (offsets.spark.merge) runs its rules in Python over every row of a partition at
# once, each row a dict: 50,000 keys took a task 1.2 s and ~300 MB of its Python worker,
# 200,000 keys 4.9 s and ~600 MB. So a merge gets a task per this many keys, which bounds a
# worker's memory and spreads a large merge over the executors' cores; below it, the merge is
# one task with no shuffle.
KEYS_PER_MERGE_TASK = 50_000


def merge_tasks(keys: int) -> int:
    """How many Spark tasks merge about `keys` keys."""
    return max(1, math.ceil(keys / KEYS_PER_MERGE_TASK))


# A merge of one task runs without generated code (whole-stage, and `factoryMode`, the
# internal setting Spark's own tests use to run interpreted): its JVM side moves a few
# thousand rows between Python stages, and generating and compiling code for that costs more
# than running it interpreted. An incremental merge of 10,000 kept records into 2,000 keys:
# 0.47 s against 0.52 s (medians of 19 each, interleaved in one session, on a loaded 2-core
# machine). A merge of several tasks keeps generated code: it moves a row or two per key
# through a shuffle, millions of rows for a large cluster, and was not measured without it.
NO_CODEGEN_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


# --- Kafka reads (offsets.kafka) ----------------------------------------------------------------


# consume(n, timeout) waits until n messages arrived OR the timeout passed, so a long timeout
# is paid in full at every end of data: poll briefly and keep our own deadline instead.
POLL_SECONDS = 0.02

# Reads here run to the end of the data: at the end, a fetch would otherwise wait the default
# 500 ms on the broker for records that are not coming before the end is reported.
READER_WAIT_MS = 20
READER_SETTINGS = {"fetch.wait.max.ms": READER_WAIT_MS}

# The snapshot planner's fetch wait. The planner reads with fetch.min.bytes 1
# (short_read_settings), so Kafka answers a fetch as soon as one planned partition has a
# record to send and the wait is paid only when none has: once in a refresh with nothing new,
# or whose partitions end in a transaction marker (a control record the consumer never
# hands over). The figure is the bound on that one wait, small beside a refresh's Spark work.
PLANNER_WAIT_MS = 50

# The planner reads on from a previous position through at most this many records per
# partition to find its end; further behind, it skips ahead to the last record.
CATCH_UP_RECORDS = 20_000

# How many messages the planner takes off the queue at a time; fewer means it was drained.
PLANNER_BATCH = 1000


# Live reads of the edits (staging, lock check, verification) run to the end of the topic and
# are waited on by a person. At the end, the broker holds an empty fetch for fetch.wait.max.ms
# (500 ms by default), and a consume call asking for a batch waits for it to fill until its
# timeout: asking for one message at a time returns as soon as anything (the end included)
# arrives, and is no slower per record.
LIVE_READ_SETTINGS = {"fetch.wait.max.ms": 10}
LIVE_READ_BATCH = 1


# --- Kafka writes (offsets.kafka.producers) ---------------------------------------------------

# A transaction's first AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS while the
# coordinator still writes the previous transaction's markers. Java's producer asks again after
# 20 ms then (TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS), librdkafka after its
# retry.backoff.ms, 100 ms: one transaction after another on one producer (the demo's
# exactly-once source) took 83 ms each against 40 ms with this.
TRANSACTIONAL_RETRY_BACKOFF_MS = 20


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


# --- Connect REST calls (offsets.kafka.connect_rest) ----------------------------------------

# A worker call's whole answer must arrive within this many times its read timeout (30 s, the
# pages' probes 10 s). The read timeout bounds each wait for a byte only, so an answer
# dripping a byte within it would hold the request, and a server thread, without end. Twice
# gives a worker that starts answering at the last moment as long again to send the rest;
# Connect's largest answers (below) take well under a second on a LAN.
CONNECT_DEADLINE_FACTOR = 2

# The most of one worker answer the dashboard reads; a larger answer fails, naming this. The
# largest real answers are GET /connectors/{name}/offsets of connectors with many
# partitions, in Connect's compact JSON: 105 bytes a partition for a file source, 110 for a
# sink or MirrorMaker 2, 150 for a JDBC source, so 5.0-7.1 MiB for 50,000 partitions (the
# largest edits the pages are measured with, docs/hostile-data.md). 32 MiB holds 220,000
# partitions of the largest shape; parsed, such an answer takes ~6 times its size in Python
# objects, so a few at once stay within a web worker's memory.
CONNECT_ANSWER_MAX_BYTES = 32 * 2**20

# An offline edit of a standalone worker's offsets file reads it twice this far apart: a
# running worker rewrites it at every offset flush (offset.flush.interval.ms, 60 s by
# default), so this catches one flushing right then, not one idle between flushes; the check
# that no worker answers at its REST URL is the one that proves it stopped.
OFFSETS_FILE_STILL_SECONDS = 0.5
# How long that check waits for a worker's answer: a stopped worker's port refuses at once.
OFFSETS_FILE_PROBE_SECONDS = 3.0


# --- Files an admin points the dashboard at (offsets.kafka.files) ------------------------------

# The most of a standalone worker's offsets file the dashboard reads; a larger file is refused,
# naming this. An entry takes its key and value as in the offsets topic plus 20 bytes of Java
# serialization: ~90 bytes for a file source, 200-300 for a JDBC or Debezium source, so a
# worker with thousands of source partitions writes a few MB. 64 MiB holds 200,000 entries of
# the largest shape; decoded, the file takes a few times its size, read on a request thread.
STANDALONE_OFFSETS_FILE_MAX_BYTES = 64 * 2**20

# The most of a sink's offsets store file (the project's plugin's properties file) the
# dashboard reads. A line is `topic\:partition=offset`, 20-80 bytes, so 16 MiB holds 200,000
# partitions, more than any one sink reads.
SINK_STORE_FILE_MAX_BYTES = 16 * 2**20

# The most of a `${file:...}` client setting the dashboard reads. A password is a line; the
# largest value is a PEM CA bundle in `ssl.ca.pem`, ~220 KB for a system's whole bundle.
CLIENT_SETTING_FILE_MAX_BYTES = 2**20
