"""In Chromium against the REAL Connect worker: an edit staged while the connector runs is
stopped from the edit page, approved by another user, applied through the worker (KIP-875
PATCH), and the audit log shows each step."""

import uuid

import pytest

from offsets.models import AuditEvent, OffsetEdit
from tests.support.browser_pages import log_in, log_out
from tests.support.connect_rest import ConnectRest
from tests.support.worker_files import file_source, wait_for_values, write_lines
from tests.support.workers import register, session_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration]

RUN = uuid.uuid4().hex[:8]


@pytest.fixture
def rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


def test_a_running_connector_is_stopped_from_the_edit_page_and_the_worker_applies_the_edit(
    page, live_server, transactional_db, kafka_runtime, rest, tmp_path, editor, approver, screenshot
):
    page.on("dialog", lambda dialog: dialog.accept())  # stop and apply ask for confirmation
    cluster = register(
        f"worker-{RUN}", kafka_runtime.bootstrap_servers, session_worker(kafka_runtime)
    )
    connector, output, path = f"browser-{RUN}", f"browser-{RUN}-out", tmp_path / "in.log"
    write_lines(path, ["one", "two"])
    rest.create(connector, file_source(path, output))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    rest.wait_for_state(connector, "RUNNING", tasks=1)
    kafka = {"bootstrap.servers": kafka_runtime.bootstrap_servers}

    # The editor stages "read the file again from the start" while the connector runs.
    log_in(page, live_server, "erin", "erin-password")
    page.goto(f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/edits/")
    page.wait_for_selector("#current-offsets")
    page.fill("input[name=existing]", f'{{"filename":"{path}"}}')
    page.fill("textarea[name=offset]", '{"position": 0}')
    page.fill("textarea[name=comment]", "Replay the file")
    page.click("button:text('Stage the edit')")
    page.wait_for_selector("#diff")
    assert page.locator("#edit-route").get_attribute("data-via") == "worker"
    edit_url = page.url
    page.click("button:text('Submit for approval')")
    page.wait_for_selector("#edit-state:text('submitted')")
    log_out(page)

    # The approver approves; the first apply is refused because the connector runs.
    log_in(page, live_server, "abe", "abe-password")
    page.goto(edit_url)
    page.wait_for_selector("#diff")
    assert "Through the Connect worker" in page.locator("#edit-route").inner_text()
    page.click("button:text('Approve')")
    page.wait_for_selector("#edit-state:text('approved')")
    page.click("button:text('Apply now')")
    page.wait_for_selector("#lock-checks li.fail[data-check='connector-stopped']")
    assert page.locator("#edit-state").inner_text() == "approved"
    screenshot("worker-1-refused-running")

    # "Stop the connector" right there: the worker stops it and the lock check passes.
    page.fill("#comment", "Stopping to replay")
    page.click("button:text('Stop the connector')")
    # The stop waits for STOPPED with no tasks, then the lock check runs again.
    page.wait_for_selector("#lock-checks li.pass[data-check='connector-stopped']", timeout=40_000)
    assert page.locator("#lock-checks li.fail").count() == 0
    assert page.locator("button:text('Stop the connector')").count() == 0
    assert rest.status(connector)["connector"]["state"] == "STOPPED"
    screenshot("worker-2-stopped-checks-pass")
    page.click("button:text('Apply now')")
    page.wait_for_selector("#edit-state:text('applied')", timeout=60_000)
    page.reload()
    assert page.locator("#edit-applied-via").get_attribute("data-via") == "worker"
    screenshot("worker-3-applied-through-worker")

    # The audit log: the stop and the apply through the worker, by the approver.
    page.goto(f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/edits/")
    stopped = page.locator("#audit-log tr[data-action='stopped']")
    stopped.wait_for()
    assert "abe" in stopped.inner_text()
    applied = page.locator("#audit-log tr[data-action='applied']")
    assert "abe" in applied.inner_text() and '{"position":0}' in applied.inner_text()
    screenshot("worker-4-audit-log")

    edit = OffsetEdit.objects.get(cluster=cluster, connector=connector)
    details = edit.audit_events.get(action=AuditEvent.Action.APPLIED).details
    assert details["applied_via"] == "worker" and details["worker_verified"]
    assert rest.offsets(connector)["offsets"][0]["offset"] == {"position": 0}
    # The worker resumes from what it wrote: both lines again.
    rest.resume(connector)
    assert wait_for_values(kafka, output, 4) == ["one", "two", "one", "two"]
    rest.stop(connector)
    rest.delete(connector)
