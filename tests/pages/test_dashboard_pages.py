"""The dashboard in headless Chromium, on the seeded demo after real refreshes (Spark)."""

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import F

from offsets.history.reading import partition_history
from offsets.models import (
    CommitBucket,
    ConnectorSnapshot,
    LagSample,
    RefreshRun,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.queries.snapshots import connectors
from offsets.refresh import background
from offsets.refresh.run import run_refresh
from tests.support.browser_pages import TIMEOUT_MS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def signed_in(page, live_server, transactional_db, refreshed_demo, operator):
    """A browser logged in as a user who may start refreshes, on the refreshed demo."""
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, live_server, "olga", "olga-password")
    return page


def rows(page, table: str = "#connectors") -> list[str]:
    return page.locator(f"{table} tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.connector || row.dataset.partition)"
    )


def chart_points(page, chart: str) -> int:
    """How many vertices the chart's line really has in the browser's DOM."""
    line = page.locator(f"[data-chart='{chart}'] path.line")
    path = line.get_attribute("d")
    vertices = re.findall(r"[ML]\s*([\d.]+),([\d.]+)", path)
    assert int(line.get_attribute("data-points")) == len(vertices)
    # Drawn, not just present: the browser gives the path a real extent.
    box = line.bounding_box()
    assert box is not None and box["width"] > 0
    return len(vertices)


def test_the_overview_shows_the_demo_as_the_database_counts_it(
    signed_in, refreshed_demo, screenshot
):
    row = signed_in.locator("tr[data-cluster='demo']")
    snapshots = ConnectorSnapshot.objects.filter(cluster=refreshed_demo)
    by_state = Counter("DELETED" if s.deleted else s.runtime_state for s in snapshots)
    for state, count in by_state.items():
        assert row.locator(f"[data-state='{state}']").get_attribute("data-count") == str(count)
    assert row.locator("[data-field='connectors']").inner_text() == str(snapshots.count())
    sink_lag = sum(
        s.lag_records for s in snapshots if s.type == "sink" and not s.offsets_managed_externally
    )
    assert row.locator("[data-field='sink-lag']").inner_text() == f"{sink_lag:,}"
    assert row.locator("[data-field='worst-status'] .status").inner_text() == "ERR"
    assert row.locator("[data-run='succeeded']").inner_text().startswith("Succeeded")
    screenshot("overview")


def test_the_connectors_list_shows_each_connector_with_the_stored_numbers(
    signed_in, live_server, refreshed_demo, screenshot
):
    signed_in.click("tr[data-cluster='demo'] a:text('demo')")
    signed_in.wait_for_selector("table#connectors")
    snapshots = {s.name: s for s in ConnectorSnapshot.objects.filter(cluster=refreshed_demo)}
    # Problems first by default, as the service orders them; by name one click away.
    problems_first = [s.name for s in connectors(cluster=refreshed_demo, sort="problems")]
    assert rows(signed_in) == problems_first
    for name, snapshot in snapshots.items():
        row = signed_in.locator(f"tr[data-connector='{name}']")
        assert row.locator("[data-field='partitions']").inner_text() == f"{snapshot.partitions:,}"
        assert row.locator("[data-field='type']").inner_text() == snapshot.type
        if snapshot.type == "sink" and not snapshot.offsets_managed_externally:
            lag = row.locator("[data-field='lag-records']").inner_text()
            assert lag == f"{snapshot.lag_records:,}"
            shown = "paused" if snapshot.paused_by_owner else snapshot.lag_status
            assert row.locator(f"[data-status='{shown}']").count() == 1
    badges = {
        "orders-cdc-eos": "own offsets topic (exactly-once)",
        "mm2-us-east-source": "MirrorMaker 2",
        "bq-sink-events": "offsets managed outside Connect",
        "legacy-inventory-source": "deleted (offsets remain)",
    }
    for name, badge in badges.items():
        assert badge in signed_in.locator(f"tr[data-connector='{name}']").inner_text()
    failed = signed_in.locator("tr[data-connector='jdbc-sink-audit'] .state-failed")
    assert "SQLException" in failed.get_attribute("title")
    screenshot("connectors")
    signed_in.click("[data-order='name']")
    signed_in.wait_for_selector("[data-order='problems']")
    assert rows(signed_in) == sorted(snapshots)


