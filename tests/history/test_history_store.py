"""The per-commit history: written by the read tasks (or, in older runs, by Spark's own
writer), read back for one partition."""

import hashlib
import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsets.history import files as history_files
from offsets.history import reading as history
from offsets.history import store as history_store
from offsets.models import Cluster
from offsets.spark import kafka_source
from offsets.spark import partials as P

# The spark tier, whether or not a test asks for the session: these are the rules of the
# refresh's Spark job.
pytestmark = pytest.mark.spark

# Every character Spark escapes in a folder name, and some it keeps (space, non-ASCII).
ODD_NAME = "odd \"#%'*/:=?\\{[]^\x01\x7f name é"
KEYS = 600
COMMITS = 12
START_MS = 1_790_000_000_000
SCHEMA = (
    "connector string, topic string, key_hash string, kafka_partition int, "
    "kafka_offset long, timestamp_ms long, progress double, offset_json string"
)


def key_hash(index: int) -> str:
    return hashlib.sha1(f"key-{index}".encode()).hexdigest()


def commit_rows(spark, connector: str, first_commit: int, *, rewind_key: int | None = None):
    """COMMITS commits of each of KEYS partitions, in no particular order (as Spark has them)."""
    rows = []
    for commit in range(first_commit, first_commit + COMMITS):
        for index in range(KEYS):
            progress = float(index * 1000 + commit)
            if index == rewind_key and commit == first_commit + COMMITS // 2:
                progress -= 500  # one commit goes backwards
            rows.append(
                (
                    connector,
                    "connect-offsets",
                    key_hash(index),
                    index % 5,
                    commit * KEYS + index,
                    START_MS + commit * 60_000,
                    progress,
                    json.dumps({"position": progress}),
                )
            )
    return spark.createDataFrame(rows, SCHEMA)


@pytest.fixture
def cluster(settings, tmp_path, monkeypatch):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path)
    # Small row groups so these few thousand rows make many of them, as millions would.
    monkeypatch.setattr(history_files, "ROW_GROUP_BYTES", 16 * 1024)
    return Cluster(name="prod")


def write(commits, run_dir, writer: str) -> None:
    """Write a run's history as a read task does, or as Spark's writer did (older runs)."""
    if writer == "spark":
        (
            commits.sortWithinPartitions(*history_files.SORT_KEYS)
            .write.option("parquet.block.size", history_files.ROW_GROUP_BYTES)
            .partitionBy("connector")
            .parquet(str(run_dir))
        )
    else:
        # As the fold hands them over: commit rows among the summary kinds.
        batches = commits.selectExpr("'commit' AS kind", "*").toArrow().to_batches()
        assert list(kafka_source.write_commit_batches(batches, run_dir, "part-task")) == []


@pytest.fixture(params=["spark", "task"])
def two_runs(request, spark, cluster):
    """An incremental history: two runs, each with the commits it read."""
    root = history_store.history_path(cluster)
    first = commit_rows(spark, "jdbc", 0, rewind_key=7).unionByName(commit_rows(spark, ODD_NAME, 0))
    write(first, root / "run=1", request.param)
    write(commit_rows(spark, "jdbc", COMMITS), root / "run=2", request.param)
    return cluster


def test_a_read_task_writes_the_same_files_as_sparks_writer(spark, cluster):
    """Same folders, columns, types and rows in the same order as Spark's partitioned writer,
    which wrote the history of older runs: readers cannot tell them apart."""
    root = history_store.history_path(cluster)
    commits = commit_rows(spark, "jdbc", 0, rewind_key=7).unionByName(
        commit_rows(spark, ODD_NAME, 0)
    )
    write(commits.coalesce(1), root / "run=1", "spark")
    write(commits, root / "run=2", "task")
    for connector in ("jdbc", ODD_NAME):
        spark_file, task_file = history.connector_files(cluster=cluster, connector=connector)
        assert spark_file.parent.name == task_file.parent.name
        spark_table, task_table = pq.read_table(spark_file), pq.read_table(task_file)
        assert task_table.schema.remove_metadata() == spark_table.schema.remove_metadata()
        assert task_table.to_pylist() == spark_table.to_pylist()
        assert len(task_table) == KEYS * COMMITS


