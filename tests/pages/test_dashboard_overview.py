"""The clusters overview and starting a refresh from it."""

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from dashboard.pages.clusters import live
from offsets.models import RefreshRun
from offsets.refresh import background
from tests.support import factories as make

pytestmark = pytest.mark.django_db


@pytest.fixture
def launched(monkeypatch):
    """Record refresh launches instead of starting processes."""
    calls = []
    monkeypatch.setattr(background, "_launch", lambda **kwargs: calls.append(kwargs))
    return calls


def test_the_overview_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_htmx_poll_without_a_session_reloads_the_login_page_instead_of_swapping_it_in(client):
    response = client.get(
        "/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/clusters/x/connectors/"
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=%2Fclusters%2Fx%2Fconnectors%2F"


def test_it_shows_counts_by_state_total_sink_lag_and_the_worst_status(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "a")
    make.snapshot(cluster, "b", runtime_state="PAUSED", target_state="PAUSED")
    make.snapshot(cluster, "c", "sink", lag_records=120, lag_status="WARN")
    make.snapshot(cluster, "d", "sink", lag_records=30, runtime_state="FAILED", lag_status="ERR")
    # A sink that never commits is not lagging: its number does not count.
    make.snapshot(cluster, "e", "sink", lag_records=999, offsets_managed_externally=True)
    make.snapshot(cluster, "f", deleted=True, runtime_state="", target_state="")

    html = logged_in_client.get("/").content.decode()

    assert 'data-field="connectors">6<' in html
    assert 'data-state="RUNNING" data-count="3"' in html
    assert 'data-state="PAUSED" data-count="1"' in html
    assert 'data-state="FAILED" data-count="1"' in html
    assert 'data-state="DELETED" data-count="1"' in html
    assert 'data-field="sink-lag">150<' in html
    assert 'data-status="ERR"' in html
    assert 'data-run="succeeded"' in html


def test_it_says_when_a_cluster_was_never_refreshed(logged_in_client):
    make.cluster("new")
    html = logged_in_client.get("/").content.decode()
    assert 'data-run="none"' in html
    assert "No refresh yet" in html


def test_it_shows_a_running_refresh_with_its_progress_and_polls_every_two_seconds(
    logged_in_client,
):
    cluster = make.cluster("prod")
    make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        phase="reading connect-offsets",
        records_read=4200,
        records_by_topic={"connect-offsets": 4000, "connect-status": 200},
    )
    html = logged_in_client.get("/").content.decode()
    assert "Running: reading connect-offsets" in html
    assert "4,200 records read" in html
    assert "<code>connect-offsets</code> 4,000" in html
    assert 'hx-trigger="every 2s"' in html


def test_a_live_loops_short_round_leaves_the_cell_on_the_last_success_like_the_banner(
    logged_in_client,
):
    # A refresh every second: announcing each round made the cell switch between "Running"
    # and "Succeeded" at every poll. Only one running past RUNNING_BANNER_AFTER_SECONDS is.
    cluster = make.cluster("prod")
    make.run(cluster, ago=30, records_read=77)
    running = make.run(cluster, RefreshRun.Status.RUNNING, ago=1, phase="reading connect-offsets")
    cell = logged_in_client.get("/").content.decode().split('data-field="refresh">')[1]
    cell = cell.split("</td>")[0]
    assert 'data-run="succeeded"' in cell and "Succeeded " in cell
    assert "77 records read" in cell and "Running" not in cell
    RefreshRun.objects.filter(pk=running.pk).update(
        started_at=timezone.now() - timedelta(seconds=live.RUNNING_BANNER_AFTER_SECONDS + 1)
    )
    cell = logged_in_client.get("/").content.decode().split('data-field="refresh">')[1]
    assert "Running: reading connect-offsets" in cell.split("</td>")[0]


def test_a_running_refresh_whose_lease_ran_out_is_flagged(logged_in_client):
    cluster = make.cluster("prod")
    run = make.run(
        cluster,
        RefreshRun.Status.RUNNING,
        ago=600,
        heartbeat_at=timezone.now() - timedelta(seconds=3),
        lease_expires_at=timezone.now() + timedelta(seconds=17),
    )
    assert 'data-field="silent"' not in logged_in_client.get("/").content.decode()
    RefreshRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=95),
        lease_expires_at=timezone.now() - timedelta(seconds=75),
    )
    html = logged_in_client.get("/").content.decode()
    assert (
        "No sign of life for 1m 35s: its process may be gone, and the next refresh takes its "
        "cluster over." in html
    )


def test_a_cluster_refreshed_every_second_with_old_results_is_red_not_green(logged_in_client):
    cluster = make.cluster("live", refresh_every_seconds=1)
    make.run(cluster, ago=29 * 60 + 57, seconds=1.5)
    html = logged_in_client.get("/").content.decode()
    assert 'class="run run-stale" data-run="succeeded"' in html
    assert 'data-staleness="stale">Stale: results 29m ' in html
    assert " old; refreshed every 1 s<" in html


def test_a_late_cluster_is_amber_and_a_fresh_one_says_nothing_more(logged_in_client):
    late = make.cluster("late", refresh_every_seconds=20)
    make.run(late, ago=80, seconds=5.0)  # 60 s old, a result expected every 25 s
    fresh = make.cluster("fresh", refresh_every_seconds=60)
    make.run(fresh, ago=30, seconds=5.0)
    html = logged_in_client.get("/").content.decode()
    late_row = html.split('data-cluster="late"')[1].split("</tr>")[0]
    fresh_row = html.split('data-cluster="fresh"')[1].split("</tr>")[0]
    assert 'class="run run-late"' in late_row
    assert 'data-staleness="late">Late: results 1m ' in late_row
    assert " old; refreshed every 20 s<" in late_row
    assert 'class="run run-succeeded"' in fresh_row
    assert "data-staleness" not in fresh_row


