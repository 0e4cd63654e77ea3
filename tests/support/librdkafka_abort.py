"""Run a broker-outage test in a child process, again if librdkafka aborts that process.

librdkafka has an open bug (confluentinc/librdkafka#4605, also confluent-kafka-python#1640):
when a consumer-group admin request (ListConsumerGroupOffsets, DescribeGroups,
AlterConsumerGroupOffsets) times out on the client side and the broker's late answer or the
transport's own timeout then arrives, an internal assertion fails
(`rd_kafka_enq_once_del_source_return: eonce->refcnt > 0`) and the C library calls abort().
The tests that cut the broker in the middle of such a request meet it in about one run of
three on this machine, and far more often on a loaded one (a full suite beside other work
once saw four aborts in a row of the same test; alone, the same test passed 3 of 3). An abort
would kill the whole pytest session, so those tests run in a child pytest of their own; when
the child dies of that abort (and only then: `aborted`) it is run again, up to ABORT_RETRIES
times. Any other failure fails the test at once, with the child's output.

The product meets the same bug when a broker goes away mid-request: the process dies, and an
edit it was applying stays "applying" until `manage.py reconcile_edits` settles it from Kafka
(tests/edits/test_edits_crash.py proves that path). See SECURITY.md, "Known limits".
"""

import contextlib
import functools
import inspect
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CHILD_ENV = "OFFSETS_TEST_IN_CHILD"
ABORT_RETRIES = 8


def orphaned_brokers() -> set[int]:
    """Pids of Kafka brokers and Connect workers whose parent is gone (re-parented to init).

    What an aborted child leaves behind: its brokers were started with it as their parent.
    The parent pytest's own brokers still have it as their parent, so they never match.
    """
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        runtime = {b"kafka.Kafka", b"org.apache.kafka.connect.cli.ConnectDistributed"}
        if parent == 1 and cmdline[0].endswith(b"java") and runtime & set(cmdline):
            found.add(int(proc.name))
    return found


def aborted(child: subprocess.CompletedProcess) -> bool:
    """Whether the child died of an abort(): SIGABRT, or a crash while Python's fault handler
    was reporting one ("Fatal Python error: Aborted" in its output). A CI run once saw the
    latter: the handler's dump of the threads crashed the aborting child (exit -11)."""
    if child.returncode == -signal.SIGABRT:
        return True
    return child.returncode < 0 and "Fatal Python error: Aborted" in child.stderr + child.stdout


def in_child_process(test):
    """Decorate a test: the parent runs it in a child pytest, re-run on an abort only
    (`aborted`).

    Only the child sets up the test's fixtures (its brokers, its database rows): the parent
    asks for `request` alone, so it starts nothing the child starts again.
    """
    if os.environ.get(CHILD_ENV):
        return test

    @functools.wraps(test)
    def in_parent(request):
        outputs = []
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        for attempt in range(1, ABORT_RETRIES + 1):
            brokers_before = orphaned_brokers()
            child = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    request.node.nodeid,
                    "-q",
                    "-p",
                    "no:cacheprovider",
                ],
                # pytest-django suffixes the test database's name with TOX_PARALLEL_ENV:
                # the child must not create (and drop) the parent's PostgreSQL test database,
                # nor the database of another test process's child.
                env={**os.environ, CHILD_ENV: "1", "TOX_PARALLEL_ENV": f"child-{worker}"},
                capture_output=True,
                text=True,
                timeout=900,
            )
            output = f"--- attempt {attempt}, exit {child.returncode}\n{child.stdout[-4000:]}{child.stderr[-4000:]}"
            outputs.append(output)
            if not aborted(child):
                break
            # An aborted child never ran its fixtures' teardown: stop the brokers it started.
            for pid in orphaned_brokers() - brokers_before:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            print(f"librdkafka aborted the child (attempt {attempt}); running it again")
        if child.returncode != 0:
            pytest.fail("\n".join(outputs), pytrace=False)

    # pytest reads the signature for fixtures: the parent's is `request` alone.
    in_parent.__signature__ = inspect.Signature(
        [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    )
    return in_parent