def test_sorting_filtering_and_searching_survive_the_polling(
    signed_in, live_server, refreshed_demo, settings, screenshot
):
    settings.PAGE_POLL_SECONDS = 1
    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/")
    by_lag = ConnectorSnapshot.objects.filter(cluster=refreshed_demo).order_by(
        F("lag_records").desc(nulls_last=True), "name"
    )

    signed_in.click("th a[data-sort='lag_records']")
    signed_in.wait_for_url(re.compile(r"sort=lag_records"))
    signed_in.click("th a[data-sort='lag_records']")
    signed_in.wait_for_url(re.compile(r"sort=-lag_records"))
    signed_in.wait_for_selector("th[aria-sort='descending'] a[data-sort='lag_records']")
    assert rows(signed_in) == [s.name for s in by_lag]

    signed_in.select_option("select[name=type]", "sink")
    signed_in.wait_for_url(re.compile(r"type=sink"))
    signed_in.wait_for_function(
        "() => [...document.querySelectorAll('#connectors tbody tr')].length === "
        f"{by_lag.filter(type='sink').count()}"
    )
    assert rows(signed_in) == [s.name for s in by_lag.filter(type="sink")]

    signed_in.fill("input[name=q]", "jdbc")
    signed_in.wait_for_url(re.compile(r"q=jdbc"))
    signed_in.wait_for_function(
        "() => [...document.querySelectorAll('#connectors tbody tr')].length === 1"
    )
    assert rows(signed_in) == ["jdbc-sink-audit"]

    # The next poll asks for the same sort, filter and search, and keeps the table as it is.
    with signed_in.expect_response(
        lambda r: "/clusters/demo/connectors/?" in r.url and r.request.headers.get("hx-request")
    ) as poll:
        pass
    assert "q=jdbc" in poll.value.url and "type=sink" in poll.value.url
    assert "sort=-lag_records" in poll.value.url
    signed_in.wait_for_timeout(300)
    assert rows(signed_in) == ["jdbc-sink-audit"]
    screenshot("connectors-filtered")

    # A reload of the pushed URL shows the same table.
    signed_in.reload()
    assert rows(signed_in) == ["jdbc-sink-audit"]
    assert signed_in.locator("select[name=type]").input_value() == "sink"


