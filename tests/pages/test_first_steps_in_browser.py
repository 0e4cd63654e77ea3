"""What a new user meets first, in Chromium at a desktop's width and a phone's: the status
filter agrees with the badges, moments in offsets are dated, a cluster's URL and the API's root
lead somewhere, the icon is on every page (errors included) with no console error, downloads
are named for what they hold, and the live state is cards on a phone.

Screenshots go to PHONE_SHOTS (default: tests/screenshots/), never into the repository.
"""

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from offsets.models import SourceOffset
from tests.support import factories as make
from tests.support.browser_pages import TIMEOUT_MS, WIDTHS, console_errors_of, log_in, open_at

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("PHONE_SHOTS", Path(__file__).resolve().parent.parent / "screenshots"))
AT = datetime(2026, 11, 28, 23, 31, 4, tzinfo=UTC)
MS = int(AT.timestamp() * 1000)
STAMP = r"\d{8}T\d{4}Z"


@pytest.fixture
def prod(transactional_db):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "orders-sink", "sink", lag_records=9, lag_status="ERR")
    make.sink_lags(cluster, "orders-sink", "orders", 1, status="STOP")
    for name, state in (("clicks-sink", "PAUSED"), ("mirror-sink", "STOPPED")):
        make.snapshot(
            cluster, name, "sink", runtime_state=state, target_state=state, lag_status="ERR"
        )
        make.sink_lags(cluster, name, "clicks", 1, status="STOP")
    make.snapshot(
        cluster, "jdbc-source", connector_class="io.confluent.connect.jdbc.JdbcSourceConnector"
    )
    [row] = make.source_offsets(cluster, "jdbc-source", 1)
    offset = {"incrementing": 77, "timestamp": MS, "timestamp_nanos": 0}
    SourceOffset.objects.filter(pk=row.pk).update(
        offset=offset, offset_text=json.dumps(offset, separators=(",", ":")), progress=77.0
    )
    return cluster


@pytest.fixture(params=list(WIDTHS))
def width(request, page, live_server, user, prod):
    """A page at the parameter's width, logged in as a viewer; the console's errors listed."""
    page.errors = open_at(page, live_server, request.param, "alice", "alice-password")
    return request.param


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def not_the_document_s_own_status(errors: list[str]) -> list[str]:
    """The errors but Chromium's line for a page answered 403 or 404 on purpose: it logs the
    document's own status as "Failed to load resource" at the document's URL."""
    own = re.compile(r"^(\S+): Failed to load resource: .* status of 40[34] .*\(\1\)$")
    return [error for error in errors if not own.match(error)]


def test_the_err_filter_lists_no_connector_the_list_badges_paused(page, live_server, width):
    page.goto(f"{live_server.url}/clusters/prod/connectors/?status=ERR")
    rows = page.locator("#connectors tbody tr[data-connector]")
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.connector)") == ["orders-sink"]
    assert page.locator("#connectors [data-status='paused']").count() == 0
    shoot(page, f"filter-err-{width}")
    page.goto(f"{live_server.url}/clusters/prod/connectors/?status=PAUSED")
    paused = page.locator("#connectors tbody tr[data-connector]")
    assert paused.count() == 2
    assert page.locator("#connectors [data-field='status'] [data-status='paused']").count() == 2
    shoot(page, f"filter-paused-{width}")
    assert page.errors == []


def test_an_offset_holding_a_moment_shows_its_number_and_its_date(page, live_server, width):
    page.goto(f"{live_server.url}/clusters/prod/connectors/jdbc-source/")
    cell = page.locator("[data-field='offset-moments']").first
    cell.scroll_into_view_if_needed()
    assert cell.inner_text() == "timestamp = 2026-11-28 23:31:04 UTC"
    assert str(MS) in page.locator("code.map", has_text="timestamp").first.inner_text()
    assert cell.is_visible()
    shoot(page, f"offset-moments-{width}")
    assert page.errors == []


def test_a_cluster_s_url_and_the_api_s_root_lead_somewhere(page, live_server, width):
    page.goto(f"{live_server.url}/clusters/prod/")
    assert page.url == f"{live_server.url}/clusters/prod/connectors/"
    page.goto(f"{live_server.url}/api/v1/")
    # The browsable API shows the index with its links.
    assert page.locator(f"a[href='{live_server.url}/api/v1/schema/']").count() == 1
    page.locator(f"a[href='{live_server.url}/api/v1/clusters/']").first.click()
    assert page.url == f"{live_server.url}/api/v1/clusters/"
    page.goto(f"{live_server.url}/api/v1/")
    shoot(page, f"api-index-{width}")
    assert page.errors == []


