"""The connector page's facts before its controls, and pages that follow a live loop without
moving, losing focus or freezing, in Chromium at a desktop's width and a phone's.

The rows are made directly (tests/support/factories.py): what is checked is the pages, not a refresh.
Screenshots go to PHONE_SHOTS (default: tests/screenshots/), never into the repository.
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest

from dashboard.pages.clusters import live
from offsets.models import AuditEvent, ConnectorSnapshot, ConnectorStateChange, RefreshRun
from tests.support import factories as make
from tests.support.browser_pages import WIDTHS, open_at
from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.browser, pytest.mark.integration]

SHOTS = Path(os.environ.get("PHONE_SHOTS", Path(__file__).resolve().parent.parent / "screenshots"))
# The connector page's parts in the order a person on call needs them.
ORDER = [
    "#facts dl.strip",
    "#facts #tasks",
    "section.charts",
    "#connector-control",
    "#connector-removal",
]


@pytest.fixture
def cluster(transactional_db):
    # A worker URL nobody answers: the page offers the controls, nothing here calls them.
    live_cluster = make.cluster("live", refresh_every_seconds=1, connect_url="http://127.0.0.1:1")
    make.run(live_cluster, ago=2, seconds=0.6)
    make.snapshot(live_cluster, "orders-sink", "sink", lag_records=900, lag_ms=61_000)
    make.sink_lags(live_cluster, "orders-sink", "orders", 3)
    make.snapshot(
        live_cluster, "clicks-sink", "sink", runtime_state="PAUSED", target_state="PAUSED"
    )
    make.snapshot(live_cluster, "app-logs-source", last_commit_at=make.now())
    return live_cluster


@pytest.fixture
def fast_polls(settings):
    """Pages poll every second. Requested before `width`, so that the settings change before
    the page logs in: changed while the page polled, they once made the live server's thread
    answer a poll with a 500 (its settings read as None), whose console error failed the test."""
    settings.PAGE_POLL_SECONDS = settings.PAGE_POLL_SECONDS_WHILE_REFRESHING = 1


@pytest.fixture(params=list(WIDTHS))
def width(request, page, live_server, editor, cluster):
    """A page at the parameter's width, logged in as an editor; it fails on any console error."""
    errors = open_at(page, live_server, request.param, "erin", "erin-password")
    yield request.param
    assert errors == []


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def tops(page, selectors: list[str]) -> list[float]:
    return [page.locator(selector).first.bounding_box()["y"] for selector in selectors]


def buttons(page) -> list[str]:
    return page.locator("#connector-control .buttons button").all_inner_texts()


def wait_for_a_poll(page, selector: str) -> None:
    """Wait until htmx has replaced the element `selector` names (an outerHTML poll)."""
    page.locator(selector).evaluate("element => { window.beforePoll = element; }")
    page.wait_for_function(
        f"() => document.querySelector({selector!r}) !== window.beforePoll"
        " && !document.querySelector('.htmx-settling')"
    )


def row_boxes(page) -> list[dict]:
    return [row.bounding_box() for row in page.locator("#connectors tbody tr").all()]


def test_the_connector_page_shows_facts_then_history_then_the_sensible_controls_delete_last(
    page, live_server, width
):
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    positions = tops(page, ORDER)
    assert positions == sorted(positions)
    # Delete is the page's last section.
    last = page.locator("main > section, main > div").last
    assert last.get_attribute("id") == "connector-removal"
    # The strip leads with what is wrong: state, failed tasks, lag, its status.
    fields = page.locator("#facts dl.strip dd").evaluate_all(
        "dds => dds.slice(0, 4).map(dd => dd.dataset.field)"
    )
    assert fields == ["state", "failed-tasks", "lag", "status"]
    # Running: no Resume; no other cluster to move to: no Move.
    assert buttons(page) == ["Stop", "Pause", "Restart", "Restart task"]
    assert page.locator("#move-link").count() == 0
    shoot(page, f"connector-order-{width}")

    page.goto(f"{live_server.url}/clusters/live/connectors/clicks-sink/")
    assert buttons(page) == ["Stop", "Resume"]


def test_move_is_offered_once_another_cluster_can_take_the_connector(
    page, live_server, width, cluster
):
    make.cluster("dr", connect_url="http://127.0.0.1:1")
    page.goto(f"{live_server.url}/clusters/live/connectors/app-logs-source/")
    assert page.locator("#move-link").is_visible()


