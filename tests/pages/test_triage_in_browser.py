"""The on-call path's first screens in Chromium, at a desktop's width and a phone's: problems
first, the worst connector named, late and stale clusters coloured, statuses explained.

The rows are made directly (tests/support/factories.py): what is checked is the pages, not a refresh.
Screenshots go to ONCALL_SHOTS (default: tests/screenshots/), never into the repository.
"""

import os
from pathlib import Path

import pytest

from tests.support import factories as make
from tests.support.browser_pages import WIDTHS, open_at

pytestmark = [pytest.mark.browser, pytest.mark.integration]

SHOTS = Path(os.environ.get("ONCALL_SHOTS", Path(__file__).resolve().parent.parent / "screenshots"))


@pytest.fixture
def clusters(transactional_db):
    live = make.cluster("live", refresh_every_seconds=1)
    make.run(live, ago=29 * 60 + 57, seconds=1.5)  # stale: "Succeeded 29m 37s ago"
    make.snapshot(live, "app-logs-source")
    make.snapshot(live, "orders-sink", "sink", task_states={"0": "FAILED"}, lag_records=900)
    make.snapshot(
        live,
        "clicks-sink",
        "sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        lag_records=40,
        lag_status="ERR",
    )
    make.sink_lags(live, "clicks-sink", "clicks", 1, status="STOP")
    make.snapshot(live, "audit-sink", "sink", lag_records=70, lag_status="WARN")
    make.snapshot(live, "<b>bold</b>-source", stalled_partitions=1)
    late = make.cluster("late", refresh_every_seconds=20)
    make.run(late, ago=80, seconds=5.0)  # 60 s old, a result expected every 25 s
    make.snapshot(late, "fine-source")
    calm = make.cluster("calm", refresh_every_seconds=600)
    make.run(calm)
    make.snapshot(calm, "quiet-source")
    return live


@pytest.fixture(params=list(WIDTHS))
def width(request, page, live_server, user, clusters):
    """A page at the parameter's width, logged in; it fails on any console error."""
    errors = open_at(page, live_server, request.param, "alice", "alice-password")
    yield request.param
    assert errors == []


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def fits(page, selector: str) -> bool:
    """Whether the element ends within the viewport: it adds no horizontal scroll."""
    right = page.locator(selector).first.evaluate("e => e.getBoundingClientRect().right")
    return right <= page.viewport_size["width"]


def test_the_overview_names_the_worst_connector_and_colours_staleness(page, width):
    live = page.locator("tr[data-cluster='live']")
    assert live.locator("[data-field='worst-connector']").inner_text() == "orders-sink"
    assert live.locator("[data-field='worst-problem']").inner_text() == "failed"
    assert live.locator("[data-field='problems']").inner_text() == "3 connectors with problems"
    assert "1 task FAILED" in live.locator("[data-field='failed-tasks']").inner_text()
    succeeded = live.locator("[data-run='succeeded']")
    assert "run-stale" in succeeded.get_attribute("class")
    red = succeeded.evaluate("e => getComputedStyle(e).color")
    assert red == "rgb(207, 34, 46)"  # --err, not --ok's green
    staleness = live.locator("[data-staleness='stale']").inner_text()
    assert staleness.startswith("Stale: results 29m ")
    late = page.locator("tr[data-cluster='late'] [data-staleness='late']")
    assert late.evaluate("e => getComputedStyle(e).color") == "rgb(154, 103, 0)"  # amber
    assert page.locator("tr[data-cluster='calm'] [data-staleness]").count() == 0
    assert page.locator("tr[data-cluster='calm'] [data-field='worst-connector']").inner_text() == (
        "no problem"
    )
    page.locator("[data-field='status-legend'] summary").click()
    assert page.locator("[data-field='status-legend'] dd").first.is_visible()
    assert fits(page, "[data-field='status-legend']")
    shoot(page, f"overview-{width}")
    live.locator("[data-field='worst-connector']").click()
    page.wait_for_selector("h1")
    assert "orders-sink" in page.locator("h1").inner_text()


def test_the_list_shows_problems_first_and_still_sorts_by_name(page, live_server, width):
    page.goto(f"{live_server.url}/clusters/live/connectors/")
    order = page.locator("#connectors tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.connector)"
    )
    assert order == [
        "orders-sink",
        "<b>bold</b>-source",
        "audit-sink",
        "clicks-sink",
        "app-logs-source",
    ]
    # A name from Kafka is text: no <b> element made of it.
    assert page.locator("#connectors b").count() == 0
    paused = page.locator("tr[data-connector='clicks-sink'] [data-field='status'] .status")
    assert paused.all_inner_texts() == ["paused"]
    assert "paused or stopped it" in paused.first.get_attribute("title")
    for badge in page.locator("#connectors .status").all():
        assert badge.get_attribute("title") or badge.inner_text() == "\u2013"
    assert fits(page, "[data-field='order']")
    assert fits(page, "[data-field='status-legend']")
    shoot(page, f"connectors-{width}")

    page.click("[data-order='name']")
    page.wait_for_url("**sort=name**")
    page.wait_for_selector("[data-order='problems']")
    order = page.locator("#connectors tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.connector)"
    )
    assert order == sorted(order)
    page.click("[data-order='problems']")
    page.wait_for_url("**sort=problems**")
    page.wait_for_selector("[data-order='name']")
    assert page.locator("#connectors tbody tr").first.get_attribute("data-connector") == (
        "orders-sink"
    )


def test_the_connector_page_explains_its_status(page, live_server, width):
    page.goto(f"{live_server.url}/clusters/live/connectors/clicks-sink/")
    status = page.locator("[data-field='status'] .status")
    assert status.all_inner_texts() == ["paused"]
    assert page.locator("[data-field='status-legend']").count() == 1
    page.locator("[data-field='status-legend'] summary").click()
    assert fits(page, "[data-field='status-legend']")
    banner = page.locator("#freshness [data-run='stale']")
    assert "though live is refreshed every 1 s" in banner.inner_text()
    shoot(page, f"connector-paused-{width}")
