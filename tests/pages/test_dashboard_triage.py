"""The on-call path's first screen: problems first, the worst connector named, statuses
explained, a planned pause shown as such."""

import pytest

from offsets.queries import snapshots
from offsets.queries.snapshots.choices import PROBLEMS, problem_label
from tests.support import factories as make

pytestmark = pytest.mark.django_db

URL = "/clusters/prod/connectors/"


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "a-healthy")
    make.snapshot(
        cluster,
        "b-paused-by-owner",
        "sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        lag_records=40,
        lag_status="ERR",
    )
    make.snapshot(cluster, "c-task-failed", task_states={"0": "RUNNING", "1": "FAILED"})
    make.snapshot(cluster, "d-lag-err", "sink", lag_records=9, lag_status="ERR")
    make.snapshot(cluster, "e-lag-warn", "sink", lag_records=5, lag_status="WARN")
    make.snapshot(cluster, "f-stalled", stalled_partitions=2)
    make.snapshot(cluster, "g-unassigned", runtime_state="UNASSIGNED")
    make.snapshot(cluster, "h-failed", runtime_state="FAILED")
    make.snapshot(cluster, "i-deleted", deleted=True, runtime_state="", target_state="")
    make.snapshot(cluster, "j-never-committed", "sink", uncommitted_partitions=1)
    make.snapshot(cluster, "k-stopped-by-owner", runtime_state="STOPPED", target_state="STOPPED")
    # Paused by its owner, but a task failed: the failure wins.
    make.snapshot(
        cluster,
        "l-paused-but-failed",
        runtime_state="PAUSED",
        target_state="PAUSED",
        task_states={"0": "FAILED"},
    )
    return cluster


PROBLEMS_FIRST = [
    "c-task-failed",
    "h-failed",
    "l-paused-but-failed",  # failed
    "d-lag-err",  # lag ERR (b is paused by its owner: not an error)
    "f-stalled",
    "g-unassigned",  # not running
    "e-lag-warn",
    "j-never-committed",  # lag WARN, or partitions never committed
    "b-paused-by-owner",
    "k-stopped-by-owner",  # paused by their owner
    "a-healthy",
    "i-deleted",
]


def names(rows) -> list[str]:
    return [row.name for row in rows]


def test_problems_first_orders_failures_errors_stalls_then_warnings_pauses_healthy_deleted(prod):
    assert names(snapshots.connectors(cluster=prod, sort="problems")) == PROBLEMS_FIRST


def test_problems_first_reversed_puts_the_healthy_first(prod):
    reverse_ranks = names(snapshots.connectors(cluster=prod, sort="-problems"))
    assert reverse_ranks[:2] == ["i-deleted", "a-healthy"]
    assert reverse_ranks[-3:] == ["c-task-failed", "h-failed", "l-paused-but-failed"]


def test_the_problem_labels_follow_the_order():
    assert [label for label, _ in PROBLEMS] == [
        "failed",
        "lag ERR",
        "stalled",
        "not running",
        "lag WARN",
        "paused by its owner",
    ]
    assert problem_label(0) == "failed"
    assert problem_label(len(PROBLEMS)) == problem_label(None) == ""


def test_the_list_puts_problems_first_by_default_and_still_sorts_by_name(logged_in_client, prod):
    html = logged_in_client.get(URL).content.decode()
    shown = [part.split('"')[0] for part in html.split('<tr data-connector="')[1:]]
    assert shown == PROBLEMS_FIRST
    assert '<strong aria-current="true">problems first</strong>' in html
    assert 'data-order="name">by name</a>' in html
    html = logged_in_client.get(URL + "?sort=name").content.decode()
    shown = [part.split('"')[0] for part in html.split('<tr data-connector="')[1:]]
    assert shown == sorted(PROBLEMS_FIRST)
    assert 'data-order="problems">problems first</a>' in html


def test_the_overview_names_the_worst_connector_and_counts_the_problems(logged_in_client, prod):
    html = logged_in_client.get("/").content.decode()
    row = html.split('data-cluster="prod"')[1].split("</tr>")[0]
    assert 'href="/clusters/prod/connectors/c-task-failed/">c-task-failed</a>' in row
    assert 'data-field="worst-problem">failed<' in row
    assert (
        'data-field="problems" href="/clusters/prod/connectors/">8 connectors with problems<' in row
    )
    assert 'data-field="failed-tasks"' in row  # task failures counted too
    assert 'data-status="ERR"' in row


def test_a_cluster_without_problems_says_so(logged_in_client):
    cluster = make.cluster("calm")
    make.run(cluster)
    make.snapshot(cluster, "fine")
    make.snapshot(cluster, "held", runtime_state="PAUSED", target_state="PAUSED")
    html = logged_in_client.get("/").content.decode()
    assert '<span class="muted" data-field="worst-connector">no problem</span>' in html


def test_the_worst_connector_s_name_is_data_never_markup(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, '<img src=x onerror="alert(1)">', runtime_state="FAILED")
    html = logged_in_client.get("/").content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</a>" in html


def test_a_connector_paused_by_its_owner_shows_paused_not_err_stop(logged_in_client, prod):
    make.sink_lags(prod, "b-paused-by-owner", "orders", 1, status="STOP")
    make.sink_lags(prod, "d-lag-err", "orders", 1, status="STOP")
    html = logged_in_client.get(URL).content.decode()
    paused = html.split('data-connector="b-paused-by-owner"')[1].split("</tr>")[0]
    assert 'data-status="paused"' in paused
    assert 'data-status="ERR"' not in paused and 'data-reason="STOP"' not in paused
    alarm = html.split('data-connector="d-lag-err"')[1].split("</tr>")[0]
    assert 'data-status="ERR"' in alarm and 'data-reason="STOP"' in alarm
    page = logged_in_client.get(URL + "b-paused-by-owner/").content.decode()
    assert 'data-status="paused"' in page.split('data-field="status"')[1].split("</dd>")[0]
    # Its partitions too: stopped by design, not a red STOP.
    row = page.split('data-partition="orders-0"')[1].split("</tr>")[0]
    assert 'data-status="paused"' in row and 'data-status="STOP"' not in row
    alarm_page = logged_in_client.get(URL + "d-lag-err/").content.decode()
    alarm_row = alarm_page.split('data-partition="orders-0"')[1].split("</tr>")[0]
    assert 'data-status="STOP"' in alarm_row


def test_every_status_badge_has_a_title_and_the_pages_share_one_legend(logged_in_client, prod):
    make.sink_lags(prod, "d-lag-err", "orders", 1, status="STOP")
    for url in ("/", URL, URL + "d-lag-err/"):
        html = logged_in_client.get(url).content.decode()
        assert html.count('data-field="status-legend"') == 1, url
        # The legend's own badges sit beside their meaning.
        before, _, after = html.partition('data-field="status-legend"')
        for badge in (before + after.partition("</details>")[2]).split(
            '<span class="status status-'
        )[1:]:
            tag = badge.split(">")[0]
            assert "status-none" in f"status-{tag}" or 'title="' in tag, (url, tag)
    legend = html.split('data-field="status-legend"')[1].split("</details>")[0]
    for name in ("OK", "WARN", "ERR", "STALL", "STOP", "REWIND", "paused"):
        assert f">{name}</span></dt>" in legend
