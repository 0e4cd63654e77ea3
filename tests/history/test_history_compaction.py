"""Merging the history's run folders (a `--every` loop adds one per refresh)."""

import hashlib
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsets.history import files as history_files
from offsets.history import reading as history
from offsets.history import store as history_store
from offsets.models import Cluster

KEYS = 40
START_MS = 1_790_000_000_000


def key_hash(index: int) -> str:
    return hashlib.sha1(f"key-{index}".encode()).hexdigest()


def commits(connector: str, run: int, per_key: int = 3) -> pa.Table:
    """`per_key` commits of each key for one run, as a read task has them (any order)."""
    rows = [
        {
            "connector": connector,
            "topic": "connect-offsets",
            "key_hash": key_hash(index),
            "kafka_partition": index % 5,
            "kafka_offset": (run * per_key + commit) * KEYS + index,
            "timestamp_ms": START_MS + (run * per_key + commit) * 60_000,
            "progress": float(run * per_key + commit),
            "offset_json": json.dumps({"position": run * per_key + commit}),
        }
        for commit in range(per_key)
        for index in reversed(range(KEYS))
    ]
    return pa.Table.from_pylist(rows)


@pytest.fixture
def cluster(settings, tmp_path):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path)
    return Cluster(name="prod")


@pytest.fixture
def root(cluster):
    return history_store.history_path(cluster)


def write_run(root, run: int, *connectors: str, per_key: int = 3) -> None:
    for connector in connectors:
        history_files.write_commits(
            commits(connector, run, per_key), root / f"run={run}", f"part-{len(connector)}"
        )


def chart(cluster, connector="jdbc", key=7):
    return [
        (p.kafka_offset, p.progress, p.rewind)
        for p in history.partition_history(
            cluster=cluster, connector=connector, key_hash=key_hash(key)
        )
    ]


def all_rows(root, connector="jdbc"):
    folder = f"connector={history_files.spark_folder_name(connector)}"
    tables = [
        pq.read_table(p)
        for run in history_files.run_folders(root)
        for p in (run / folder).glob("*.parquet")
    ]
    return sorted(pa.concat_tables(tables).to_pylist(), key=lambda r: r["kafka_offset"])


@pytest.mark.parametrize(
    ("sizes", "merged"),
    [
        ([100] * 16, 0),  # at most the limit: nothing to do
        ([100] * 17, 17),  # equal runs: all of them (a bigger one would stop the merge)
        ([10_000, *[100] * 16], 16),  # the small runs after a full refresh's big one
        ([10_000, 1_500, *[100] * 15], 15),  # ... then the next small runs, not the tier before
        # Each older folder as big as all newer ones together: merged until at most half the
        # limit stays.
        ([*(2**k for k in range(16, 0, -1)), 1, 1], 11),
    ],
)
def test_the_newest_runs_are_merged_back_to_a_bigger_folder(sizes, merged):
    assert history_files.runs_to_compact(sizes, 16) == merged


def test_merging_runs_keeps_every_commit_and_the_charts_the_same(cluster, root):
    write_run(root, 1, "jdbc", "odd name/é", per_key=200)  # a full refresh
    for run in range(2, 8):
        write_run(root, run, "jdbc")
    write_run(root, 8, "odd name/é")
    before = {c: (chart(cluster, c), all_rows(root, c)) for c in ("jdbc", "odd name/é")}

    merged = history_files.compact_runs(root, 4)

    assert merged == root / "run=2-8"
    assert [f.name for f in history_files.run_folders(root)] == ["run=1", "run=2-8"]
    for connector, (points, rows) in before.items():
        assert chart(cluster, connector) == points
        assert all_rows(root, connector) == rows
    assert len(before["jdbc"][0]) == 200 + 6 * 3
    # One file per connector, sorted by key as the charts' row-group lookup needs.
    files = sorted((merged / "connector=jdbc").glob("*.parquet"))
    assert len(files) == 1
    table = pq.read_table(files[0])
    keys = [(r["key_hash"], r["timestamp_ms"]) for r in table.to_pylist()]
    assert keys == sorted(keys)
    assert history_files.compact_runs(root, 4) is None  # two folders left: nothing to do


def test_a_loop_of_refreshes_keeps_few_folders(cluster, root):
    for run in range(1, 200):
        write_run(root, run, "jdbc", per_key=1)
        history_files.compact_runs(root, 8)
        assert len(history_files.run_folders(root)) <= 8
    points = chart(cluster)
    assert [offset for offset, _, _ in points] == [run * KEYS + 7 for run in range(1, 200)]


def test_a_compaction_cut_off_before_deleting_the_runs_shows_no_commit_twice(cluster, root):
    for run in range(1, 6):
        write_run(root, run, "jdbc")
    before = chart(cluster)
    # Cut off after the merged folder was put in place: the runs it merged are still there.
    kept = root.parent / "kept"
    shutil.copytree(root, kept)
    history_files.compact_runs(root, 2)
    for run in kept.iterdir():
        shutil.copytree(run, root / run.name, dirs_exist_ok=True)
    assert len(history_files.run_folders(root)) == 6

    assert chart(cluster) == before
    # The next compaction mends it: each commit once on disk.
    merged = history_files.compact_runs(root, 2)
    assert [f.name for f in history_files.run_folders(root)] == [merged.name] == ["run=1-5"]
    rows = all_rows(root)
    assert len(rows) == len({(r["topic"], r["kafka_partition"], r["kafka_offset"]) for r in rows})
    assert len(rows) == 5 * 3 * KEYS
    assert chart(cluster) == before


