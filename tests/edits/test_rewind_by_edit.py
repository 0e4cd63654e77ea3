"""A rewind an offset edit wrote through the REAL worker (KIP-875 PATCH) is that edit's work:
the refresh names the edit, no REWIND status rises, and the connector page, its Rewinds
table, its progress chart and the API say "edit #N". A rewind written by hand beside it stays
a REWIND. The worker writes the rewinding record before the edit's finish is recorded."""

import re
import uuid
from pathlib import Path

import pytest

from offsets.edits.apply import apply_edit
from offsets.models import Cluster, ConnectorSnapshot, OffsetEdit, RefreshRun, RewindEvent
from offsets.queries import snapshots
from offsets.refresh.run import run_refresh
from tests.support.browser_pages import log_in
from tests.support.connect_rest import ConnectRest
from tests.support.edit_steps import stage_and_approve
from tests.support.worker_files import file_source, stopped, write_lines
from tests.support.workers import register, session_worker

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
LINES = ["one", "two", "three"]  # FileStreamSource commits position 14 after them


def refreshed(cluster: Cluster, spark) -> None:
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error


def rewound_by_edit(
    cluster: Cluster, rest: ConnectRest, spark, path: Path, connector: str, editor, approver
) -> OffsetEdit:
    """A stopped file source at position 14, refreshed, moved back to 4 by an edit applied
    through the worker, refreshed again."""
    write_lines(path, LINES)
    rest.create(connector, file_source(path, f"{connector}-out"))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 14)
    stopped(rest, connector)
    refreshed(cluster, spark)
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition={"filename": str(path)}, offset={"position": 4},
    )  # fmt: skip
    edit = apply_edit(edit=edit, user=approver, comment="read two and three again")
    assert edit.state == OffsetEdit.State.APPLIED and edit.applied_via == "worker", edit.error
    refreshed(cluster, spark)
    return edit


def test_a_rewind_an_edit_wrote_through_the_worker_is_shown_as_that_edit(
    cluster, rest, spark, tmp_path, settings, editor, approver, client
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    connector = f"rewind-{RUN}"
    edit = rewound_by_edit(cluster, rest, spark, tmp_path / "in.log", connector, editor, approver)
    try:
        (rewind,) = RewindEvent.objects.filter(cluster=cluster, connector=connector)
        # Written by the worker inside the edit's window, before its finish was recorded.
        assert edit.apply_started_at <= rewind.at <= edit.finished_at
        assert (rewind.from_progress, rewind.to_progress, rewind.edit_id) == (14, 4, edit.pk)
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        assert snapshot.rewinds == 0 and "REWIND" not in snapshots.status_reasons(snapshot)

        client.force_login(editor)
        url = f"/clusters/{cluster.name}/connectors/{connector}/"
        html = client.get(url).content.decode()
        assert "REWIND" not in html.split('data-field="status">')[1].split("</dd>")[0]
        table = html.split('id="rewinds"')[1].split("</table>")[0]
        link = f'<a href="/clusters/{cluster.name}/edits/{edit.pk}/"'
        assert link in table and f">edit #{edit.pk}</a>" in table and "REWIND" not in table
        chart = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress")
        chart = chart.content.decode()
        assert chart.count('data-marker="edit"') == 1 and 'data-marker="rewind"' not in chart
        assert f'{link} class="marker-link"' in chart
        assert re.search(rf"<title>edit #{edit.pk} moved the offset back at [^<]+</title>", chart)
        history = client.get(f"/api/v1{url}history/").json()
        assert [r["edit"] for r in history["rewinds"]] == [edit.pk]

        # Moved back again by hand, after the edit: no edit wrote it, so it is a REWIND.
        rest.patch_offsets(
            connector,
            {
                "offsets": [
                    {"partition": {"filename": str(tmp_path / "in.log")}, "offset": {"position": 0}}
                ]
            },
        )
        refreshed(cluster, spark)
        by_hand = RewindEvent.objects.get(cluster=cluster, connector=connector, to_progress=0)
        assert by_hand.edit_id is None
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        assert snapshot.rewinds == 1 and "REWIND" in snapshots.status_reasons(snapshot)
        table = client.get(url).content.decode().split('id="rewinds"')[1].split("</table>")[0]
        assert table.count(">edit #") == 1 and table.count(">REWIND</span>") == 1
    finally:
        rest.delete(connector)


@pytest.fixture
def worker_rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


@pytest.mark.browser
def test_a_rewind_an_edit_wrote_reads_edit_n_in_the_browser_at_both_widths(
    page, live_server, transactional_db, kafka_runtime, worker_rest, spark, tmp_path, settings,
    editor, approver, screenshot,
):  # fmt: skip
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    cluster = register(
        f"worker-{RUN}", kafka_runtime.bootstrap_servers, session_worker(kafka_runtime)
    )
    connector = f"rewind-browser-{RUN}"
    edit = rewound_by_edit(
        cluster, worker_rest, spark, tmp_path / "in.log", connector, editor, approver
    )
    try:
        log_in(page, live_server, "erin", "erin-password")
        for width in (1400, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{live_server.url}/clusters/{cluster.name}/connectors/{connector}/")
            assert "REWIND" not in page.locator("#facts [data-field='status']").inner_text()
            cell = page.locator("#rewinds td[data-field='edit'] a")
            assert cell.inner_text() == f"edit #{edit.pk}"
            marker = page.locator("figure[data-chart='progress'] a[data-marker='edit']")
            marker.wait_for(state="attached")
            assert marker.locator("title").text_content().startswith(f"edit #{edit.pk} moved")
            # The document stays as wide as the window; the table scrolls in its own box.
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            page.locator("#rewinds").scroll_into_view_if_needed()
            screenshot(f"times-rewind-by-edit-{width}")
            cell.click()
            page.wait_for_url(f"**/edits/{edit.pk}/")
    finally:
        worker_rest.delete(connector)
