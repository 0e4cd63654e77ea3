"""Twenty users at once on the real app server while a refresh runs: every answer a 200.

The small version of ``make bench-load`` (no timings asserted; the bench prints them). The
server is waitress in a process of its own over the test database (the seeded demo's two
refreshes); a full refresh of the demo runs with Spark in this process meanwhile, writing to
the same database, which is where SQLite's one-writer lock could make readers fail.
"""

import shutil
import threading

import pytest

from offsets.models import RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.db_faults import database_url
from tests.support.load import AppServer, create_users, demo_targets, report, run_load

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

USERS = 20
REQUESTS = 280  # 20 of each of the 14 kinds of request


def test_twenty_users_get_every_page_partial_and_api_answer_while_a_refresh_runs(
    refreshed_demo, spark, settings, tmp_path
):
    # A copy of the session's history, so that this test's refresh adds to no one else's.
    history = tmp_path / "history"
    shutil.copytree(settings.OFFSETS_HISTORY_PATH, history)
    settings.OFFSETS_HISTORY_PATH = str(history)
    users = create_users(USERS)

    spark_started = threading.Event()
    load_started = threading.Event()
    refresh_done = threading.Event()
    outcome: dict = {}

    def progress(text: str) -> None:
        if "computing offsets and history" in text:
            spark_started.set()
            # Spark's part of the demo's refresh can end before twenty users have logged in:
            # it waits for the first request, so the load and the refresh surely overlap.
            load_started.wait(120)

    def busy() -> bool:
        load_started.set()
        return not refresh_done.is_set()

    def refresh_in_background() -> None:
        try:
            outcome["run"] = run_refresh(
                cluster=refreshed_demo, spark=spark, full=True, progress=progress
            )
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            spark_started.set()
            refresh_done.set()
            from django.db import connection

            connection.close()

    server = AppServer(
        {"DATABASE_URL": database_url(), "OFFSETS_HISTORY_PATH": str(history)},
        log=tmp_path / "server.log",
    )
    with server:
        refresher = threading.Thread(target=refresh_in_background, daemon=True)
        refresher.start()
        assert spark_started.wait(120)
        result = run_load(
            server.base_url,
            users,
            demo_targets(refreshed_demo.name),
            requests=REQUESTS,
            busy=busy,
        )
        refresher.join(300)

    print(report(result, "load during a full refresh"))
    assert "error" not in outcome, outcome.get("error")
    assert outcome["run"].status == RefreshRun.Status.SUCCEEDED, outcome["run"].error
    assert len(result.samples) == REQUESTS
    assert [(s.label, s.status, s.error) for s in result.errors] == []
    # The load really overlapped the refresh (it started once Spark had begun).
    assert any(sample.during for sample in result.samples)
