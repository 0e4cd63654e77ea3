"""Times that tell the truth, in Chromium at a desktop's width and a phone's: a sink's last
commit no refresh saw move reads "unchanged since at least", and every chart of the connector
page follows the chosen range and names what a point is.

The rows are made directly (tests/support/factories.py); the partition's history is the
`partition_history` fixture's. Screenshots go to tests/screenshots/ (`screenshot`).
"""

import dataclasses
from datetime import timedelta

import pytest

from tests.support import factories as make
from tests.support.browser_pages import WIDTHS, open_at

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def cluster(transactional_db, partition_history):
    cluster = make.cluster("live")
    make.run(cluster, ago=2, seconds=0.6)
    # FAILED and behind, its offsets as the first read found them three minutes ago.
    make.snapshot(
        cluster,
        "orders-sink",
        "sink",
        task_states={"0": "FAILED"},
        lag_records=900,
        lag_ms=7_200_000,
        last_commit_at=make.now() - timedelta(minutes=3),
        last_commit_seen=False,
    )
    make.sink_lags(cluster, "orders-sink", "orders", 3)
    make.snapshot(cluster, "inventory-source", partitions=1)
    make.source_offsets(cluster, "inventory-source", 1)
    make.commit_buckets(cluster, "inventory-source", 72)  # six hours of five-minute buckets
    # Three hours of commits, a minute apart, each with its source position's age.
    partition_history.points.extend(
        dataclasses.replace(point, position_age_ms=1000 * index)
        for index, point in enumerate(make.history(180))
    )
    return cluster


@pytest.fixture(params=list(WIDTHS))
def width(request, page, live_server, editor, cluster):
    """A page at the parameter's width, logged in as an editor; it fails on any console error."""
    errors = open_at(page, live_server, request.param, "erin", "erin-password")
    yield WIDTHS[request.param]
    assert errors == []


def fits(page, width: int) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_sinks_first_read_says_unchanged_since_never_moved(page, live_server, width, screenshot):
    page.goto(f"{live_server.url}/clusters/live/connectors/orders-sink/")
    commit = page.locator("#facts [data-field='last-commit']")
    text = commit.inner_text()
    assert text.startswith("unchanged since at least ") and " UTC (the first read, 3m " in text
    assert "moved" not in text
    title = commit.locator("span[title]").first.get_attribute("title")
    assert title.startswith("No refresh has seen the group's committed offsets move")
    assert commit.is_visible() and fits(page, width)
    screenshot(f"times-sink-first-read-{width}")
    page.goto(f"{live_server.url}/clusters/live/connectors/?type=sink")
    cell = page.locator("tr[data-connector='orders-sink'] [data-field='last-commit']")
    assert cell.inner_text().startswith("unchanged since first read 3m ")


def test_every_chart_follows_the_range_and_names_its_bucket(page, live_server, width, screenshot):
    page.goto(f"{live_server.url}/clusters/live/connectors/inventory-source/")
    figure = "figure[data-chart='{}']".format
    page.locator(figure("progress")).wait_for()  # drawn by its own request (htmx)
    assert page.locator(f"{figure('commits')} [data-field='bucket']").inner_text() == "per 5 min"
    day = int(page.locator(f"{figure('progress')} path.line").get_attribute("data-points"))
    assert day == 180
    page.click(".chart-range a[data-range='1h']")
    page.wait_for_url("**?range=1h")
    page.locator(figure("progress")).wait_for()
    for chart, bucket in (
        ("commits", "per 5 min"),
        ("progress", "every commit"),
        ("position-age", "at each commit"),
    ):
        shown = page.locator(figure(chart))
        assert shown.locator("[data-field='bucket']").inner_text() == bucket
        assert "the last 1 h" in shown.locator(".chart-legend").inner_text()
    for chart in ("progress", "position-age"):
        points = int(page.locator(f"{figure(chart)} path.line").get_attribute("data-points"))
        assert 59 <= points <= 61
    assert "commits in the last 1 h" in page.locator("[data-field='chart-partition']").inner_text()
    assert fits(page, width)
    page.locator(figure("progress")).scroll_into_view_if_needed()
    screenshot(f"times-charts-1h-{width}")
    # A partition's "chart" link keeps the range.
    with page.expect_response(lambda response: "partition=" in response.url) as answer:
        page.locator("a.chart-link").first.click()
    assert "range=1h" in answer.value.url
    page.locator(figure("progress")).wait_for()
    assert "the last 1 h" in page.locator(f"{figure('progress')} .chart-legend").inner_text()
