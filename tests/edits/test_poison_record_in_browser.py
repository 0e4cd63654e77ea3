"""In Chromium, at 1400 and 390 px, against the REAL worker: a sink stuck on a poison record
shows it on request (masked, as text), a user without the record viewer role is told whom to
ask, and Skip this record leads to the staged edit's page."""

import uuid

import pytest

from offsets.models import OffsetEdit
from offsets.rights.roles import RECORD_VIEWERS_GROUP, ensure_role_groups
from tests.support.browser_fixtures import SCREENSHOTS
from tests.support.browser_pages import console_errors_of, log_in, log_out
from tests.support.connect_rest import ConnectRest
from tests.support.poison_sink import POISON, poisoned_sink
from tests.support.users import user_with
from tests.support.workers import register, session_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration]

RUN = uuid.uuid4().hex[:8]


@pytest.fixture
def rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


def fits(page) -> bool:
    """Nothing wider than the window: no sideways scrolling at 390 px."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_record_box_shows_the_poison_and_skip_stages_an_edit_at_both_widths(
    page,
    live_server,
    transactional_db,
    kafka_runtime,
    rest,
    spark,
    settings,
    tmp_path,
    django_user_model,
    screenshot,
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    errors = console_errors_of(page)
    cluster = register(
        f"worker-{RUN}", kafka_runtime.bootstrap_servers, session_worker(kafka_runtime)
    )
    kafka = {"bootstrap.servers": kafka_runtime.bootstrap_servers}
    name = f"poison-b-{RUN}"
    sink = poisoned_sink(rest, kafka, cluster, spark, name, tmp_path / "out.txt")
    reed = user_with(django_user_model, "reed", "stage_offsetedit")
    reed.groups.add(ensure_role_groups()[RECORD_VIEWERS_GROUP])
    user_with(django_user_model, "vic")
    base = f"{live_server.url}/clusters/{cluster.name}/connectors/{name}/"
    box = f"#record-{sink.topic}-0"
    try:
        for width in (1400, 390):
            page.set_viewport_size({"width": width, "height": 900})
            log_in(page, live_server, "reed", "reed-password")
            page.goto(base)
            page.click("#show-next-records")
            page.wait_for_selector(f"{box}[data-offset='{sink.poison_offset}']")
            value = page.locator(f"{box} [data-field=record-value] pre").inner_text()
            assert POISON in value and "hunter2" not in value and "<script>x</script>" in value
            assert page.locator(f"{box} [data-field=record-key] pre").inner_text() == "order-42"
            assert fits(page), f"the page scrolls sideways at {width} px"
            page.locator(box).scroll_into_view_if_needed()
            screenshot(f"poison-record-{width}")
            page.locator("#next-records-section").screenshot(
                path=str(SCREENSHOTS / f"poison-record-box-{width}.png")
            )

            page.fill(f"{box} input[name=comment]", f"poison seen at {width} px")
            page.click(f"{box} button[data-skip]")
            page.wait_for_selector("#diff")
            edit = OffsetEdit.objects.filter(connector=name).latest("pk")
            assert page.url.endswith(f"/clusters/{cluster.name}/edits/{edit.pk}/")
            assert f"offset {sink.poison_offset}" in page.content()
            screenshot(f"poison-skip-edit-{width}")
            log_out(page)

            # A viewer without the role: the role and whom to ask, no contents.
            log_in(page, live_server, "vic", "vic-password")
            page.goto(f"{base}?records=show")
            page.wait_for_selector("#record-role-needed")
            assert POISON not in page.locator("#next-records").inner_text()
            assert page.locator(f"{box} button[data-skip]").count() == 0
            assert fits(page)
            page.locator("#next-records-section").scroll_into_view_if_needed()
            screenshot(f"poison-no-role-{width}")
            log_out(page)
        assert errors == []
    finally:
        rest.delete(name)
