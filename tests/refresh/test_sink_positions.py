"""Where a sink's consumer reads next, with or without a commit (auto.offset.reset)."""

import pytest

from offsets.refresh.sinks import consumer_position


@pytest.mark.parametrize(
    ("committed", "reset", "expected"),
    [
        (40, "earliest", 40),  # a commit in range is where it resumes, whatever the reset
        (40, "latest", 40),
        (None, "earliest", 10),  # never committed: the log start...
        (None, "latest", 100),  # ...or the log end: the records there now are never read
        (None, "by_duration:pt1h", 10),  # counted from the log start: an upper bound
        (None, "none", 10),  # the task fails; the records wait all the same
        (3, "earliest", 10),  # a commit below the log start is reset too
        (3, "latest", 100),
    ],
)
def test_a_sink_reads_from_its_commit_or_where_its_reset_policy_puts_it(committed, reset, expected):
    assert consumer_position(committed, 10, 100, reset=reset) == expected
