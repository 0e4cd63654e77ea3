"""The per-commit history files: what a refresh keeps of every offset commit, beyond compaction.

Layout: `<OFFSETS_HISTORY_PATH>/<cluster>/commits/run=<id>/connector=<name>/part-*.parquet`,
the connector's name escaped as Spark escapes partition folder names (runs written by
Spark's own partitioned writer, before the read tasks wrote them, read the same), and
shortened with a hash when too long for a folder (`connector_folder`). Columns:
`partials.COMMIT_COLUMNS` but the connector (it is the folder). Rows sorted by key_hash,
timestamp_ms, kafka_offset in row groups of about ROW_GROUP_BYTES: the progress chart reads
only the groups whose key_hash range holds its partition (offsets.history.reading).

The read tasks write them (`write_commits`, called by `spark.kafka_source` with its
`history_dir` option): commit rows then never travel through Spark. Pure pyarrow, no Django:
it runs in Spark's Python workers.
"""

import contextlib
import fcntl
import hashlib
import itertools
import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# A 1 MiB group holds ~9,000 commits of a few hundred partitions, so one chart reads one group
# (about 2 ms) instead of the connector's whole history (480,000 commits: ~300 ms).
ROW_GROUP_BYTES = 1024 * 1024
# A read task writes its commits when it has this many (and at its end): it holds no more in
# memory, and each file it writes is still sorted by key.
COMMITS_PER_FILE = 500_000
SORT_KEYS = ("connector", "key_hash", "timestamp_ms", "kafka_offset")

