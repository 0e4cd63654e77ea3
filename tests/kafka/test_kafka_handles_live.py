"""Two native crashes of the Kafka client that this project's calls must not set off.

A scenario that could crash runs in a child process: the failure is the process dying
(SIGSEGV or SIGABRT inside librdkafka), which would otherwise take the test session with it.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offsets.kafka import admin
from offsets.kafka.errors import KafkaUnavailable

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]


def _run(script: str, bootstrap: str, *, timeout: float = 120) -> subprocess.CompletedProcess:
    prelude = textwrap.dedent(
        f"""
        import faulthandler, sys
        faulthandler.enable()
        sys.path.insert(0, {str(PROJECT)!r})
        SETTINGS = {{"bootstrap.servers": {bootstrap!r}}}
        """
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_garbage_collector_never_destroys_a_client(fresh_kafka):
    # A request that fails leaves its AdminClient in a reference cycle (future -> exception ->
    # traceback -> frame -> client). A collection may run on librdkafka's own thread (admin
    # futures' callbacks run there), and destroying a client from there aborts the process
    # ("rd_kafka_destroy() called from librdkafka owned thread"). So the collector must only
    # break the cycle, and the client be destroyed later, on the thread that releases it.
    # In a child process: a collection here would also run the finalizers of earlier tests'
    # garbage.
    admin.create_topics({"bootstrap.servers": fresh_kafka}, [admin.TopicSpec("t", 1, {})])
    result = _run(
        """
        import gc, weakref
        from confluent_kafka.admin import AdminClient
        from offsets.kafka import admin, handles
        from offsets.kafka.errors import KafkaUnavailable

        gc.disable()
        try:
            admin.create_topics(SETTINGS, [admin.TopicSpec("t", 1, {})])
        except KafkaUnavailable as exc:
            print("failed as expected:", exc)
        left = [weakref.ref(o) for o in gc.get_objects() if isinstance(o, AdminClient)]
        print("clients left in a cycle:", len(left))
        gc.collect()
        print("alive after the collection:", left[0]() is not None)
        handles.release_unused()
        print("alive after the release:", left[0]() is not None)
        """,
        fresh_kafka,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "already exists" in result.stdout
    assert "clients left in a cycle: 1" in result.stdout
    assert "alive after the collection: True" in result.stdout, "the collector destroyed it"
    assert "alive after the release: False" in result.stdout


def test_list_offsets_from_new_clients_on_three_threads_does_not_crash(fresh_kafka):
    # Before it asked for the metadata first, a new client's ListOffsets raced with its own
    # metadata update: a segfault in rd_kafka_topic_partition_list_query_leaders_async_worker,
    # in each of 4 runs of this loop (12 s, three threads) on this machine.
    admin.create_topics({"bootstrap.servers": fresh_kafka}, [admin.TopicSpec("t", 3, {})])
    result = _run(
        """
        import threading, time
        from offsets.kafka import admin

        stop = time.monotonic() + 12
        calls = []
        def loop():
            while time.monotonic() < stop:
                admin.watermarks(SETTINGS, [("t", 0), ("t", 1), ("t", 2)])
                calls.append(1)
        threads = [threading.Thread(target=loop) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print("calls:", len(calls))
        """,
        fresh_kafka,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert int(result.stdout.split("calls:")[1]) > 100


def test_list_offsets_of_a_missing_partition_names_it(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    admin.create_topics(settings, [admin.TopicSpec("t", 2, {})])
    with pytest.raises(KafkaUnavailable, match=r"t\[2\]: no such partition"):
        admin.watermarks(settings, [("t", 1), ("t", 2)])
    with pytest.raises(KafkaUnavailable, match=r"gone\[0\]: no such topic"):
        admin.watermarks(settings, [("gone", 0)])
