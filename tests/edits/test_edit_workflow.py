"""Stage an edit, see its diff, approve it as another user, apply it, find it in the audit log."""

import pytest

from offsets.formats import jackson
from offsets.formats.offset_records import latest_offsets
from offsets.kafka import reading
from tests.support.browser_pages import log_in, log_out

pytestmark = [pytest.mark.browser, pytest.mark.integration]

CONNECTOR = "file-source-audit"  # STOPPED in the demo
KEY = jackson.dumps_key(CONNECTOR, {"filename": "/var/log/app/audit.log"})


def test_an_edit_is_staged_approved_by_another_user_applied_and_audited(
    page, live_server, transactional_db, fresh_demo, editor, approver, screenshot
):
    page.on("dialog", lambda dialog: dialog.accept())  # "Apply now" asks for confirmation

    # The editor stages the edit from the connectors page.
    log_in(page, live_server, "erin", "erin-password")
    page.goto(f"{live_server.url}/clusters/fresh/live/")
    page.locator(f"tr[data-connector='{CONNECTOR}'] a:text('offsets & edits')").click()
    page.wait_for_selector("#current-offsets")
    # The partition is typed, or picked from the suggestions of the table's page.
    page.fill("input[name=existing]", '{"filename":"/var/log/app/audit.log"}')
    page.fill("textarea[name=offset]", '{"position": 4242}')
    page.fill("textarea[name=comment]", "Re-read the audit log from byte 4242")
    screenshot("edit-1-stage-form")
    page.click("button:text('Stage the edit')")

    # The diff: before -> after with the exact key bytes.
    page.wait_for_selector("#diff")
    row = page.locator('#diff tr[data-partition=\'{"filename":"/var/log/app/audit.log"}\']')
    assert row.locator("td.after").inner_text() == '{"position":4242}'
    assert KEY.decode() in row.locator(".key").inner_text()
    assert page.locator("#edit-state").inner_text() == "draft"
    screenshot("edit-2-diff-draft")
    edit_url = page.url
    page.click("button:text('Submit for approval')")
    page.wait_for_selector("#edit-state:text('submitted')")
    # The author, even with a role to approve, would find no Approve button here.
    assert page.locator("button:text('Approve')").count() == 0
    log_out(page)

    # Another user, an approver, approves and applies.
    log_in(page, live_server, "abe", "abe-password")
    page.goto(edit_url)
    page.wait_for_selector("#diff")
    screenshot("edit-3-review-as-approver")
    page.fill("#comment", "Checked with the audit team")
    page.click("button:text('Approve')")
    page.wait_for_selector("#edit-state:text('approved')")
    page.click("button:text('Apply now')")
    page.wait_for_selector("#edit-state:text('applied')", timeout=30_000)
    checks = page.locator("#lock-checks li")
    assert [checks.nth(i).get_attribute("data-check") for i in range(checks.count())] == [
        "connector-stopped",
        "nothing-moved",
        "single-apply",
    ]
    assert page.locator("#lock-checks li.fail").count() == 0
    screenshot("edit-4-applied")

    # The connector page's audit log has the apply, by the approver, with the values.
    page.goto(f"{live_server.url}/clusters/fresh/connectors/{CONNECTOR}/edits/")
    applied = page.locator("#audit-log tr[data-action='applied']")
    applied.wait_for()
    text = applied.inner_text()
    assert "abe" in text and '{"position":4242}' in text
    assert page.locator("#audit-log tr[data-action='approved']").inner_text().count("abe") == 1
    screenshot("edit-5-audit-log")

    # And Connect's runtime would now read the new offset.
    records = reading.read_topic(fresh_demo.settings, "connect-offsets", timeout=5)
    latest = latest_offsets((r.key, r.value) for r in records).offsets
    assert latest[KEY].value_bytes == b'{"position":4242}'


def test_an_import_dry_run_highlights_new_keys_and_deletions(
    page, live_server, transactional_db, fresh_demo, editor, screenshot, tmp_path
):
    document = tmp_path / "offsets.json"
    document.write_text(
        '{"file-source-audit": ['
        '{"partition": {"filename": "/var/log/app/audit.log"}, "offset": null},'
        '{"partition": {"filename": "/var/log/app/audit-2.log"}, "offset": {"position": 0}}]}'
    )
    log_in(page, live_server, "erin", "erin-password")
    page.goto(f"{live_server.url}/clusters/fresh/import/")
    page.set_input_files("input[name=file]", str(document))
    page.click("button:text('Import')")  # the dry-run box is ticked by default
    page.wait_for_selector("#import-preview")
    screenshot("edit-6-import-dry-run")

    new = page.locator("#diff tr.new")
    assert new.locator(".tag").inner_text() == "NEW"
    assert '["file-source-audit",{"filename":"/var/log/app/audit-2.log"}]' in new.inner_text()
    deleted = page.locator("#diff tr.delete")
    assert deleted.locator(".tag").inner_text() == "DELETE"
    assert deleted.locator("td.after").inner_text() == "(deleted)"
    assert "nothing was" in page.locator("#import-preview h2").first.inner_text().lower()


def test_a_sink_connector_page_shows_its_group_log_and_strategies(
    page, live_server, transactional_db, fresh_demo, editor, screenshot
):
    log_in(page, live_server, "erin", "erin-password")
    page.goto(
        f"{live_server.url}/clusters/fresh/connectors/es-sink-clicks/edits/?strategy=datetime"
    )
    page.wait_for_selector("#current-offsets")
    screenshot("edit-7-sink-connector")
    assert "search-indexer-clicks" in page.locator("#connector-facts").inner_text()
    assert page.locator("#current-offsets tbody tr").count() == 4  # clicks has 4 partitions
    assert page.locator(".tabs a.current").inner_text() == "To a date-time"
    assert page.locator("input[name=at][type=datetime-local]").count() == 1


def test_reconcile_with_the_broker_unreachable_shows_why_and_leaves_the_edit_applying(
    page, live_server, transactional_db, editor, approver, settings, screenshot
):
    # The page's htmx config must reach htmx (it reads only the first htmx-config meta):
    # without it a 503 answer is not swapped in and the button seems to do nothing.
    from offsets.models import OffsetEdit
    from tests.support import factories
    from tests.support.edits_factory import make_edit, make_stuck

    settings.KAFKA_WRITE_TIMEOUT = 2  # the fence of the unreachable cluster gives up sooner
    settings.KAFKA_READ_TIMEOUT = 2
    edit = make_stuck(make_edit(factories.cluster("c1"), editor))  # its cluster: 127.0.0.1:1
    page.on("dialog", lambda dialog: dialog.accept())
    log_in(page, live_server, "abe", "abe-password")
    page.goto(f"{live_server.url}/clusters/c1/edits/{edit.pk}/")
    with page.expect_response(lambda r: r.url.endswith("/reconcile/"), timeout=60_000) as answer:
        page.click("button:text('Reconcile from Kafka')")
    assert answer.value.status == 503
    page.wait_for_selector("#edit-status :text('The cluster could not be reached')")
    screenshot("edit-7-reconcile-broker-unreachable")
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