def test_a_source_connector_page_draws_its_charts_from_the_history(
    signed_in, live_server, refreshed_demo, screenshot
):
    name = "jdbc-source-inventory"
    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/{name}/")
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed_demo, name=name)
    effective = SourceOffset.objects.filter(cluster=refreshed_demo, connector=name, effective=True)
    assert len(rows(signed_in, "#partition-table")) == effective.count()
    assert signed_in.locator("[data-field='partitions']").inner_text() == str(snapshot.partitions)
    assert signed_in.locator("[data-field='rewinds']").first.inner_text() == str(snapshot.rewinds)

    # Commits per bucket: every stored bucket, the gaps between them drawn as zero.
    buckets = list(CommitBucket.objects.filter(connector=name).order_by("bucket_start"))
    span = (buckets[-1].bucket_start - buckets[0].bucket_start).total_seconds()
    from django.conf import settings

    assert chart_points(signed_in, "commits") == int(span // settings.COMMIT_BUCKET_SECONDS) + 1

    # The progress chart loads by itself and shows the partition that rewound.
    signed_in.wait_for_selector("[data-chart='progress'] path.line")
    rewound = effective.get(rewinds__gt=0)
    history = partition_history(cluster=refreshed_demo, connector=name, key_hash=rewound.key_hash)
    assert chart_points(signed_in, "progress") == len(history)
    markers = signed_in.locator("[data-chart='progress'] circle.marker")
    assert markers.count() == sum(point.rewind for point in history) >= 1
    assert (
        rewound.partition_text
        in signed_in.locator("[data-chart='progress'] figcaption").inner_text()
    )
    screenshot("source-connector")

    # Another partition's chart, by htmx, without leaving the page.
    other = effective.exclude(pk=rewound.pk).filter(identity__contains="customers").get()
    signed_in.click(f"tr[data-partition='{other.key_hash}'] a.chart-link")
    signed_in.wait_for_function(
        "() => document.querySelector(\"[data-chart='progress'] figcaption\")"
        ".textContent.includes('customers')"
    )
    other_history = partition_history(
        cluster=refreshed_demo, connector=name, key_hash=other.key_hash
    )
    assert chart_points(signed_in, "progress") == len(other_history)

    # Search the partitions.
    signed_in.fill("input[aria-label='Search partitions']", "orders")
    signed_in.wait_for_url(re.compile(r"q=orders"))
    expected = effective.filter(identity__icontains="orders").count()
    signed_in.wait_for_function(
        f"() => document.querySelectorAll('#partition-table tbody tr').length === {expected}"
    )

    # Config with secrets masked, tasks with their states.
    config = signed_in.locator("#config").inner_text()
    assert "s3cr3t-inventory" not in config and "********" in config
    assert signed_in.locator("#tasks tbody tr").count() == len(snapshot.task_states)


def test_export_json_downloads_the_kip875_document(signed_in, live_server, refreshed_demo):
    name = "orders-cdc-eos"
    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/{name}/")
    with signed_in.expect_download() as download:
        signed_in.click("text=Export JSON")
    document = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert re.fullmatch(
        rf"demo-{name}-offsets-\d{{8}}T\d{{4}}Z\.json", download.value.suggested_filename
    )
    expected = [
        {"partition": json.loads(row.partition_text), "offset": json.loads(row.offset_text)}
        for row in SourceOffset.objects.filter(
            cluster=refreshed_demo, connector=name, effective=True, offset_text__isnull=False
        ).order_by("identity", "pk")
    ]
    assert document == {"offsets": expected}
    # Its own offsets topic wins over the worker topic's copy (KIP-618).
    assert {row.topic for row in SourceOffset.objects.filter(connector=name, effective=True)} == {
        "connect-offsets-orders-cdc-eos"
    }


def test_sink_pages_show_lag_per_partition_and_over_time(
    signed_in, live_server, refreshed_demo, screenshot
):
    name = "es-sink-clicks"
    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/{name}/")
    lags = SinkPartitionLag.objects.filter(cluster=refreshed_demo, connector=name)
    assert len(rows(signed_in, "#partition-table")) == lags.count()
    for lag in lags:
        row = signed_in.locator(f"tr[data-partition='{lag.topic}-{lag.partition}']")
        assert row.locator("[data-field='committed']").inner_text() == f"{lag.committed:,}"
        assert row.locator("[data-field='lag-records']").inner_text() == f"{lag.lag_records:,}"
        assert row.locator(f"[data-status='{lag.status}']").count() == 1
    samples = LagSample.objects.filter(connector=name).values("sampled_at").distinct().count()
    assert chart_points(signed_in, "lag") == samples == 2
    screenshot("sink-connector")

    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/bq-sink-events/")
    never = SinkPartitionLag.objects.filter(connector="bq-sink-events", committed__isnull=True)
    assert (
        signed_in.locator("td[data-field='committed']:has-text('no commit')").count()
        == (never.count())
        > 0
    )
    assert "offsets managed outside Connect" in signed_in.locator(".badges").inner_text()
    screenshot("sink-never-commits")


def test_an_unknown_connector_is_a_404_page(signed_in, live_server, screenshot):
    response = signed_in.goto(f"{live_server.url}/clusters/demo/connectors/no-such-connector/")
    assert response.status == 404
    assert "No connector named 'no-such-connector' on demo" in signed_in.inner_text("main")
    screenshot("connector-404")


def test_an_unreachable_broker_shows_the_last_results_with_their_age_and_the_error(
    signed_in, live_server, refreshed_demo, spark, settings, screenshot
):
    settings.KAFKA_READ_TIMEOUT = 1
    refreshed_demo.bootstrap_servers = "127.0.0.1:1"
    refreshed_demo.save()
    failed = run_refresh(cluster=refreshed_demo, spark=spark)
    assert failed.status == RefreshRun.Status.FAILED

    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/")
    alert = signed_in.locator("[data-run='failed']")
    assert "The last refresh failed" in alert.inner_text()
    assert failed.error in alert.inner_text()
    assert re.fullmatch(
        r"\d+(s|m \d\ds|h \d\dm)", alert.locator("[data-field='snapshot-age']").inner_text()
    )
    assert len(rows(signed_in)) == ConnectorSnapshot.objects.count()
    screenshot("broker-unreachable")


def test_refresh_runs_in_the_background_and_the_overview_follows_it(
    signed_in, live_server, refreshed_demo, refresh_history_dir, monkeypatch, screenshot
):
    # The real `manage.py refresh_offsets` process, on this test's database and history.
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{connection.settings_dict['NAME']}")
    monkeypatch.setenv("OFFSETS_HISTORY_PATH", str(refresh_history_dir))
    started = []
    popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(background.subprocess, "Popen", recording_popen)
    if connection.vendor != "sqlite":
        pytest.skip("the refresh process is pointed at the test database by a SQLite path")
    before = RefreshRun.objects.count()
    try:
        signed_in.click("tr[data-cluster='demo'] button:text('Refresh')")
        row = signed_in.locator("tr[data-cluster='demo']")
        assert signed_in.locator("#refresh-notice").inner_text() == "Refresh of demo started."
        assert row.locator("button:text('Refresh')").is_disabled()
        # The cell says "Running" once the refresh has run past the banner's 3 s (live.py).
        row.locator("[data-run='running']").wait_for()
        # Progress moves on without a reload: the phase changes while Spark works.
        signed_in.wait_for_function(
            "() => !document.querySelector(\"tr[data-cluster='demo'] [data-run='running']\")"
            "?.textContent.includes('Running: starting')",
            timeout=120_000,
        )
        screenshot("refresh-running")
        row.locator("[data-run='succeeded']").wait_for(timeout=240_000)
        screenshot("refresh-done")
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait()
    assert len(started) == 1
    assert RefreshRun.objects.count() == before + 1
    run = RefreshRun.objects.latest("started_at")
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert run.pid == started[0].pid  # the refresh process, which the run names as its own
    assert not row.locator("button:text('Refresh')").is_disabled()


def test_key_drift_shows_every_byte_form_with_its_offset(
    signed_in, live_server, refreshed_demo, screenshot
):
    from offsets.models import KeyDrift

    signed_in.goto(f"{live_server.url}/clusters/demo/connectors/http-source-metrics/")
    drift = KeyDrift.objects.get(cluster=refreshed_demo, connector="http-source-metrics")
    table = signed_in.locator("#key-drift")
    assert table.locator("tbody tr").count() == 1
    forms = table.locator("tbody tr td:nth-child(2) > div")
    assert forms.count() == len(drift.forms) == 2
    for index, form in enumerate(drift.forms):
        assert form["key"] in forms.nth(index).inner_text()
    table.scroll_into_view_if_needed()
    screenshot("key-drift")