# The characters Spark escapes as %XX in a partition folder name (escapePathName in Spark's
# ExternalCatalogUtils): control characters and "#%'*/:=?\{[]^ and DEL. NUL and the
# surrogate code points are escaped too (as %00 and %D800..%DFFF): Spark never meets them,
# and no file system takes them in a name.
_SPARK_ESCAPED = frozenset(chr(c) for c in range(0, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")
_SURROGATES = range(0xD800, 0xE000)

# The longest file or folder name the common file systems take (ext4, XFS, Btrfs, APFS: 255
# bytes; NTFS: 255 UTF-16 units, never fewer than the UTF-8 bytes).
MAX_NAME_BYTES = 255
# What ends a shortened folder name before its hash. An escaped name never holds it: a `%`
# there always starts a %XX escape.
_HASH_MARK = "%~"


def spark_folder_name(value: str) -> str:
    """The name Spark gives a partition folder's value, e.g. `a/b` -> `a%2Fb`."""
    return "".join(
        f"%{ord(c):02X}" if c in _SPARK_ESCAPED or ord(c) in _SURROGATES else c for c in value
    )


def connector_folder(connector: str) -> str:
    """The history folder of one connector: `connector=<escaped name>`, within MAX_NAME_BYTES.

    A name too long for a folder keeps as much of its escaped form as fits, then `%~` and the
    SHA-256 of the name: distinct names give distinct folders (the mark never occurs in an
    unshortened one), and a name short enough keeps the folder Spark would have given it.
    """
    folder = f"connector={spark_folder_name(connector)}"
    if len(folder.encode("utf-8")) <= MAX_NAME_BYTES:
        return folder
    digest = hashlib.sha256(connector.encode("utf-8", "surrogatepass")).hexdigest()
    tail = f"{_HASH_MARK}{digest}"
    budget = MAX_NAME_BYTES - len(tail)
    kept, used = [], 0
    for char in folder:
        size = len(char.encode("utf-8"))
        if used + size > budget:
            break
        kept.append(char)
        used += size
    return "".join(kept) + tail


def file_stem(topic: str, partitions: Iterable[int]) -> str:
    """A read task's file name stem: the same for the same topic and Kafka partitions, so a
    task that Spark runs again replaces its own files, and no other task's."""
    digest = hashlib.sha1(json.dumps([topic, sorted(partitions)]).encode()).hexdigest()
    return f"part-{digest[:16]}"


def write_commits(commits: pa.Table, run_dir: Path, name: str) -> None:
    """Write commit rows (`partials.COMMIT_COLUMNS`) as `<run_dir>/connector=<c>/<name>.parquet`."""
    if commits.num_rows == 0:
        return
    columns = [column for column in commits.column_names if column != "connector"]
    # One sort, then each connector's rows are a slice: a filter of the whole table per
    # connector cost more than the writing for an incremental refresh's few commits of many
    # connectors.
    commits = commits.sort_by([(key, "ascending") for key in SORT_KEYS])
    start = 0
    for connector, rows in itertools.groupby(commits["connector"].to_pylist()):
        count = sum(1 for _ in rows)
        folder = run_dir / connector_folder(connector)
        folder.mkdir(parents=True, exist_ok=True)
        _write_in_row_groups(
            commits.slice(start, count).select(columns), folder / f"{name}.parquet"
        )
        start += count


def _write_in_row_groups(rows: pa.Table, path: Path) -> None:
    """Write one connector's commit rows, sorted by SORT_KEYS already, in row groups of about
    ROW_GROUP_BYTES."""
    # Spark's parquet.block.size counted buffered bytes; pyarrow counts rows.
    rows_per_group = max(1, ROW_GROUP_BYTES * rows.num_rows // max(rows.nbytes, 1))
    pq.write_table(rows, path, row_group_size=rows_per_group)


# Compaction. Each refresh adds a run folder, so a `--every 60` loop would add 1,440 a day, and
# a progress chart opens one file per run folder of its connector. When a cluster has more than
# MAX_RUN_FOLDERS, `compact_runs` merges the newest ones into one folder: size-tiered, as in a
# log-structured store, so small runs are merged often and big ones rarely (each commit is
# rewritten about log(runs) times), and the folders stay few.
MAX_RUN_FOLDERS = 16
# What readers ignore while a merged folder is written (it is renamed into place when whole).
STAGING_PREFIX = ".compacting-"


_RUN_FOLDER = re.compile(r"run=(\d+)(?:-(\d+))?")


def run_span(folder: Path) -> tuple[int, int]:
    """The first and last refresh run a folder holds: `run=12` -> (12, 12), `run=3-12` -> (3, 12)."""
    match = _RUN_FOLDER.fullmatch(folder.name)
    if match is None:
        raise ValueError(f"Not a run folder: {folder}")
    first = int(match.group(1))
    return first, int(match.group(2) or first)


def run_folders(root: Path) -> list[Path]:
    """The run folders under a cluster's history root, oldest first (anything else there,
    such as a folder someone copied in, is left out)."""
    if not root.is_dir():
        return []
    return sorted(
        (path for path in root.glob("run=*") if path.is_dir() and _RUN_FOLDER.fullmatch(path.name)),
        key=lambda path: (run_span(path)[1], run_span(path)[0]),
    )


# A folder's size for the tiers is the commits it holds, not its bytes: a run of a live loop
# writes a small file per connector that committed, whose Parquet overhead made fifteen small
# runs outweigh the merged folder of sixteen, so every merge took that folder in again and
# each cost more than the one before. The count is kept in the folder once read.
ROWS_FILE = "commits.count"
# Held while a cluster's history is merged or dropped: one process at a time does either.
LOCK_FILE = ".history.lock"


def folder_rows(folder: Path) -> int:
    """The commits a run folder holds: its count file, else its files' footers (then kept)."""
    marker = folder / ROWS_FILE
    try:
        return int(marker.read_text())
    except (OSError, ValueError):
        pass
    rows = sum(pq.read_metadata(path).num_rows for path in folder.glob("connector=*/*.parquet"))
    with contextlib.suppress(OSError):  # a folder read-only to us is counted again next time
        marker.write_text(str(rows))
    return rows


@contextlib.contextmanager
def history_lock(root: Path, *, wait: bool):
    """Hold the cluster's history lock (across processes); yield False when `wait` is false
    and another holds it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def runs_to_compact(sizes: list[int], max_folders: int) -> int:
    """How many of the newest folders (`sizes` in bytes, oldest first) to merge into one: none
    while there are at most `max_folders`; else the newest ones back to the first older folder
    at least as big as all of them together, once at most half of `max_folders` would be left.
    """
    if len(sizes) <= max_folders:
        return 0
    chosen, total = 1, sizes[-1]
    for size in reversed(sizes[:-1]):
        left = len(sizes) - chosen + 1
        if chosen >= 2 and size >= total and left <= max_folders // 2:
            break
        chosen += 1
        total += size
    return chosen


def unique_commits(rows: pa.Table) -> pa.Table:
    """The rows sorted by SORT_KEYS, each record (topic, Kafka partition, offset) once.

    A record appears twice only if a compaction stopped between putting its merged folder in
    place and deleting the folders it merged; the next one then mends it.
    """
    rows = rows.sort_by(
        [(key, "ascending") for key in (*SORT_KEYS[1:], "topic", "kafka_partition")]
    )
    if rows.num_rows < 2:
        return rows
    changed = None
    for name in ("kafka_offset", "kafka_partition", "topic"):
        column = rows[name].combine_chunks()
        differs = pc.not_equal(column.slice(1), column.slice(0, rows.num_rows - 1))
        changed = differs if changed is None else pc.or_(changed, differs)
    return rows.filter(pa.concat_arrays([pa.array([True]), changed]))


def compact_runs(root: Path, max_folders: int, *, upto: int | None = None) -> Path | None:
    """Merge the newest run folders under `root` (of runs up to `upto`, finished ones: a later
    run may be writing its own) into one when there are too many (`runs_to_compact`); return
    the merged folder, or None when nothing was merged or another process is merging.

    Readers never miss a commit: the merged folder is written under a name they skip, renamed
    into place (atomic), and only then are the folders it merged deleted; a reader that meets
    both in between drops the duplicates, one that finds a file gone lists the folders again
    (offsets.history.reading).
    """
    with history_lock(root, wait=False) as held:
        return _compact(root, max_folders, upto) if held else None


def _compact(root: Path, max_folders: int, upto: int | None) -> Path | None:
    for leftover in root.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)  # a compaction that was cut off
    folders = [f for f in run_folders(root) if upto is None or run_span(f)[1] <= upto]
    if len(folders) <= max_folders:
        # Nothing to merge (`runs_to_compact`), so no sizes to read: they are the footers of
        # every file of every run folder (a file per connector).
        return None
    count = runs_to_compact([folder_rows(folder) for folder in folders], max_folders)
    if count < 2:
        return None
    merging = folders[-count:]
    first = min(run_span(folder)[0] for folder in merging)
    last = max(run_span(folder)[1] for folder in merging)
    target = root / f"run={first}-{last}"
    if target.exists() and target not in merging:
        return None  # not a state compaction leaves; merging now could lose that folder
    staging = root / f"{STAGING_PREFIX}{first}-{last}"
    connectors = sorted({path.name for folder in merging for path in folder.glob("connector=*")})
    rows = 0
    for name in connectors:
        tables = [
            pq.read_table(path)
            for folder in merging
            for path in sorted((folder / name).glob("*.parquet"))
        ]
        if not tables:
            continue
        commits = unique_commits(pa.concat_tables(tables, promote_options="permissive"))
        (staging / name).mkdir(parents=True, exist_ok=True)
        # unique_commits sorted them.
        _write_in_row_groups(commits, staging / name / "part-merged-000.parquet")
        rows += commits.num_rows
    # Runs without a commit still leave their (empty) merged folder.
    staging.mkdir(parents=True, exist_ok=True)
    (staging / ROWS_FILE).write_text(str(rows))
    if target.exists():  # merged before by a compaction cut off before it deleted the runs
        shutil.rmtree(target)
    staging.rename(target)
    for folder in merging:
        if folder != target:
            shutil.rmtree(folder, ignore_errors=True)
    return target
