import pytest

from offsets.models import Cluster
from tests.support.browser_pages import log_in
from tests.support.users import user_with

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_a_user_logs_in_and_sees_the_live_state_of_the_demo_connectors(
    page, live_server, transactional_db, django_user_model, seeded_demo, screenshot
):
    user_with(django_user_model, "bob")
    Cluster.objects.create(name="demo", bootstrap_servers=seeded_demo.bootstrap_servers)

    log_in(page, live_server, "bob", "bob-password")
    page.wait_for_selector("text=Clusters")
    screenshot("home")
    page.click("tr[data-cluster='demo'] a:text('live state')")
    page.wait_for_selector("table#connectors")
    screenshot("live-state")

    rows = page.locator("table#connectors > tbody > tr")
    names = [rows.nth(i).get_attribute("data-connector") for i in range(rows.count())]
    assert names == sorted(seeded_demo.demo.connectors)
    failed = page.locator("tr[data-connector='jdbc-sink-audit'] .state-failed").first
    assert failed.inner_text() == "FAILED"
    assert "SQLException" in failed.get_attribute("title")
    deleted = page.locator("tr[data-connector='legacy-inventory-source']")
    assert deleted.locator(".badge").inner_text() == "deleted (offsets remain)"


def test_a_wrong_password_shows_an_error(page, live_server, transactional_db, django_user_model):
    user_with(django_user_model, "bob")
    log_in(page, live_server, "bob", "wrong", landing=None)
    assert (
        page.locator("p.error").inner_text().startswith("Your username and password didn't match")
    )
