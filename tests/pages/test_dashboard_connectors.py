"""The connectors list of a cluster, from the last refresh."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from dashboard.pages import statuses
from offsets.models import ConnectorSnapshot, RefreshRun
from tests.support import factories as make

pytestmark = pytest.mark.django_db

URL = "/clusters/prod/connectors/"


def names(html: str) -> list[str]:
    return re.findall(r'<tr data-connector="([^"]+)"', html)


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "alpha-source", partitions=12, malformed=3)
    make.snapshot(
        cluster,
        "beta-sink",
        "sink",
        partitions=4,
        lag_records=500,
        lag_ms=7_200_000,
        lag_status="ERR",
    )
    make.snapshot(
        cluster, "gamma-sink", "sink", partitions=2, lag_records=5, lag_ms=1_000, lag_status="WARN"
    )
    make.snapshot(cluster, "delta-paused", runtime_state="PAUSED", target_state="PAUSED")
    make.snapshot(cluster, "mm2-source", mirrormaker2=True, stalled_partitions=1, lag_status="ERR")
    make.snapshot(cluster, "eos-source", own_offsets_topic="connect-offsets-eos")
    make.snapshot(cluster, "bq-sink", "sink", offsets_managed_externally=True, lag_records=None)
    make.snapshot(
        cluster, "old-source", deleted=True, runtime_state="", target_state="", task_count=None
    )
    make.sink_lags(cluster, "beta-sink", "orders", 2, status="STOP")
    return cluster


def test_the_list_requires_login(client, prod):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_unknown_cluster_is_a_404_page(logged_in_client):
    response = logged_in_client.get("/clusters/nope/connectors/")
    assert response.status_code == 404
    assert b"Not found" in response.content


def test_it_lists_every_connector_with_its_columns_and_badges(logged_in_client, prod):
    html = logged_in_client.get(URL + "?sort=name").content.decode()
    assert names(html) == [
        "alpha-source",
        "beta-sink",
        "bq-sink",
        "delta-paused",
        "eos-source",
        "gamma-sink",
        "mm2-source",
        "old-source",
    ]
    row = html.split('data-connector="beta-sink"')[1].split("</tr>")[0]
    assert 'data-field="type">sink<' in row
    assert 'data-field="partitions">4<' in row
    assert 'data-field="lag-records">500<' in row
    assert 'data-field="lag-ms">2h 00m<' in row
    assert 'data-status="ERR"' in row and 'data-reason="STOP"' in row
    assert "STARTED" in row and "RUNNING" in row
    # A consumer group keeps no commit times: a sink without a move seen has none yet.
    assert 'data-field="last-commit"><span class="muted">no commit yet</span>' in row
    assert "own offsets topic (exactly-once)" in html.split('data-connector="eos-source"')[1]
    assert "MirrorMaker 2" in html.split('data-connector="mm2-source"')[1].split("</tr>")[0]
    assert "offsets managed outside Connect" in html.split('data-connector="bq-sink"')[1]
    assert "deleted (offsets remain)" in html.split('data-connector="old-source"')[1]
    malformed = html.split('data-connector="alpha-source"')[1].split("</tr>")[0]
    assert 'data-field="malformed"><span class="warn">3<' in malformed


def test_a_sink_that_manages_its_offsets_outside_connect_shows_no_lag(logged_in_client, prod):
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="bq-sink"')[1].split("</tr>")[0]
    assert 'data-field="lag-records"><span class="muted">' in row
    assert 'data-field="last-commit"><span class="muted">\u2013</span>' in row


def test_a_sinks_last_commit_is_when_a_refresh_saw_its_offsets_move(logged_in_client, prod):
    moved = timezone.now() - timedelta(minutes=4, seconds=10)
    ConnectorSnapshot.objects.filter(cluster=prod, name="gamma-sink").update(
        last_commit_at=moved, last_commit_seen=True
    )
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="gamma-sink"')[1].split("</tr>")[0]
    cell = row.split('data-field="last-commit">')[1].split("</td>")[0]
    assert ">moved</span>" in cell and "4m 1" in cell
    assert f'title="{escape(statuses.SINK_LAST_COMMIT)}"' in cell


def test_a_sinks_first_read_is_not_worded_as_a_move(logged_in_client, prod):
    """Offsets no refresh saw move are as the first read found them: no move is implied."""
    read = timezone.now() - timedelta(minutes=4, seconds=10)
    ConnectorSnapshot.objects.filter(cluster=prod, name="gamma-sink").update(
        last_commit_at=read, last_commit_seen=False
    )
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="gamma-sink"')[1].split("</tr>")[0]
    cell = row.split('data-field="last-commit">')[1].split("</td>")[0]
    assert ">unchanged since first read</span>" in cell and "4m 1" in cell
    assert ">moved<" not in cell
    assert f'title="{escape(statuses.SINK_FIRST_READ)}"' in cell
    page = logged_in_client.get(f"/clusters/{prod.name}/connectors/gamma-sink/").content.decode()
    strip = page.split('data-field="last-commit">')[1].split("</dd>")[0]
    assert f"unchanged since at least {read:%H:%M:%S} UTC" in strip and "moved" not in strip
    body = logged_in_client.get(f"/api/v1/clusters/{prod.name}/connectors/gamma-sink/").json()
    assert body["last_commit_basis"] == "first read"


def test_a_running_connector_with_a_failed_task_says_so_in_the_list(logged_in_client, prod):
    # Connect keeps a connector RUNNING when one of its tasks fails.
    make.snapshot(prod, "half-failed", task_states={"0": "RUNNING", "1": "FAILED"}, task_count=2)
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="half-failed"')[1].split("</tr>")[0]
    assert '<span class="state state-failed">1 task FAILED</span>' in row
    healthy = html.split('data-connector="alpha-source"')[1].split("</tr>")[0]
    assert "FAILED" not in healthy


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?sort=-lag_records", ["beta-sink", "gamma-sink"]),
        ("?sort=-status", ["beta-sink", "mm2-source", "gamma-sink"]),
        ("?sort=-partitions", ["alpha-source", "beta-sink"]),
        ("?type=sink&sort=name", ["beta-sink", "bq-sink", "gamma-sink"]),
        ("?type=sink", ["beta-sink", "gamma-sink", "bq-sink"]),
        ("?state=PAUSED", ["delta-paused"]),
        ("?state=DELETED", ["old-source"]),
        ("?status=ERR", ["beta-sink", "mm2-source"]),
        ("?status=WARN", ["gamma-sink"]),
        ("?status=STOP", ["beta-sink"]),
        ("?status=STALL", ["mm2-source"]),
        ("?q=SOURCE&sort=name", ["alpha-source", "eos-source", "mm2-source", "old-source"]),
        ("?q=SOURCE", ["mm2-source", "alpha-source", "eos-source", "old-source"]),
        ("?q=sink&type=sink&sort=-name", ["gamma-sink", "bq-sink", "beta-sink"]),
    ],
)
def test_it_sorts_filters_and_searches(logged_in_client, prod, query, expected):
    found = names(logged_in_client.get(URL + query).content.decode())
    assert found[: len(expected)] == expected
    if "sort" not in query:
        assert found == expected


def test_sort_links_keep_the_filters_and_toggle_the_direction(logged_in_client, prod):
    html = logged_in_client.get(URL + "?type=sink&sort=lag_records&page=1").content.decode()
    assert (
        'href="?type=sink&amp;sort=-lag_records" hx-get="?type=sink&amp;sort=-lag_records"' in html
    )
    assert 'aria-sort="ascending"' in html
    assert '<input type="hidden" form="filters" name="sort" value="lag_records">' in html


def test_the_table_polls_its_own_url_so_sort_and_filters_survive(logged_in_client, prod):
    html = logged_in_client.get(URL + "?type=sink&sort=-lag_ms").content.decode()
    assert (
        '<div id="connectors-table" hx-get="?type=sink&amp;sort=-lag_ms" hx-trigger="every 15s"'
        in html
    )


def test_an_htmx_request_gets_only_the_table(logged_in_client, prod):
    response = logged_in_client.get(
        URL + "?type=sink&sort=-lag_ms", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="connectors-table"
    )
    html = response.content.decode()
    assert html.lstrip().startswith(
        '<div id="connectors-table" hx-get="?type=sink&amp;sort=-lag_ms"'
    )
    assert "<html" not in html and 'id="filters"' not in html
    assert names(html) == ["beta-sink", "gamma-sink", "bq-sink"]


def test_a_bad_filter_value_is_a_400_that_says_which(logged_in_client, prod):
    response = logged_in_client.get(URL + "?sort=password&status=PANIC")
    assert response.status_code == 400
    html = response.content.decode()
    assert "sort: Select a valid choice." in html
    assert "status: Select a valid choice." in html


def test_no_refresh_yet_is_said_plainly(logged_in_client):
    make.cluster("prod")
    html = logged_in_client.get(URL).content.decode()
    assert "No refresh yet." in html
    assert "manage.py refresh_offsets --cluster prod" in html
    assert 'id="connectors"' not in html


def test_a_failed_refresh_shows_its_error_and_the_age_of_the_results_on_show(
    logged_in_client, prod
):
    make.run(
        prod, RefreshRun.Status.FAILED, ago=5, error="KafkaUnavailable: 127.0.0.1:1 did not answer"
    )
    html = logged_in_client.get(URL).content.decode()
    assert "The last refresh failed" in html
    assert "KafkaUnavailable: 127.0.0.1:1 did not answer" in html
    assert "Showing the results of the last successful refresh" in html
    assert re.search(r'data-field="snapshot-age">\d+s<', html)
    assert len(names(html)) == 8


def test_a_failed_first_refresh_says_there_is_nothing_to_show(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster, RefreshRun.Status.FAILED, error="broker down")
    html = logged_in_client.get(URL).content.decode()
    assert "broker down" in html
    assert "There are no earlier results to show." in html


def test_old_results_are_marked_stale(logged_in_client, prod, settings):
    # Refreshed by hand: no period to judge against, the global cut-off decides.
    prod.refresh_every_seconds = 0
    prod.save()
    settings.SNAPSHOT_STALE_SECONDS = 30
    html = logged_in_client.get(URL).content.decode()
    assert 'data-run="stale"' in html


def test_a_scheduled_cluster_is_judged_by_its_own_period_not_the_global_cut_off(
    logged_in_client, prod, settings
):
    settings.SNAPSHOT_STALE_SECONDS = 30
    settings.READY_REFRESH_PERIODS = 3
    # The results are 40 s old; the last refresh took 5 s.
    RefreshRun.objects.filter(cluster=prod).update(seconds=5.0)
    prod.refresh_every_seconds = 600
    prod.save()
    assert 'data-run="fresh"' in logged_in_client.get(URL).content.decode()
    prod.refresh_every_seconds = 10  # a result expected every 15 s: 40 s is late
    prod.save()
    html = logged_in_client.get(URL).content.decode()
    assert 'data-run="late"' in html
    assert "prod is refreshed every 10 s." in html
    settings.READY_REFRESH_PERIODS = 2  # stale past two gaps (30 s)
    html = logged_in_client.get(URL).content.decode()
    assert 'data-run="stale"' in html
    assert "though prod is refreshed every 10 s." in html


def test_a_running_refresh_is_announced_and_the_table_polls_faster(logged_in_client, prod):
    make.run(prod, RefreshRun.Status.RUNNING, ago=3, phase="reading sink groups")
    html = logged_in_client.get(URL).content.decode()
    assert "A refresh is running: reading sink groups" in html
    assert 'hx-trigger="every 2s"' in html


def test_nothing_matching_is_not_confused_with_no_refresh(logged_in_client, prod):
    html = logged_in_client.get(URL + "?q=zzz").content.decode()
    assert "No connector matches “zzz”." in html


def test_it_pages_a_thousand_connectors_with_a_fixed_number_of_queries(
    logged_in_client, django_assert_max_num_queries
):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.ConnectorSnapshot.objects.bulk_create(
        make.ConnectorSnapshot(
            cluster=cluster,
            name=f"bulk-{index:04d}",
            type="sink" if index % 2 else "source",
            lag_status="OK",
            updated_at=make.now(),
        )
        for index in range(1000)
    )
    # Session, user, cluster, last refresh, permissions (2), count, page, sink statuses.
    with django_assert_max_num_queries(9):
        html = logged_in_client.get(URL + "?page=3&sort=-name").content.decode()
    assert len(names(html)) == 50
    assert names(html)[0] == "bulk-0899"
    assert "page 3 of 20" in html


def test_each_connector_links_to_its_offset_edits_and_export(logged_in_client, prod):
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="beta-sink"')[1].split("</tr>")[0]
    assert 'href="/clusters/prod/connectors/beta-sink/edits/"' in row
    assert 'href="/clusters/prod/export/?connector=beta-sink"' in row
    assert 'href="/clusters/prod/edits/"' in html


def test_the_failed_state_filter_matches_a_connector_whose_task_failed(logged_in_client, prod):
    make.snapshot(
        prod,
        "half-failed",
        task_states={"0": "RUNNING", "1": "FAILED"},
        task_details={"1": {"worker_id": "w2:8083", "trace": "E: <b>boom</b>\n\tat X"}},
        task_count=2,
    )
    make.snapshot(prod, "all-failed", runtime_state="FAILED", task_states={"0": "FAILED"})
    make.snapshot(prod, "gone-failed", deleted=True, task_states={"0": "FAILED"})
    html = logged_in_client.get(URL + "?state=FAILED").content.decode()
    assert names(html) == ["all-failed", "half-failed"]
    row = html.split('data-connector="half-failed"')[1].split("</tr>")[0]
    # The first line of the failed task's trace as a tooltip, escaped.
    assert 'title="E: &lt;b&gt;boom&lt;/b&gt;">1 task FAILED</span>' in row


def test_a_sink_with_no_commit_yet_shows_its_lag_and_says_why(logged_in_client, prod):
    make.snapshot(
        prod,
        "new-sink",
        "sink",
        lag_records=7,
        lag_ms=3_000,
        lag_status="ERR",
        uncommitted_partitions=1,
    )
    make.sink_lags(prod, "new-sink", "orders", 1, committed=None, lag_records=7, status="STOP")
    html = logged_in_client.get(URL).content.decode()
    row = html.split('data-connector="new-sink"')[1].split("</tr>")[0]
    assert 'data-field="lag-records">7<' in row
    assert 'data-status="ERR"' in row
    assert 'data-reason="STOP"' in row and 'data-reason="no commit yet"' in row
    assert "offsets managed outside Connect" not in row