def test_folders_that_are_not_runs_are_left_alone(cluster, root):
    for run in range(1, 4):
        write_run(root, run, "jdbc")
    before = chart(cluster)
    write_run(root, 99, "jdbc")
    for name in ("run=old", "run=3-", "run=7.bak"):
        shutil.copytree(root / "run=99", root / name)
    shutil.rmtree(root / "run=99")
    (root / "run=8").write_text("not a folder")

    assert [f.name for f in history_files.run_folders(root)] == ["run=1", "run=2", "run=3"]
    assert chart(cluster) == before
    assert history_files.compact_runs(root, 2).name == "run=1-3"
    assert (root / "run=old").is_dir() and (root / "run=8").is_file()
    assert chart(cluster) == before


def test_with_few_folders_the_sizes_of_their_files_are_not_read(root, monkeypatch):
    """The check at the end of every refresh lists the run folders, and reads their sizes
    only when there are more than the limit."""
    for run in range(1, 5):
        write_run(root, run, "jdbc")
    sized = []
    folder_rows = history_files.folder_rows

    def recording(folder):
        sized.append(folder.name)
        return folder_rows(folder)

    monkeypatch.setattr(history_files, "folder_rows", recording)
    assert history_files.compact_runs(root, 4) is None
    assert sized == []
    write_run(root, 5, "jdbc")
    assert history_files.compact_runs(root, 4) is not None
    assert len(sized) == 5


def test_a_merge_left_half_written_is_ignored_then_removed(cluster, root):
    for run in range(1, 4):
        write_run(root, run, "jdbc")
    before = chart(cluster)
    staging = root / f"{history_files.STAGING_PREFIX}1-2"
    write_run(staging.parent, 99, "jdbc")  # anything: readers must not see it
    (root / "run=99").rename(staging)
    assert chart(cluster) == before
    history_files.compact_runs(root, 16)  # nothing to merge, but the leftover goes
    assert not staging.exists()
    assert chart(cluster) == before


def test_a_chart_read_while_runs_are_merged_lists_the_folders_again(cluster, root, monkeypatch):
    for run in range(1, 6):
        write_run(root, run, "jdbc")
    before = chart(cluster)
    original = history._read_key
    calls = []

    def merge_then_read(path, key):
        if not calls:
            history_files.compact_runs(root, 2)  # between the listing and the reading
        calls.append(path)
        return original(path, key)

    monkeypatch.setattr(history, "_read_key", merge_then_read)
    assert chart(cluster) == before
    assert calls[-1].parent.parent.name == "run=1-5"


def test_a_refresh_merges_the_runs_and_a_failed_merge_does_not_fail_it(cluster, root, monkeypatch):
    for run in range(1, 6):
        write_run(root, run, "jdbc")
    said = []
    monkeypatch.setattr(history_files, "MAX_RUN_FOLDERS", 4)
    history_store.compact_history(cluster, said.append)
    assert [f.name for f in history_files.run_folders(root)] == ["run=1-5"]
    assert said == ["merged the history of runs 1-5 into one folder"]

    for run in range(6, 11):
        write_run(root, run, "jdbc")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    history_store.compact_history(cluster, said.append)
    assert len(history_files.run_folders(root)) == 6
    assert len(said) == 1


def test_a_loops_merged_folder_is_not_merged_again_with_each_batch_of_small_runs(root):
    """Tiers by the commits a folder holds, not its bytes: a live loop's runs are a small file
    per connector each, whose Parquet overhead made fifteen of them outweigh the folder
    merged from sixteen, so every merge took it in again (runs 1-16, then 1-31, 1-46...)."""
    connectors = [f"c{n}" for n in range(12)]
    for run in range(1, 18):
        write_run(root, run, *connectors, per_key=1)
    first = history_files.compact_runs(root, 16)
    assert first is not None
    merged_runs = history_files.run_span(first)
    for run in range(18, 40):
        write_run(root, run, *connectors, per_key=1)
        history_files.compact_runs(root, 16)
    spans = [history_files.run_span(f) for f in history_files.run_folders(root)]
    # The first merged folder stays as it was: later runs were merged among themselves.
    assert merged_runs in spans
    assert history_files.folder_rows(first) == 12 * KEYS * (merged_runs[1] - merged_runs[0] + 1)


def test_a_merge_waits_for_no_other_and_skips_runs_still_being_written(root):
    for run in range(1, 6):
        write_run(root, run, "jdbc")
    with history_files.history_lock(root, wait=True):
        assert history_files.compact_runs(root, 2) is None  # another process is merging
    merged = history_files.compact_runs(root, 2, upto=4)
    assert history_files.run_span(merged)[1] <= 4
    assert (root / "run=5").is_dir()  # a later run, perhaps still writing: left alone
