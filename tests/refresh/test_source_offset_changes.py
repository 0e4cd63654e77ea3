from datetime import UTC, datetime

from offsets.refresh.store import SOURCE_OFFSET_FIELDS, changed_fields


def stored_values(**changes) -> list:
    values = {
        "connector": "jdbc",
        "identity": '{"table":"orders"}',
        "partition_text": '{"table":"orders"}',
        "offset_text": '{"incrementing":5}',
        "kafka_partition": 3,
        "kafka_offset": 100,
        "progress": 5.0,
        "first_commit_at": datetime(2026, 1, 1, tzinfo=UTC),
        "last_commit_at": datetime(2026, 1, 2, tzinfo=UTC),
        "commits": 4,
        "rewinds": 0,
        "stalled": False,
        "effective": True,
    }
    assert set(values) == set(SOURCE_OFFSET_FIELDS)
    return [{**values, **changes}[name] for name in SOURCE_OFFSET_FIELDS]


def test_a_key_with_new_commits_updates_only_the_fields_they_changed():
    new = tuple(
        stored_values(
            offset_text='{"incrementing":9}',
            kafka_offset=180,
            progress=9.0,
            last_commit_at=datetime(2026, 1, 3, tzinfo=UTC),
            commits=6,
        )
    )
    row = {"offset_json": '{"incrementing":9}'}
    assert changed_fields(stored_values(), new, row) == {
        "offset_text": '{"incrementing":9}',
        "kafka_offset": 180,
        "progress": 9.0,
        "last_commit_at": datetime(2026, 1, 3, tzinfo=UTC),
        "commits": 6,
        "offset": {"incrementing": 9},
    }


def test_a_flag_change_alone_leaves_the_offset_alone_and_an_unchanged_key_changes_nothing():
    row = {"offset_json": '{"incrementing":5}'}
    assert changed_fields(stored_values(), tuple(stored_values(stalled=True)), row) == {
        "stalled": True
    }
    assert changed_fields(stored_values(), tuple(stored_values()), row) == {}


def test_a_tombstone_clears_the_parsed_offset():
    new = tuple(stored_values(offset_text=None))
    assert changed_fields(stored_values(), new, {"offset_json": None}) == {
        "offset_text": None,
        "offset": None,
    }