def test_the_live_list_stays_still_keeps_focus_and_ticks_while_refreshes_come_and_go(
    fast_polls, page, live_server, width, cluster, monkeypatch
):
    # However slow this machine, the round below stays a short one: no banner; and the
    # results never turn late (a "Late" notice is taller than the live line) while it waits.
    monkeypatch.setattr(live, "RUNNING_BANNER_AFTER_SECONDS", 600)
    cluster.refresh_every_seconds = 3600
    cluster.save()
    page.goto(f"{live_server.url}/clusters/live/connectors/")
    line = page.locator("#freshness [data-run='fresh']")
    assert line.inner_text().startswith("Live · updated ")
    before = row_boxes(page)
    link = page.locator("tr[data-connector='orders-sink'] a").first
    link.focus()
    focused = link.get_attribute("id")

    # A live loop: a round starts, the page polls, the round ends, the page polls again.
    running = make.run(cluster, RefreshRun.Status.RUNNING, ago=0.5)
    wait_for_a_poll(page, "#connectors-table")
    assert page.locator("[data-run='running']").count() == 0
    assert row_boxes(page) == before
    assert page.evaluate("() => document.activeElement.id") == focused
    RefreshRun.objects.filter(pk=running.pk).update(
        status=RefreshRun.Status.SUCCEEDED, finished_at=make.now(), phase="done"
    )
    wait_for_a_poll(page, "#connectors-table")
    assert row_boxes(page) == before
    assert page.evaluate("() => document.activeElement.id") == focused
    shoot(page, f"live-list-{width}")

    # The overview's refresh cell follows the banner's rule: a short round keeps the last
    # success on show, so the row neither switches its words nor moves.
    page.goto(f"{live_server.url}/")
    overview = page.locator("tr[data-cluster='live']")
    box = overview.bounding_box()
    assert overview.locator("[data-run='succeeded']").count() == 1
    make.run(cluster, RefreshRun.Status.RUNNING, ago=0.5)
    wait_for_a_poll(page, "#clusters")
    assert overview.locator("[data-run='running']").count() == 0
    assert overview.locator("[data-run='succeeded']").count() == 1
    assert overview.bounding_box() == box


def test_a_slow_refresh_is_announced_above_the_results_it_will_replace(
    page, live_server, width, cluster
):
    # The last round ended a minute ago; the one running since has taken 30 s so far.
    cluster.refresh_every_seconds = 600
    cluster.save()
    RefreshRun.objects.filter(cluster=cluster).update(
        started_at=make.now() - timedelta(seconds=61),
        finished_at=make.now() - timedelta(seconds=60),
    )
    make.run(cluster, RefreshRun.Status.RUNNING, ago=30, phase="reading sink groups")
    page.goto(f"{live_server.url}/clusters/live/connectors/")
    assert "A refresh is running: reading sink groups" in page.inner_text("#freshness")
    # Its results are still there, under it.
    assert page.locator("#freshness [data-run='fresh']").is_visible()


def test_the_connector_page_polls_its_refresh_facts_and_tasks_together_and_ticks(
    fast_polls, page, live_server, width, cluster
):
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    age = page.locator("#facts [data-field='snapshot-age']")
    shown = age.inner_text()
    # It counts on by itself between polls.
    page.wait_for_function(
        "shown => document.querySelector(\"#facts [data-field='snapshot-age']\")"
        ".textContent !== shown",
        arg=shown,
    )
    # The task fails; the next refresh says so; the page shows it without a reload.
    ConnectorSnapshot.objects.filter(cluster=cluster, name="orders-sink").update(
        task_states={"0": "FAILED"}, failed_tasks=1
    )
    make.run(cluster, ago=0.1, seconds=0.1)
    page.locator("#tasks tr[data-task='0'] .state-failed").wait_for()
    assert "1 FAILED" in page.inner_text("#facts [data-field='failed-tasks']")


