"""In Chromium against the REAL Connect worker, at 1400 px and 390 px: the connector page's
control card pauses and resumes (each asking first), restarts one task and follows it until it
runs steadily, and follows a restart of a sink that fails at start until it says "failed
again" with the trace's first line. No console error.

The connector rows the page reads are made directly (a refresh is not what is checked here);
the worker and its connectors are real.
"""

import os
import uuid
from pathlib import Path

import pytest

from offsets.models import AuditEvent
from tests.support import factories as make
from tests.support.browser_pages import WIDTHS, open_at
from tests.support.connect_rest import ConnectRest, wait_until
from tests.support.worker_files import file_sink, produce, running_source
from tests.support.workers import register, session_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration]

RUN = uuid.uuid4().hex[:8]
SHOTS = Path(os.environ.get("CONTROL_SHOTS_DIR", "/tmp/shots-controls"))
# A restart is followed up to 20 s (offsets.domain.restarts.BOUND_SECONDS), a poll a second.
FOLLOW_MS = 40_000


@pytest.fixture
def rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


@pytest.fixture(params=list(WIDTHS))
def width(request, page, live_server, transactional_db, editor):
    """The page at the parameter's width, logged in as an editor; no console error allowed."""
    errors = open_at(page, live_server, request.param, "erin", "erin-password")
    yield request.param
    assert errors == []


def shoot(page, name: str, width: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#connector-control").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"{name}-{WIDTHS[width]}.png"), full_page=True)


def confirms(page) -> list[str]:
    """Accept every confirm the page asks, keeping its words."""
    asked: list[str] = []

    def accept(dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    return asked


def cluster_with(kafka_runtime, connector: str, type: str = "source"):
    cluster = register(f"ctl-{RUN}-{connector[-12:]}", kafka_runtime.bootstrap_servers,
                       session_worker(kafka_runtime))  # fmt: skip
    make.run(cluster, ago=2, seconds=0.5)
    make.snapshot(cluster, connector, type)
    return cluster


def test_pause_resume_and_one_tasks_restart_ask_first_and_say_what_the_worker_did(
    page, live_server, width, kafka_runtime, rest, tmp_path
):
    connector, _ = running_source(
        rest, f"ctl-{RUN}-{width}-src", tmp_path / "in.log", f"ctl-{RUN}-{width}-out"
    )
    cluster = cluster_with(kafka_runtime, connector)
    asked = confirms(page)
    page.goto(f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/")
    card = page.locator("#connector-control")
    page.fill("#control-comment", "quiet hour")
    card.locator("button:text-is('Pause')").click()
    page.wait_for_selector("#control-outcome:has-text('now PAUSED')")
    assert asked[-1].startswith(f"Pause {connector}? Its tasks stay assigned")
    assert card.locator(".buttons button").all_inner_texts() == ["Stop", "Resume"]
    shoot(page, "1-paused", width)
    assert rest.status(connector)["tasks"][0]["state"] == "PAUSED"

    card.locator("button:text-is('Resume')").click()
    page.wait_for_selector("#control-outcome:has-text('now RUNNING')")
    assert asked[-1] == f"Resume {connector}?"
    rest.wait_for_state(connector, "RUNNING", tasks=1)

    page.fill("#control-task", "0")
    card.locator("button:text-is('Restart task')").click()
    assert asked[-1].startswith(f"Restart this one task of {connector}")
    # Answered at once, then followed: steady RUNNING ends it.
    page.wait_for_selector("#control-outcome:has-text('task 0')")
    page.wait_for_selector("#control-outcome[data-settled='true']", timeout=FOLLOW_MS)
    outcome = page.locator("#control-outcome")
    assert outcome.inner_text().startswith("Running: task 0 RUNNING, steady for")
    assert outcome.get_attribute("class") == "notice"
    shoot(page, "2-task-restarted-running", width)
    actions = AuditEvent.objects.filter(connector=connector).order_by("at", "id")
    assert [(e.action, e.comment) for e in actions][:1] == [("paused", "quiet hour")]
    assert [e.action for e in actions] == ["paused", "resumed", "task-restarted"]
    rest.delete(connector)


def test_a_restart_of_a_sink_failing_at_start_turns_into_failed_again(
    page, live_server, width, kafka_runtime, kafka, rest, tmp_path
):
    connector, topic = f"ctl-{RUN}-{width}-sink", f"ctl-{RUN}-{width}-in"
    produce(kafka, topic, ["a"])
    # Its file is in a folder that does not exist: the task fails at start, every time.
    rest.create(connector, file_sink(tmp_path / "missing" / "out.txt", topic))
    wait_until(
        lambda: rest.status(connector),
        lambda status: status and [t["state"] for t in status["tasks"]] == ["FAILED"],
        timeout=60,
        what=f"{connector} task FAILED",
    )
    cluster = cluster_with(kafka_runtime, connector, "sink")
    confirms(page)
    page.goto(f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/")
    card = page.locator("#connector-control")
    card.locator("input[name=include_tasks]").check()
    card.locator("input[name=only_failed]").check()
    card.locator("button:text-is('Restart')").click()
    page.wait_for_selector("#control-outcome")
    page.wait_for_selector("#control-outcome[data-settled='true']", timeout=FOLLOW_MS)
    outcome = page.locator("#control-outcome")
    assert outcome.get_attribute("class") == "warning"
    assert outcome.inner_text().startswith("Failed again: task 0: ")
    assert card.locator("details.task-trace[data-failed='task 0']").count() == 1
    shoot(page, "3-restart-failed-again", width)
    rest.delete(connector)
