"""Every page at a desktop's width and a phone's, on the refreshed demo: no page scrolls
sideways at 390 px (a wide table scrolls in its own box), no console error, and an approver
on a phone reads the diff before reaching the Approve button.

Screenshots of every page at both widths go to PHONE_SHOTS (default: tests/screenshots/),
never into the repository.
"""

import os
from pathlib import Path

import pytest

from tests.support.browser_pages import TIMEOUT_MS, WIDTHS, console_errors_of, log_in
from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.browser, pytest.mark.integration]

SHOTS = Path(os.environ.get("PHONE_SHOTS", Path(__file__).resolve().parent.parent / "screenshots"))
EDITED = "jdbc-source-inventory"
# Every page of dashboard/urls.py and dashboard/pages/edits/urls.py a browser opens (the rest answer
# POSTs or downloads), with the demo's widest cases: a failed sink with its trace, a mirror.
# `{edit}` is the id of a submitted edit.
PAGES = {
    "overview": "/",
    "connectors": "/clusters/demo/connectors/",
    "connector-source": f"/clusters/demo/connectors/{EDITED}/",
    "connector-sink": "/clusters/demo/connectors/es-sink-clicks/",
    "connector-failed-sink": "/clusters/demo/connectors/jdbc-sink-audit/",
    "connector-mirror": "/clusters/demo/connectors/mm2-us-east-source/",
    "connector-key-drift": "/clusters/demo/connectors/http-source-metrics/",
    "connector-404": "/clusters/demo/connectors/no-such-connector/",
    "move": f"/clusters/demo/connectors/{EDITED}/move/",
    "worker": "/clusters/demo/worker/",
    "orphans": "/clusters/demo/orphans/",
    "live-state": "/clusters/demo/live/",
    "connector-edits": f"/clusters/demo/connectors/{EDITED}/edits/",
    "edit-list": "/clusters/demo/edits/",
    "edit-detail": "/clusters/demo/edits/{edit}/",
    "import": "/clusters/demo/import/",
}


@pytest.fixture
def approver_on_demo(page, live_server, transactional_db, refreshed_demo, editor, approver):
    """A browser logged in as an approver, on the refreshed demo with an edit to review; it
    fails on any console error."""
    edit = make_edit(refreshed_demo, editor, state="submitted", connector=EDITED)
    page.set_default_timeout(TIMEOUT_MS)
    errors = console_errors_of(page)
    log_in(page, live_server, "abe", "abe-password")
    yield edit
    # A 404 page is one on purpose: its status is the only error Chromium may log.
    assert [error for error in errors if "404 (Not Found)" not in error] == []


def open_at(page, url: str, width: str) -> None:
    page.set_viewport_size({"width": WIDTHS[width], "height": 844})
    page.goto(url)
    # Parts that load themselves (a chart, the worker) have arrived.
    page.wait_for_load_state("networkidle")


def shoot(page, name: str) -> None:
    """The whole page, and a long one in screen-high slices too, small enough to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    width, height = page.evaluate("() => [innerWidth, document.documentElement.scrollHeight]")
    for index, top in enumerate(range(0, height, 1200) if height > 1600 else []):
        clip = {"x": 0, "y": top, "width": width, "height": min(1200, height - top)}
        page.screenshot(path=str(SHOTS / f"{name}.{index}.png"), full_page=True, clip=clip)


def page_scroll(page) -> tuple[int, int]:
    return page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")


@pytest.mark.parametrize("name", list(PAGES))
def test_no_page_scrolls_sideways_on_a_phone(page, live_server, approver_on_demo, name):
    url = live_server.url + PAGES[name].format(edit=approver_on_demo.pk)
    for width in WIDTHS:
        open_at(page, url, width)
        shoot(page, f"{name}-{width}")
        if width == "phone":
            scroll_width, inner_width = page_scroll(page)
            assert scroll_width <= inner_width, f"{name} is {scroll_width} px wide"


def test_the_login_page_fits_a_phone(page, live_server, transactional_db):
    open_at(page, f"{live_server.url}/login/", "phone")
    shoot(page, "login-phone")
    scroll_width, inner_width = page_scroll(page)
    assert scroll_width <= inner_width


def test_an_approver_on_a_phone_reads_the_diff_before_the_approve_button(
    page, live_server, approver_on_demo
):
    open_at(page, f"{live_server.url}/clusters/demo/edits/{approver_on_demo.pk}/", "phone")
    diff = page.locator("#edit-diff").bounding_box()
    approve = page.locator("button:text('Approve')").bounding_box()
    assert diff["y"] + diff["height"] <= approve["y"]
    # Readable: the diff's column takes the screen's width, not a sliver of it.
    assert diff["width"] > 300
    after = page.locator("#diff td.after").first
    assert '{"position":2}' in after.inner_text()
    assert after.bounding_box()["width"] > 120  # whole words a line, not a letter a line
