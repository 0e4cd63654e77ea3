"""In real Chromium, under the real Content-Security-Policy: htmx works, sends the CSRF token
from <body hx-headers>, and no page breaks a rule of the policy."""

import pytest

from offsets.models import ConnectorSnapshot
from tests.support.browser_pages import TIMEOUT_MS, console_errors_of, log_in
from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def page(page):
    """Chromium's page, giving up on any wait after TIMEOUT_MS."""
    page.set_default_timeout(TIMEOUT_MS)
    return page


@pytest.fixture
def console_errors(page):
    """Console errors and uncaught exceptions of every page the test opens."""
    return console_errors_of(page)


def test_htmx_posts_carry_the_csrf_token_and_succeed_under_the_csp(
    page, live_server, transactional_db, refreshed_demo, editor, console_errors
):
    edit = make_edit(refreshed_demo, editor, connector="file-source-audit")
    log_in(page, live_server, "erin", "erin-password")
    page.goto(f"{live_server.url}/clusters/demo/edits/{edit.pk}/")
    assert page.locator("#edit-state").inner_text() == "draft"

    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/submit/")) as sent:
        page.click("button:text('Submit for approval')")
    page.wait_for_selector("#edit-state:text('submitted')")

    headers = sent.value.headers
    assert headers.get("hx-request") == "true"  # it went through htmx, not a plain form post
    token = page.locator("body").get_attribute("hx-headers")
    assert headers.get("x-csrftoken") and headers["x-csrftoken"] in token
    assert sent.value.response().status == 200
    edit.refresh_from_db()
    assert edit.state == "submitted"
    assert not console_errors, console_errors


def test_the_pages_break_no_rule_of_the_content_security_policy(
    page, live_server, transactional_db, refreshed_demo, editor, console_errors
):
    source = ConnectorSnapshot.objects.filter(cluster=refreshed_demo, type="source").first()
    sink = ConnectorSnapshot.objects.filter(cluster=refreshed_demo, type="sink").first()
    edit = make_edit(refreshed_demo, editor, connector=source.name)
    log_in(page, live_server, "erin", "erin-password")
    response = page.goto(f"{live_server.url}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    for path in (
        "/clusters/demo/connectors/",
        f"/clusters/demo/connectors/{source.name}/",
        f"/clusters/demo/connectors/{sink.name}/",
        "/clusters/demo/live/",
        "/clusters/demo/edits/",
        f"/clusters/demo/edits/{edit.pk}/",
        "/clusters/demo/import/",
        # DRF's browsable API, with its forms (a POST form, filters).
        "/api/v1/clusters/",
        f"/api/v1/clusters/demo/connectors/{source.name}/",
        "/api/v1/edits/",
        "/api/v1/clusters/demo/refreshes/",
    ):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
    # htmx really runs under the policy (a blocked script would show no console error here,
    # only a dead page): typing in the filter swaps the table through htmx.
    page.goto(f"{live_server.url}/clusters/demo/connectors/")
    with page.expect_response(lambda r: "q=jdbc" in r.url and r.status == 200):
        page.fill("input[name=q]", "jdbc")
    page.wait_for_function("() => location.search.includes('q=jdbc')")
    assert not console_errors, console_errors