def test_an_opened_legend_and_trace_stay_open_and_focused_across_a_poll(
    fast_polls, page, live_server, width, cluster
):
    ConnectorSnapshot.objects.filter(cluster=cluster, name="orders-sink").update(
        task_states={"0": "FAILED"},
        failed_tasks=1,
        task_details={
            "0": {
                "worker_id": "w1:8083",
                "trace": "java.lang.IllegalStateException: disk full\n\tat Sink.put(Sink.java:9)",
            }
        },
    )
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    page.locator("#status-legend summary").click()
    page.locator("#tasks-0-trace summary").click()
    wait_for_a_poll(page, "#facts")
    assert page.locator("#status-legend").evaluate("element => element.open")
    assert page.locator("#tasks-0-trace").evaluate("element => element.open")
    assert page.evaluate("() => document.activeElement.parentElement.id") == "tasks-0-trace"
    shoot(page, f"connector-trace-open-{width}")


def no_sideways_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def test_since_when_a_sinks_last_commit_a_chosen_range_and_marks_on_its_charts(
    fast_polls, page, live_server, width, cluster
):
    now = make.now()
    ConnectorSnapshot.objects.filter(cluster=cluster, name="orders-sink").update(
        last_commit_at=now - timedelta(seconds=75), last_commit_seen=True
    )
    make.lag_samples(cluster, "orders-sink", "orders", 3, 30)
    for minutes, target, runtime, failed in (
        (20, "PAUSED", "PAUSED", 0),
        (12, "STARTED", "RUNNING", 1),
    ):
        ConnectorStateChange.objects.create(
            cluster=cluster,
            connector="orders-sink",
            at=now - timedelta(minutes=minutes),
            target_state=target,
            runtime_state=runtime,
            failed_tasks=failed,
        )
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    commit = page.locator("#facts [data-field='last-commit']")
    assert commit.inner_text().startswith("offset moved, seen 1m ")
    assert "Kafka keeps no commit times" in commit.locator("span[title]").first.get_attribute(
        "title"
    )
    assert page.locator(".chart-range a.current").inner_text() == "24 h"
    lag = page.locator("figure[data-chart='lag']")
    assert lag.locator("g.event").count() == 2
    assert "paused (seen by the refresh of " in lag.locator("g.event-paused title").text_content()
    assert lag.locator("g.event-failed").count() == 1
    assert no_sideways_scroll(page)
    shoot(page, f"connector-sink-since-{width}")

    # A range as a link: the URL keeps it, the charts' poll too.
    page.locator(".chart-range a[data-range='1h']").click()
    page.wait_for_url("**range=1h**")
    assert page.locator(".chart-range a.current").inner_text() == "1 h"
    wait_for_a_poll(page, "#history-charts")
    assert "the last 1 h" in page.inner_text("figure[data-chart='lag']")
    assert no_sideways_scroll(page)


def test_a_sources_charts_mark_an_applied_edit_linked_to_it(
    page, live_server, width, cluster, editor
):
    now = make.now()
    make.commit_buckets(cluster, "app-logs-source", 36)
    edit = make_edit(cluster, editor, state="applied", connector="app-logs-source")
    AuditEvent.objects.create(
        cluster=cluster,
        connector="app-logs-source",
        edit=edit,
        action=AuditEvent.Action.APPLIED,
        actor_name="erin",
        at=now - timedelta(minutes=30),
    )
    AuditEvent.objects.create(
        cluster=cluster,
        connector="app-logs-source",
        action=AuditEvent.Action.STOPPED,
        actor_name="erin",
        at=now - timedelta(minutes=40),
    )
    page.goto(f"{live_server.url}/clusters/live/connectors/app-logs-source/")
    commits = page.locator("figure[data-chart='commits']")
    assert commits.locator("g.event").count() == 2
    link = commits.locator("g.event-edit a.event-link")
    assert link.get_attribute("href") == f"/clusters/live/edits/{edit.pk}/"
    assert no_sideways_scroll(page)
    shoot(page, f"connector-source-since-{width}")


def test_the_control_buttons_follow_the_state_a_newer_refresh_finds(
    fast_polls, page, live_server, width, cluster
):
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    assert buttons(page) == ["Stop", "Pause", "Restart", "Restart task"]
    page.fill("#control-comment", "looking")
    # Someone paused it elsewhere; the next refresh says so: no Stop-and-Restart on a
    # paused connector after the poll, and the comment being typed stays.
    ConnectorSnapshot.objects.filter(cluster=cluster, name="orders-sink").update(
        target_state="PAUSED", runtime_state="PAUSED"
    )
    make.run(cluster, ago=0.1, seconds=0.1)
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('#connector-control .buttons button'))"
        ".map(b => b.textContent).join(',') === 'Stop,Resume'"
    )
    assert page.input_value("#control-comment") == "looking"
