"""The merge's inputs that need no Kafka read: the stored per-key state, from the database or
from a live loop's memory of its last save (offsets.refresh.memory), the connectors' own
offsets topics and which of them run, and the Spark session."""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from offsets.domain.connectors import Connector
from offsets.models import Cluster, SourceOffset
from offsets.refresh import memory
from offsets.refresh.results import SOURCE_OFFSET_FIELDS, StoredRows


@dataclass
class MergeInputs:
    """The merge's inputs that need no Kafka read (`merge_inputs`)."""

    spark: object
    # The stored per-key state (STATE_SCHEMA) as an Arrow table; None for a full refresh, or
    # when `previous_rows` holds it instead (built once the merge knows which rows it needs).
    previous_table: object | None
    stored_keys: int  # how many keys the last run stored (a full refresh counts them too)
    # The stored SourceOffset rows the previous state was read from, as the save compares
    # them (`StoredRows`); None for a full refresh, whose save reads them itself.
    stored_rows: StoredRows | None
    own_topics: dict[str, str]  # connector -> its own offsets topic (KIP-618)
    running: frozenset[str]  # connectors that commit offsets now
    # The stored per-key state as STATE_COLUMNS tuples (an incremental refresh that reads it
    # from the database).
    previous_rows: list[tuple] | None = None
    # What this process's last save stored, when nothing was saved after it (a live loop's
    # next round): the stored state comes from it instead of the database.
    remembered: memory.Remembered | None = None


def merge_inputs(
    spark, cluster: Cluster, connectors: list[Connector], *, full: bool
) -> MergeInputs:
    """Start Spark if needed and build the merge's inputs from the database and the configs.

    Built while the snapshot is planned (`offsets.refresh.plan.read_state_and_plan`): that is mostly waiting on
    the broker, and the merge's inputs were ~0.3-0.5 s of its building, which is what an
    incremental refresh's merge waited for. The previous state stays an Arrow table until the
    merge makes its frame.
    """
    spark = spark or start_spark()
    own_topics = {c.name: c.own_offsets_topic for c in connectors if c.own_offsets_topic}
    rows = stored_rows = remembered = None
    if full:
        stored_keys = SourceOffset.objects.filter(cluster=cluster).count()
    elif remembered := _recall(cluster, own_topics):
        stored_rows, stored_keys = remembered.stored, len(remembered.stored)
    else:
        rows, stored_rows = previous_rows(cluster)
        stored_keys = len(rows)
    return MergeInputs(
        spark=spark,
        previous_table=None,
        stored_keys=stored_keys,
        stored_rows=stored_rows,
        own_topics=own_topics,
        running=frozenset(c.name for c in connectors if c.consuming),
        previous_rows=rows,
        remembered=remembered,
    )


def _recall(cluster: Cluster, own_topics: dict[str, str]) -> memory.Remembered | None:
    """This process's memory of its last save, if it still holds and was judged with the same
    topics: a connector's own offsets topic decides which of its keys are effective, so a
    change of topics merges every key again."""
    remembered = memory.recall(cluster)
    if remembered is None:
        return None
    if remembered.own_topics != own_topics or remembered.worker_topic != cluster.offsets_topic:
        return None
    return remembered


def start_spark():
    """The process's Spark session, started now if it is not yet: a refresh starts Spark only
    once Kafka has answered, so that one of an unreachable cluster fails in seconds."""
    from offsets.spark.errors import ConnectUnreachable
    from offsets.spark.session import get_spark

    try:
        return get_spark(settings.SPARK_MASTER, settings.SPARK_CONF, settings.SPARK_REMOTE)
    except ConnectUnreachable:
        raise  # one line already, naming the server
    except Exception as exc:
        raise RuntimeError(f"Spark could not start: {exc}") from exc


def previous_state(cluster: Cluster):
    """Return the stored per-key state as an Arrow table (STATE_SCHEMA) and as the stored
    rows the save compares its results with (`StoredRows`)."""
    rows, stored = previous_rows(cluster)
    return previous_table(rows), stored


def previous_rows(cluster: Cluster) -> tuple[list[tuple], StoredRows]:
    """Return the stored per-key state as STATE_COLUMNS tuples, and as the stored rows the
    save compares its results with (`StoredRows`).

    The save reuses the rows read here rather than reading them again: only a refresh writes
    SourceOffset rows, and the save's lock and read-position check stop it when another
    refresh saved since this one began.
    """
    # values_list, not model instances: decoding the JSON columns nobody reads here cost more
    # than the query.
    stored: StoredRows = {}
    rows = []
    for pk, topic, key_hash, key, *values in SourceOffset.objects.filter(
        cluster=cluster
    ).values_list("pk", "topic", "key_hash", "key_bytes", *SOURCE_OFFSET_FIELDS):
        stored[(topic, key_hash)] = (pk, values)
        field = dict(zip(SOURCE_OFFSET_FIELDS, values, strict=True))
        rows.append(
            (
                topic,
                key_hash,
                bytes(key),
                field["connector"],
                field["partition_text"],
                field["identity"],
                field["offset_text"],
                field["kafka_partition"],
                field["kafka_offset"],
                _epoch_ms(field["last_commit_at"]) or 0,
                field["progress"],
                field["commits"],
                _epoch_ms(field["first_commit_at"]),
                _epoch_ms(field["last_commit_at"]),
            )
        )
    return rows, stored


def remembered_row(row: dict) -> tuple:
    """A remembered latest row (`memory.Remembered.latest`) as the STATE_COLUMNS tuple that
    `previous_rows` reads of its stored row."""
    last = row["last_commit_ms"]
    return (
        row["topic"],
        row["key_hash"],
        bytes(row["key"]),
        row["connector"],
        row["partition_json"],
        row["identity"],
        row["offset_json"],
        row["kafka_partition"],
        row["kafka_offset"],
        last or 0,
        row["progress"],
        row["commits"],
        row["first_commit_ms"],
        last,
    )


def previous_table(rows: list[tuple]):
    """STATE_COLUMNS tuples as an Arrow table (STATE_SCHEMA): a frame with no pandas
    conversion (`merge.previous_frame`)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from offsets.spark.schemas import STATE_COLUMNS, STATE_SCHEMA

    columns = zip(*rows, strict=True) if rows else ([] for _ in STATE_COLUMNS)
    return pa.table(
        {name: list(column) for name, column in zip(STATE_COLUMNS, columns, strict=True)},
        schema=to_arrow_schema(STATE_SCHEMA),
    )


def _epoch_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)