def test_a_cluster_refreshed_by_hand_turns_red_only_after_the_global_cut_off(
    logged_in_client, settings
):
    settings.SNAPSHOT_STALE_SECONDS = 1800
    cluster = make.cluster("manual", refresh_every_seconds=0)
    run = make.run(cluster, ago=1200)
    assert "data-staleness" not in logged_in_client.get("/").content.decode()
    RefreshRun.objects.filter(pk=run.pk).update(
        finished_at=timezone.now() - timedelta(seconds=3600)
    )
    html = logged_in_client.get("/").content.decode()
    assert 'data-staleness="stale">Stale: results 1h 00m old; refreshed by hand<' in html


def test_it_shows_a_failed_refresh_with_its_error(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster, ago=600)
    make.run(cluster, RefreshRun.Status.FAILED, ago=30, error="Kafka did not answer in 10 s")
    html = logged_in_client.get("/").content.decode()
    assert 'data-run="failed"' in html
    assert "Kafka did not answer in 10 s" in html
    assert 'hx-trigger="every 15s"' in html


def test_an_htmx_poll_gets_only_the_clusters_partial(logged_in_client):
    make.cluster("prod")
    response = logged_in_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="clusters")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="clusters"')
    assert "<html" not in html


def test_it_makes_the_same_few_queries_for_one_cluster_or_twenty(
    logged_in_client, django_assert_max_num_queries
):
    for index in range(20):
        cluster = make.cluster(f"c{index}")
        make.run(cluster, ago=100)
        make.run(cluster, RefreshRun.Status.FAILED, ago=10, error="down")
        for name in ("a", "b", "c"):
            make.snapshot(cluster, name)
    # Session, user, permissions (2), clusters, their runs, their connectors by state.
    with django_assert_max_num_queries(7):
        response = logged_in_client.get("/")
    assert response.content.decode().count('data-run="failed"') == 20


def test_the_refresh_button_is_shown_only_to_users_who_may_refresh(client, user, operator):
    make.cluster("prod")
    client.force_login(user)
    assert b">Refresh</button>" not in client.get("/").content
    client.force_login(operator)
    assert b">Refresh</button>" in client.get("/").content


# -------------------------------------------------------------------------------------------
# Starting a refresh.


def test_starting_a_refresh_requires_login(client, launched):
    make.cluster("prod")
    response = client.post("/clusters/prod/refreshes/")
    assert response.status_code == 302
    assert not launched


def test_starting_a_refresh_without_the_permission_is_forbidden(logged_in_client, launched):
    make.cluster("prod")
    response = logged_in_client.post("/clusters/prod/refreshes/")
    assert response.status_code == 403
    assert b"needs the refresh operator role" in response.content
    assert not launched
    assert not RefreshRun.objects.exists()


def test_starting_a_refresh_of_an_unknown_cluster_is_404(operator_client, launched):
    assert operator_client.post("/clusters/nope/refreshes/").status_code == 404
    assert not launched


def test_starting_a_refresh_needs_a_post(operator_client):
    make.cluster("prod")
    assert operator_client.get("/clusters/prod/refreshes/").status_code == 405


def test_an_htmx_start_returns_the_overview_with_the_run_in_progress(operator_client, launched):
    cluster = make.cluster("prod")
    response = operator_client.post(
        "/clusters/prod/refreshes/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="clusters"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="clusters"')
    assert "Refresh of prod started." in html
    assert "Running: starting" in html
    assert 'hx-trigger="every 2s"' in html
    run = RefreshRun.objects.get()
    assert run.status == RefreshRun.Status.RUNNING
    assert launched == [{"cluster": cluster, "run": run, "full": False}]


def test_a_second_start_while_one_runs_says_so_and_launches_nothing(operator_client, launched):
    cluster = make.cluster("prod")
    make.run(cluster, RefreshRun.Status.RUNNING, phase="reading connect-offsets")
    response = operator_client.post("/clusters/prod/refreshes/", HTTP_HX_REQUEST="true")
    assert "A refresh of prod is already running" in response.content.decode()
    assert "reading connect-offsets" in response.content.decode()
    assert not launched
    assert RefreshRun.objects.count() == 1


def test_without_htmx_it_redirects_back_with_a_message(operator_client, launched):
    make.cluster("prod")
    response = operator_client.post(
        "/clusters/prod/refreshes/", {"next": "/clusters/prod/connectors/?sort=-lag_ms"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/clusters/prod/connectors/?sort=-lag_ms"
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Refresh of prod started."]


def test_a_next_url_on_another_host_is_ignored(operator_client, launched):
    make.cluster("prod")
    response = operator_client.post("/clusters/prod/refreshes/", {"next": "https://evil.example/"})
    assert response["Location"] == "/"


def test_a_cluster_whose_only_failure_is_a_task_counts_it_as_failed(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "a")
    make.snapshot(cluster, "b", task_states={"0": "FAILED", "1": "RUNNING", "2": "FAILED"})
    # A deleted connector's last task states do not count.
    make.snapshot(cluster, "c", deleted=True, runtime_state="", task_states={"0": "FAILED"})

    html = logged_in_client.get("/").content.decode()

    assert 'data-state="RUNNING" data-count="1"' in html
    assert 'data-state="FAILED" data-count="1"' in html
    failed = html.split('data-field="failed-tasks"')[1].split("</a>")[0]
    assert 'href="/clusters/prod/connectors/?state=FAILED">2 tasks FAILED' in failed
    [summary] = logged_in_client.get("/api/v1/clusters/").json()
    assert summary["counts_by_state"] == {"RUNNING": 1, "FAILED": 1, "DELETED": 1}
    assert summary["failed_tasks"] == 2
