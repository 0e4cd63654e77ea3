"""The per-commit history files: what a refresh keeps of every offset commit, beyond compaction.

Layout: `<OFFSETS_HISTORY_PATH>/<cluster>/commits/run=<id>/connector=<name>/part-*.parquet`,
the connector's name escaped as Spark escapes partition folder names (runs written by
Spark's own partitioned writer, before the read tasks wrote them, read the same). Columns:
`partials.COMMIT_COLUMNS` but the connector (it is the folder). Rows sorted by key_hash,
timestamp_ms, kafka_offset in row groups of about ROW_GROUP_BYTES: the progress chart reads
only the groups whose key_hash range holds its partition (offsets.services.history).

The read tasks write them (`write_commit_batches`, the Kafka source's `history_dir` option):
commit rows then never travel through Spark. Pure pyarrow, no Django: it runs in Spark's
Python workers.
"""

import hashlib
import json
from collections.abc import Iterable, Iterator
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
# ExternalCatalogUtils): control characters and "#%'*/:=?\{[]^ and DEL.
_SPARK_ESCAPED = frozenset(chr(c) for c in range(1, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def spark_folder_name(value: str) -> str:
    """The name Spark gives a partition folder's value, e.g. `a/b` -> `a%2Fb`."""
    return "".join(f"%{ord(c):02X}" if c in _SPARK_ESCAPED else c for c in value)


def file_stem(topic: str, partitions: Iterable[int]) -> str:
    """A read task's file name stem: the same for the same topic and Kafka partitions, so a
    task that Spark runs again replaces its own files, and no other task's."""
    digest = hashlib.sha1(json.dumps([topic, sorted(partitions)]).encode()).hexdigest()
    return f"part-{digest[:16]}"


def write_commits(commits: pa.Table, run_dir: Path, name: str) -> None:
    """Write commit rows (`partials.COMMIT_COLUMNS`) as `<run_dir>/connector=<c>/<name>.parquet`."""
    if commits.num_rows == 0:
        return
    commits = commits.sort_by([(key, "ascending") for key in SORT_KEYS])
    columns = [column for column in commits.column_names if column != "connector"]
    # Spark's parquet.block.size counted buffered bytes; pyarrow counts rows.
    rows_per_group = max(1, ROW_GROUP_BYTES * commits.num_rows // max(commits.nbytes, 1))
    for connector in pc.unique(commits["connector"]).to_pylist():
        rows = commits.filter(pc.equal(commits["connector"], connector)).select(columns)
        folder = run_dir / f"connector={spark_folder_name(connector)}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, folder / f"{name}.parquet", row_group_size=rows_per_group)


def write_commit_batches(
    batches: Iterable[pa.RecordBatch], run_dir: Path, stem: str
) -> Iterator[pa.RecordBatch]:
    """Pass a read task's folded batches (partials.SUMMARY_ARROW) on without their commit
    rows, which are written to `run_dir` instead (files `<stem>-<n>`)."""
    # Here, not at the top: the web pages read the history through this module, and partials
    # imports PySpark.
    from offsets.spark import partials as P

    pending: list[pa.RecordBatch] = []
    written = 0

    def flush() -> None:
        nonlocal pending, written
        if pending:
            write_commits(pa.Table.from_batches(pending), run_dir, f"{stem}-{written:03d}")
            written += 1
            pending = []

    for batch in batches:
        is_commit = pc.equal(batch.column("kind"), P.COMMIT)
        commits = batch.filter(is_commit)
        if commits.num_rows:
            pending.append(commits.select(list(P.COMMIT_COLUMNS)))
            if sum(b.num_rows for b in pending) >= COMMITS_PER_FILE:
                flush()
        rest = batch.filter(pc.invert(is_commit))
        if rest.num_rows:
            yield rest
    flush()
