"""Which child deaths the broker-outage tests run again (tests/support/librdkafka_abort.py)."""

import signal
import subprocess

import pytest

from tests.support.librdkafka_abort import aborted


@pytest.mark.parametrize(
    ("returncode", "stderr", "again"),
    [
        (-signal.SIGABRT, "", True),
        # The fault handler crashed while reporting the abort (seen in CI).
        (-signal.SIGSEGV, "Fatal Python error: Aborted\n\nThread 0x1 ...", True),
        (-signal.SIGSEGV, "Fatal Python error: Segmentation fault\n", False),
        (1, "Fatal Python error: Aborted", False),  # a test failure that prints the words
        (0, "", False),
    ],
)
def test_only_an_abort_runs_the_child_again(returncode, stderr, again):
    child = subprocess.CompletedProcess(args=[], returncode=returncode, stdout="", stderr=stderr)
    assert aborted(child) is again
