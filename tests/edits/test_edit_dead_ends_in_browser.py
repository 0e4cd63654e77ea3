"""In Chromium against the REAL Connect worker, at 1400 px and 390 px: the edit path never
dead-ends. Staging on a running connector says stop first; the edit staged anyway ends in a
conflict, which offers Stop and "Re-stage with the same inputs"; the new edit is approved,
applied, and the still STOPPED connector is resumed from its page. After Stop the page says
"now STOPPED" and the route; the editor sees the conflict in the header; Resume is in the
edit's history. No console error."""

import os
import uuid
from pathlib import Path

import pytest

from offsets.models import AuditEvent, OffsetEdit
from tests.support.browser_pages import console_errors_of, log_in, log_out
from tests.support.connect_rest import ConnectRest
from tests.support.worker_files import byte_position, file_source, write_lines
from tests.support.workers import register, session_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration]

RUN = uuid.uuid4().hex[:8]
# Screenshots of the changed pages at both widths, for people to look at (not kept in git).
SHOTS = Path(os.environ.get("EDIT_SHOTS_DIR", "/tmp/edits50-shots"))
WIDTHS = (1400, 390)


@pytest.fixture
def rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


@pytest.fixture
def console_errors(page):
    """Console errors and uncaught exceptions of every page the test opens."""
    return console_errors_of(page)


@pytest.fixture
def shots(page):
    """Take the page at each width; the test goes on at 1400 px."""
    SHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> None:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})

    return take


