"""The history's connector folder names: within file system limits for any name, never shared."""

import pyarrow as pa
import pytest

from offsets.history import files as history_files

LONG_NAMES = [
    "a" * 300,
    "/" * 249,  # 747 bytes once escaped
    "é" * 200,  # 400 bytes of UTF-8
    "\U0001f600" * 100,
    "x" * 10_000,
]


@pytest.mark.parametrize("name", ["orders", "a/b", "a%2Fb", "", ".", "..", "=", "a" * 245])
def test_a_name_that_fits_keeps_the_folder_spark_gives_it(name):
    assert history_files.connector_folder(name) == (
        f"connector={history_files.spark_folder_name(name)}"
    )


@pytest.mark.parametrize("name", [*LONG_NAMES, "a\x00b", "a\ud800b", "\udfff" * 300])
def test_any_name_gives_one_folder_a_file_system_takes(name, tmp_path):
    folder = history_files.connector_folder(name)
    assert len(folder.encode("utf-8")) <= history_files.MAX_NAME_BYTES
    assert "/" not in folder and "\x00" not in folder
    (tmp_path / folder).mkdir()


def test_long_names_never_share_a_folder_with_each_other_or_a_short_name():
    prefix = "a" * 300
    names = [prefix + "b", prefix + "c", "a" * 245, "a" * 246, "a" * 247, *LONG_NAMES]
    folders = [history_files.connector_folder(name) for name in names]
    assert len(set(folders)) == len(names)
    # The mark before the hash never occurs in a folder kept whole, even from a name that
    # spells a shortened folder.
    spelled = folders[-1].removeprefix("connector=")
    assert history_files.connector_folder(spelled) != folders[-1]


def test_the_commits_of_a_long_name_are_written_where_the_charts_read_them(tmp_path):
    name = "/" * 249
    rows = pa.table(
        {
            "connector": [name],
            "topic": ["connect-offsets"],
            "key_hash": ["0" * 40],
            "kafka_partition": [0],
            "kafka_offset": [1],
            "timestamp_ms": [1_790_000_000_000],
            "progress": [1.0],
            "offset_json": ['{"position":1}'],
        }
    )
    history_files.write_commits(rows, tmp_path, "part-0")
    written = tmp_path / history_files.connector_folder(name) / "part-0.parquet"
    assert written.is_file()
