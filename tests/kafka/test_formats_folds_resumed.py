"""The config and status folds resumed round after round (a live loop folds only what is new)
give exactly what one fold of every record gives, and a snapshot taken between rounds is not
changed by the records folded after it."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.config_records import ConfigFold, fold_config_records
from offsets.formats.status_records import StatusFold, fold_status_records

NAMES = st.sampled_from(["a", "b", "a-b"])


def _config_record(kind: str, name: str, number: int) -> tuple[bytes, bytes | None]:
    props = {"connector.class": f"C{number}", "tasks.max": str(number % 3 + 1)}
    records = {
        "connector": (f"connector-{name}", {"properties": props}),
        "tombstone": (f"connector-{name}", None),
        "task": (f"task-{name}-{number % 2}", {"properties": {"task": str(number)}}),
        "commit": (f"commit-{name}", {"tasks": number % 3}),
        "state": (
            f"target-state-{name}",
            {"state.v2": ["STARTED", "PAUSED", "STOPPED"][number % 3]},
        ),
        "garbage": (f"connector-{name}", b"{not json"),
    }
    key, value = records[kind]
    raw = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()
    return key.encode(), raw


def _status_record(kind: str, name: str, number: int) -> tuple[bytes, bytes | None]:
    value = {
        "state": ["RUNNING", "FAILED", "PAUSED"][number % 3],
        "trace": None,
        "worker_id": "w:8083",
        "generation": number,
    }
    records = {
        "connector": (f"status-connector-{name}", value),
        "task": (f"status-task-{name}-{number % 2}", value),
        "tombstone": (f"status-connector-{name}", None),
        "topic": (
            f"status-topic-t{number % 2}:connector-{name}",
            {
                "topic": {
                    "name": f"t{number % 2}",
                    "connector": name,
                    "task": 0,
                    "discoverTimestamp": 1,
                }
            },
        ),
        "garbage": (f"status-connector-{name}", b"[]"),
    }
    key, value = records[kind]
    raw = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()
    return key.encode(), raw


def _records(kinds: list[str], build) -> st.SearchStrategy:
    one = st.builds(build, st.sampled_from(kinds), NAMES, st.integers(0, 9))
    return st.lists(one, max_size=25)


def _rounds(records: list, cuts: list[int]) -> list[list]:
    bounds = sorted({min(cut, len(records)) for cut in cuts})
    pieces, start = [], 0
    for end in [*bounds, len(records)]:
        pieces.append(records[start:end])
        start = end
    return pieces


CUTS = st.lists(st.integers(0, 25), max_size=4)


def assert_resumed_equals_one_fold(fold, fold_whole, records: list, cuts: list[int]) -> None:
    """Fold `records` round by round (cut at `cuts`) into `fold`: after each round its snapshot
    is one fold of the records so far, and stays so after later rounds."""
    read, snapshots = 0, []
    for piece in _rounds(records, cuts):
        fold.add(piece)
        read += len(piece)
        snapshots.append((fold.snapshot(), read))
    assert fold.snapshot() == fold_whole(records)
    for snapshot, upto in snapshots:
        assert snapshot == fold_whole(records[:upto])


@settings(max_examples=200, deadline=None)
@given(
    _records(["connector", "tombstone", "task", "commit", "state", "garbage"], _config_record),
    CUTS,
)
def test_the_config_fold_resumed_equals_one_fold(records, cuts) -> None:
    assert_resumed_equals_one_fold(ConfigFold(), fold_config_records, records, cuts)


@settings(max_examples=200, deadline=None)
@given(_records(["connector", "task", "tombstone", "topic", "garbage"], _status_record), CUTS)
def test_the_status_fold_resumed_equals_one_fold(records, cuts) -> None:
    assert_resumed_equals_one_fold(StatusFold(), fold_status_records, records, cuts)