def test_a_conflict_is_stopped_re_staged_approved_applied_and_resumed(
    page,
    live_server,
    transactional_db,
    kafka_runtime,
    rest,
    tmp_path,
    editor,
    approver,
    shots,
    console_errors,
):
    page.on("dialog", lambda dialog: dialog.accept())  # stop, apply, resume ask first
    cluster = register(
        f"deadends-{RUN}", kafka_runtime.bootstrap_servers, session_worker(kafka_runtime)
    )
    connector, path = f"deadends-{RUN}", tmp_path / "in.log"
    lines = ["one", "two"]
    write_lines(path, lines)
    rest.create(connector, file_source(path, f"deadends-{RUN}-out"))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    rest.wait_for_state(connector, "RUNNING", tasks=1)
    stage_url = f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/edits/"

    # The editor's stage form says stop first, with the button; staged anyway, it is submitted.
    log_in(page, live_server, "erin", "erin-password")
    page.goto(stage_url)
    page.wait_for_selector("#stop-first #stop-first-button")
    assert f"Stop {connector} first." in page.locator("#stop-first").inner_text()
    # A row of the table fills the form.
    page.locator("#current-offsets a[data-prefill]").first.click()
    page.wait_for_selector("#stage")
    assert str(path) in page.locator("input[name=existing]").input_value()
    shots("1-stage-stop-first")
    page.fill("textarea[name=offset]", '{"position": 0}')
    page.fill("textarea[name=comment]", "Replay the file")
    page.click("button:text('Stage the edit')")
    page.wait_for_selector("#diff")
    first_url = page.url
    page.click("button:text('Submit for approval')")
    page.wait_for_selector("#awaiting-approver")
    log_out(page)

    # The connector keeps reading while the edit waits: its offset moves on.
    write_lines(path, ["three"], append=True)
    moved = byte_position([*lines, "three"], 3)
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == moved)

    # The approver sees it waiting in the header, approves; the apply ends in a conflict.
    log_in(page, live_server, "abe", "abe-password")
    page.wait_for_selector("#awaiting-approval a.awaiting")
    assert "1 edit awaiting approval" in page.locator("#awaiting-approval").inner_text()
    page.click("#awaiting-approval a")
    page.wait_for_selector("#awaiting-here")
    shots("2-edits-list-awaiting")
    page.goto(first_url)
    page.click("button:text('Approve')")
    page.wait_for_selector("#edit-state:text('approved')")
    # The header's count follows the action: nothing else awaits.
    page.wait_for_selector("#awaiting-approval:not(:has(a))", state="attached")
    page.click("button:text('Apply now')")
    page.wait_for_selector("#edit-state:text('conflict')", timeout=30_000)
    assert page.locator("#lock-checks li.fail[data-check='connector-stopped']").count() == 1
    assert page.locator("#lock-checks li.fail[data-check='nothing-moved']").count() == 1
    assert page.locator("button:text('Stop the connector')").count() == 1
    assert page.locator("button:text('Re-stage with the same inputs')").count() == 1
    assert "target state is STARTED" in page.locator("#edit-warnings-box").inner_text()
    shots("3-conflict-stop-and-restage")
    page.click("button:text('Stop the connector')")
    page.wait_for_selector("#edit-status:not(:has(button[value='stop-connector']))", timeout=40_000)
    rest.wait_for_state(connector, "STOPPED")
    # The page says the state it is in now and the way the re-staged edit is written; what
    # the stop answered is gone: the target-state warning, the failed check's message.
    now = page.locator("#connector-now[data-state='STOPPED']").inner_text()
    assert "The connector is now STOPPED (no tasks)" in now
    assert "Re-staged with the same inputs, it would be written through the Connect worker" in now
    assert page.locator("#lock-checks li.was-fail[data-check='connector-stopped']").count() == 1
    assert "target state" not in page.locator("#edit-warnings-box").inner_text()
    assert page.locator("#timeline li[data-action='stopped']").count() == 1
    shots("3b-conflict-after-stop")
    log_out(page)

    # The editor sees in the header that their edit ended in a conflict, and re-stages it
    # with the same inputs: a new draft, diffed against the offsets now.
    log_in(page, live_server, "erin", "erin-password")
    page.wait_for_selector("#own-conflicts")
    assert page.locator("#own-conflicts").inner_text() == "1 of your edits ended in a conflict"
    page.click("#own-conflicts")
    page.wait_for_selector("#edit-list .awaiting-you:text('your edit: re-stage it')")
    shots("3c-editor-sees-the-conflict")
    page.goto(first_url)
    page.click("button:text('Re-stage with the same inputs')")
    page.wait_for_selector("#restaged-from")
    assert page.url != first_url
    second = OffsetEdit.objects.get(restaged_from__isnull=False)
    before = second.changes.get().before
    assert before == {"position": moved} and second.changes.get().after == {"position": 0}
    shots("4-restaged-draft")
    page.click("button:text('Submit for approval')")
    page.wait_for_selector("#edit-state:text('submitted')")
    log_out(page)

    # The approver approves and applies it; the connector is still STOPPED: Resume.
    log_in(page, live_server, "abe", "abe-password")
    page.goto(f"{live_server.url}/clusters/{cluster.name}/edits/{second.pk}/")
    page.click("button:text('Approve')")
    page.wait_for_selector("#edit-state:text('approved')")
    page.click("button:text('Apply now')")
    page.wait_for_selector("#edit-state:text('applied')", timeout=60_000)
    page.wait_for_selector("#still-stopped")
    shots("5-applied-still-stopped")
    page.click("button:text('Resume the connector')")
    page.wait_for_selector("#edit-status:not(:has(#still-stopped))", timeout=40_000)
    rest.wait_for_state(connector, "RUNNING", tasks=1)
    # Said, and in the edit's history.
    assert page.locator("#resumed").inner_text().startswith("Resumed by abe at ")
    assert page.locator("#connector-now[data-state='RUNNING']").count() == 1
    assert page.locator("#timeline li[data-action='resumed']").count() == 1
    shots("5b-resumed-in-history")
    # It starts from the new offsets: the whole file again.
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == moved)

    # The old edit links to the new one, and the audit says so.
    page.goto(first_url)
    page.wait_for_selector(f"#restaged-as a:text('edit #{second.pk}')")
    shots("6-conflict-restaged-as")
    event = AuditEvent.objects.get(edit__restaged_as=second, action="restaged")
    assert event.details["restaged_as"] == second.pk and event.actor_name == "erin"
    assert console_errors == [], "\n".join(console_errors)
    rest.stop(connector)
    rest.delete(connector)
