"""Every performance setting of the refresh and the reads, each with why it exists.

The rest of the code asks here and knows no figure. Measurements are from the refresh
benchmark (`make bench-refresh`: ~1M offsets records, 2,000 source partitions, 25 Kafka
partitions) on the project's 2-core machine with the embedded Apache Kafka broker;
docs/performance.md keeps the dated runs.
"""


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

# Up to this many keys the merge is one Python task (offsets.spark.one_task_merge) rather than
# the SQL query of transforms.merge_results, whose planning alone (1.5-2.5 s) took longer than
# an incremental refresh's whole merge. The task holds every row as a Python dict: 50,000 keys
# took 1.2 s and ~300 MB of the worker, 200,000 keys 4.9 s and ~600 MB.
ONE_TASK_MERGE_MAX_KEYS = 50_000

# Up to this many keys a SQL merge is small: it runs in one partition under SMALL_MERGE_CONF.
# The keys are those the last run stored (the read tasks fold records into about a row per
# key); with none stored, the records to read count instead.
SMALL_MERGE_MAX_KEYS = 200_000

# Code generation off (whole-stage, and `factoryMode`, the internal setting Spark's own tests
# use to run interpreted). For a one-row range into one Python task, generating and compiling
# the code costs more than running it interpreted: 147 ms against 157 ms for that collect
# (medians of 11 incrementals each way), plus ~16 ms compiling three classes in a session's
# first one.
NO_CODEGEN_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

# A small merge of a few thousand rows costs Spark's fixed costs, not the data's:
# - no adaptive execution and one shuffle partition: adaptive execution ran each shuffle as a
#   job of its own and re-planned the query after each;
# - no code generation: compiling a query shape new to the session took longer than running
#   it (the first incremental's merge job: ~1.2 s against ~0.4 s);
# - no broadcasts: with every input in one partition a join runs inside its task, where a
#   broadcast is a job of its own;
# - one partition whatever the estimated sizes: estimates multiply through joins, and the
#   Kafka read counts as Long.MaxValue bytes until its cache is computed, so a merge planned
#   while the read still ran shuffled both sides of every join (5-6 stages, 0.9-4 s, against
#   one task, 0.3-0.5 s). A small merge's folded read is at most ~20 MB.
SMALL_MERGE_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    **NO_CODEGEN_CONF,
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    "spark.sql.defaultSizeInBytes": str(20 * 2**20),
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
