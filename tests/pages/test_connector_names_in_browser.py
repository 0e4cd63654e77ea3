"""In real Chromium: a click on any connector's name opens that connector's page.

Browsers resolve `.` and `..` segments (even percent-encoded ones) and treat `\\` as `/`, so
names a server could route still lead a browser elsewhere unless the URL avoids them.
"""

import pytest

from tests.support import factories as make
from tests.support.browser_pages import TIMEOUT_MS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration]

NAMES = ["", ".", "..", "a/b", "a\\b", "%2e%2e", "~tilde", "tab\tname", "café ☕"]


def test_each_name_in_the_list_leads_to_its_own_page(
    page, live_server, transactional_db, user, screenshot
):
    cluster = make.cluster("prod")
    make.run(cluster)
    for name in ["plain-source", *NAMES]:
        make.snapshot(cluster, name, partitions=2)
        make.source_offsets(cluster, name, 2)
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, live_server, "alice", "alice-password")

    listing = f"{live_server.url}/clusters/prod/connectors/?per_page=100"
    page.goto(listing)
    screenshot("connector-names-list")
    rows = page.locator("tr[data-connector]")
    assert rows.count() == len(NAMES) + 1
    for index in range(rows.count()):
        page.goto(listing)
        row = page.locator("tr[data-connector]").nth(index)
        name = row.get_attribute("data-connector")
        row.locator("td a").first.click()
        page.wait_for_selector("h1")
        # The page reached is the connector's own: its API link names it exactly.
        api = page.locator("a:text-is('API')").get_attribute("href")
        shown = page.evaluate("url => fetch(url).then(r => r.json()).then(j => j.name)", api)
        assert shown == name, (name, page.url)