def test_it_reads_one_partitions_commits_from_every_run_oldest_first(two_runs):
    points = history.partition_history(cluster=two_runs, connector="jdbc", key_hash=key_hash(7))
    assert [p.kafka_offset for p in points] == [c * KEYS + 7 for c in range(2 * COMMITS)]
    assert [p.at.timestamp() * 1000 for p in points] == [
        START_MS + c * 60_000 for c in range(2 * COMMITS)
    ]
    assert [p.rewind for p in points].count(True) == 1
    assert points[COMMITS // 2].rewind
    assert points[-1].offset == {"position": 7 * 1000 + 2 * COMMITS - 1.0}


def test_it_finds_the_folder_spark_wrote_for_a_name_it_escapes(two_runs):
    files = history.connector_files(cluster=two_runs, connector=ODD_NAME)
    # Found at all (a wrong folder name finds none); one file per read task holding its rows.
    assert files
    points = history.partition_history(cluster=two_runs, connector=ODD_NAME, key_hash=key_hash(3))
    assert len(points) == COMMITS
    # The other connector's rows are not mixed in.
    assert (
        history.partition_history(cluster=two_runs, connector="jdbc ", key_hash=key_hash(3)) == []
    )


def test_it_keeps_commits_since_a_time(two_runs):
    since_ms = START_MS + (2 * COMMITS - 3) * 60_000
    points = history.partition_history(
        cluster=two_runs,
        connector="jdbc",
        key_hash=key_hash(1),
        since=datetime.fromtimestamp(since_ms / 1000, tz=UTC),
    )
    assert len(points) == 3


def test_each_row_group_holds_a_narrow_key_range_in_order(two_runs):
    """What makes one partition cheap to read: sorted keys, so groups do not overlap."""
    for path in history.connector_files(cluster=two_runs, connector="jdbc"):
        metadata = pq.ParquetFile(path).metadata
        column = pq.ParquetFile(path).schema_arrow.get_field_index("key_hash")
        ranges = [
            (group.column(column).statistics.min, group.column(column).statistics.max)
            for group in (metadata.row_group(i) for i in range(metadata.num_row_groups))
        ]
        assert len(ranges) > 4
        assert all(ranges[i][1] <= ranges[i + 1][0] for i in range(len(ranges) - 1))


def test_a_partitions_history_reads_only_the_row_groups_that_can_hold_it(two_runs, monkeypatch):
    read: list[int] = []
    original = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *args, **kwargs):
        read.append(len(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    points = history.partition_history(cluster=two_runs, connector="jdbc", key_hash=key_hash(300))
    assert len(points) == 2 * COMMITS
    # One read per file (a file per read task and run); a key's rows span at most two
    # neighbouring groups of each, out of the many each file has.
    files = history.connector_files(cluster=two_runs, connector="jdbc")
    assert len(read) == len(files) and all(count <= 2 for count in read)
    assert sum(read) < sum(pq.ParquetFile(path).metadata.num_row_groups for path in files) / 4


def test_no_history_yet_is_an_empty_list(cluster):
    assert history.partition_history(cluster=cluster, connector="jdbc", key_hash=key_hash(1)) == []


def test_a_read_task_passes_the_folds_on_and_writes_its_commits_in_bounded_sorted_files(
    spark, cluster, monkeypatch
):
    monkeypatch.setattr(history_files, "COMMITS_PER_FILE", 2_000)
    commits = commit_rows(spark, "jdbc", 0).selectExpr("'commit' AS kind", "*").toArrow()
    folds = pa.table(
        {"kind": [P.KEY, P.RECORDS], "topic": ["connect-offsets"] * 2, "count": [1, 7]}
    )
    batches = [*commits.to_batches(max_chunksize=1_500), *folds.to_batches()]
    run_dir = history_store.history_path(cluster) / "run=1"

    passed = list(kafka_source.write_commit_batches(batches, run_dir, "part-task"))

    assert pa.Table.from_batches(passed).to_pylist() == folds.to_pylist()
    files = history.connector_files(cluster=cluster, connector="jdbc")
    # 7,200 commits in batches of 1,500, written once 2,000 are held: 3,000 + 3,000 + 1,200.
    assert [f.name for f in files] == [f"part-task-00{n}.parquet" for n in range(3)]
    tables = [pq.read_table(f) for f in files]
    assert sum(len(t) for t in tables) == KEYS * COMMITS
    for table in tables:
        keys = [(r["key_hash"], r["timestamp_ms"]) for r in table.to_pylist()]
        assert keys == sorted(keys)


def test_a_read_tasks_file_names_depend_on_its_topic_and_partitions_only():
    stem = history_files.file_stem("connect-offsets", [3, 1])
    assert stem == history_files.file_stem("connect-offsets", [1, 3])
    assert stem != history_files.file_stem("connect-offsets", [1])
    assert stem != history_files.file_stem("connect-offsets-own", [1, 3])