def test_every_page_has_the_icon_and_no_console_error_errors_included(page, live_server, width):
    urls = {
        "page": "/clusters/prod/connectors/",
        "404": "/clusters/prod/connectors/no-such-connector/",
        "unknown-url-404": "/no/such/page/",
        "403": "/clusters/prod/import/",  # a viewer may not stage edits
        "admin": "/admin/",
    }
    for name, url in urls.items():
        response = page.goto(live_server.url + url)
        expected = {"404": 404, "unknown-url-404": 404, "403": 403}.get(name, 200)
        assert response.status == expected, url
        if name != "admin":
            icon = page.locator("link[rel='icon']").get_attribute("href")
            assert icon == "/static/img/favicon.svg", url
            assert page.request.get(live_server.url + icon).status == 200
            assert page.locator("main h1").count() == 1  # the product's page, never Django's
        if name == "unknown-url-404":
            assert page.locator("main").inner_text().count("There is nothing at /no/such/page/.")
        shoot(page, f"icon-{name}-{width}")
    # Pages that name no icon (the admin's) get it at /favicon.ico.
    favicon = page.request.get(f"{live_server.url}/favicon.ico")
    assert favicon.status == 200 and favicon.headers["content-type"] == "image/svg+xml"
    page.goto(f"{live_server.url}/clusters/prod/")
    assert not_the_document_s_own_status(page.errors) == []


def test_the_connector_s_export_is_named_for_its_cluster_connector_and_time(
    page, live_server, width
):
    page.goto(f"{live_server.url}/clusters/prod/connectors/jdbc-source/")
    with page.expect_download() as download:
        page.click("text=Export JSON")
    name = download.value.suggested_filename
    assert re.fullmatch(rf"prod-jdbc-source-offsets-{STAMP}\.json", name), name
    assert page.errors == []


@pytest.mark.integration
@pytest.mark.parametrize("shown", list(WIDTHS))
def test_the_cluster_export_has_one_name_and_one_label_everywhere(
    page, live_server, user, demo_cluster, shown
):
    page.set_viewport_size({"width": WIDTHS[shown], "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, live_server, "alice", "alice-password")
    names = set()
    for url in ("/clusters/demo/connectors/", "/clusters/demo/edits/", "/clusters/demo/live/"):
        page.goto(live_server.url + url)
        link = page.locator("a[download]", has_text="Export all offsets (KIP-199 JSON)")
        assert link.count() == 1, url
        with page.expect_download() as download:
            link.click()
        names.add(re.sub(STAMP, "TIME", download.value.suggested_filename))
    assert names == {"demo-offsets-TIME.json"}


@pytest.mark.integration
@pytest.mark.parametrize("shown", list(WIDTHS))
def test_the_live_state_is_cards_a_few_lines_tall_on_a_phone(
    page, live_server, user, demo_cluster, shown
):
    page.set_viewport_size({"width": WIDTHS[shown], "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    errors = console_errors_of(page)
    log_in(page, live_server, "alice", "alice-password")
    page.goto(f"{live_server.url}/clusters/demo/live/")
    rows = page.locator("#connectors tbody tr[data-connector]")
    assert rows.count() >= 10
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[shown]
    failed = page.locator("#connectors tr[data-connector='jdbc-sink-audit']")
    name = failed.locator("td[data-field='name']").bounding_box()
    error = failed.locator("td[data-field='error'] summary").first.bounding_box()
    heights = [row.bounding_box()["height"] for row in rows.all()]
    shoot(page, f"live-state-{shown}")
    if shown == "phone":
        # A card: the task's error right under the name, never off to the right.
        assert error["x"] < 120 and 0 < error["y"] - name["y"] < 160, (name, error)
        assert max(heights) < 330 and sorted(heights)[len(heights) // 2] < 200, heights
    else:
        # A table row: the error in its own column, on the name's line.
        assert error["x"] > name["x"] + name["width"] and abs(error["y"] - name["y"]) < 80
    assert errors == []
