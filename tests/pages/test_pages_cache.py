"""The pages cache their refresh-derived tables and charts until the next refresh finishes.

Rows are changed in the database directly (what a refresh's save does), so each test shows
both halves: without a newly finished run the page keeps what it showed (it is cached), and
once a run finishes the very next request shows the new numbers.
"""

import re

import pytest

from offsets.models import CommitBucket, ConnectorSnapshot, RefreshRun, SourceOffset
from tests.support import factories as make

pytestmark = pytest.mark.django_db

LIST = "/clusters/prod/connectors/"
SOURCE = "/clusters/prod/connectors/jdbc/"
SINK = "/clusters/prod/connectors/s3/"
HTMX_TABLE = {"HX-Request": "true", "HX-Target": "connectors-table"}
HTMX_PARTITIONS = {"HX-Request": "true", "HX-Target": "partitions"}
HTMX_PROGRESS = {"HX-Request": "true", "HX-Target": "progress"}


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster, ago=600)
    for index in range(60):
        make.snapshot(cluster, f"sink-{index:02d}", "sink", lag_records=index)
    make.snapshot(cluster, "jdbc", partitions=70)
    offsets = make.source_offsets(cluster, "jdbc", 70)
    make.rewind(cluster, offsets[0], kafka_offset=7)
    make.commit_buckets(cluster, "jdbc", 10)
    make.snapshot(cluster, "s3", "sink")
    make.lag_samples(cluster, "s3", "orders", 2, 10)
    return cluster


def finish_run(cluster) -> RefreshRun:
    """A refresh finishing after the one the pages were cached from."""
    return make.run(cluster, ago=1)


def names(html: str) -> list[str]:
    return re.findall(r'<tr data-connector="([^"]+)"', html)


def field(html: str, name: str) -> str:
    return re.search(rf'data-field="{name}">([^<]*)<', html).group(1)


def rewind_rows(html: str) -> int:
    if 'id="rewinds"' not in html:
        return 0
    return html.split('id="rewinds"')[1].split("</table>")[0].count("<tr><td>")


def get(client, url: str, headers: dict | None = None) -> str:
    response = client.get(url, headers=headers or {})
    assert response.status_code == 200
    return response.content.decode()


def test_the_connectors_list_shows_a_new_run_on_the_next_request(logged_in_client, prod):
    before = get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE)
    assert names(before)[0] == "sink-59"
    ConnectorSnapshot.objects.filter(cluster=prod, name="sink-03").update(lag_records=10_000)
    make.snapshot(prod, "aaa-new", "sink", lag_records=0)

    cached = get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE)
    assert names(cached) == names(before)

    # A running refresh has not replaced the results yet: still the cached page.
    make.run(prod, RefreshRun.Status.RUNNING, ago=2)
    assert names(get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE)) == names(before)

    finish_run(prod)
    after = get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE)
    assert names(after)[0] == "sink-03"
    assert "aaa-new" in names(get(logged_in_client, LIST, HTMX_TABLE))


def test_the_partitions_table_shows_a_new_run_on_the_next_request(logged_in_client, prod):
    before = get(logged_in_client, f"{SOURCE}?page=2", HTMX_PARTITIONS)
    assert "page 2 of 2" in before
    make.source_offsets(prod, "jdbc", 130, topic="connect-offsets-eos")
    SourceOffset.objects.filter(cluster=prod, identity='{"table":"table_00060"}').update(
        commits=424_242
    )

    assert get(logged_in_client, f"{SOURCE}?page=2", HTMX_PARTITIONS) == before

    finish_run(prod)
    after = get(logged_in_client, f"{SOURCE}?page=2", HTMX_PARTITIONS)
    assert "page 2 of 4" in after
    # 200 rows sorted by identity: each identity twice now, so page 2 starts at table_00025.
    assert "table_00025" in after


def test_the_charts_and_rewinds_show_a_new_run_on_the_next_request(logged_in_client, prod):
    before = get(logged_in_client, SOURCE)
    assert re.search(r"10 points? · commits", before)
    make.commit_buckets(prod, "other", 1)
    CommitBucket.objects.filter(cluster=prod, connector="jdbc").first().delete()
    offsets = list(SourceOffset.objects.filter(cluster=prod, connector="jdbc")[:3])
    for offset in offsets[1:]:
        make.rewind(prod, offset, kafka_offset=9)

    cached = get(logged_in_client, SOURCE)
    assert re.search(r"10 points? · commits", cached)
    assert rewind_rows(cached) == rewind_rows(before) == 1

    finish_run(prod)
    after = get(logged_in_client, SOURCE)
    assert re.search(r"9 points? · commits", after)
    assert rewind_rows(after) == 3


def test_the_lag_charts_show_a_new_run_on_the_next_request(logged_in_client, prod):
    before = get(logged_in_client, SINK)
    assert re.search(r"10 points · records", before)
    make.lag_samples(prod, "s3", "payments", 1, 15)

    assert re.search(r"10 points · records", get(logged_in_client, SINK))

    finish_run(prod)
    # 15 samples at times of their own beside the 10 there were.
    assert re.search(r"25 points · records", get(logged_in_client, SINK))


def test_the_progress_chart_shows_a_new_run_on_the_next_request(
    logged_in_client, prod, partition_history
):
    partition_history.points.extend(make.history(20, rewind_at=10))
    before = get(logged_in_client, SOURCE, HTMX_PROGRESS)
    assert "20 points" in before
    partition_history.points.extend(make.history(5))

    assert "20 points" in get(logged_in_client, SOURCE, HTMX_PROGRESS)
    assert len(partition_history.calls) == 1

    finish_run(prod)
    assert "25 points" in get(logged_in_client, SOURCE, HTMX_PROGRESS)


def test_the_cached_rows_write_their_ages_at_the_time_of_each_request(
    logged_in_client, prod, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    ConnectorSnapshot.objects.filter(cluster=prod, name="jdbc").update(
        last_commit_at=timezone.now() - timedelta(minutes=5, seconds=30)
    )
    SourceOffset.objects.filter(cluster=prod, connector="jdbc").update(
        last_commit_at=timezone.now() - timedelta(minutes=5, seconds=30)
    )

    def last_commit(html: str, row: str) -> str:
        return re.search(rf"{row}.*?>(\S+ \S+) ago<", html, re.S).group(1)

    table = get(logged_in_client, LIST, HTMX_TABLE)
    partitions = get(logged_in_client, SOURCE, HTMX_PARTITIONS)
    assert last_commit(table, 'data-connector="jdbc"').startswith("5m ")
    assert last_commit(partitions, "<tr data-partition").startswith("5m ")

    later = timezone.now() + timedelta(hours=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    # The same cached rows, an hour older.
    assert last_commit(get(logged_in_client, LIST, HTMX_TABLE), 'data-connector="jdbc"') == (
        "1h 05m"
    )
    assert last_commit(get(logged_in_client, SOURCE, HTMX_PARTITIONS), "<tr data-partition") == (
        "1h 05m"
    )


def test_the_overview_shows_a_new_run_on_the_next_request(logged_in_client, prod):
    other = make.cluster("other")
    make.run(other, ago=300)
    make.snapshot(other, "lonely")
    overview = {"HX-Request": "true", "HX-Target": "clusters"}

    def connectors(html: str, cluster: str) -> str:
        row = html.split(f'data-cluster="{cluster}"')[1]
        return field(row, "connectors")

    before = get(logged_in_client, "/", overview)
    assert connectors(before, "prod") == "62"
    assert connectors(before, "other") == "1"
    make.snapshot(prod, "new-source")
    make.snapshot(other, "second")

    cached = get(logged_in_client, "/", overview)
    assert connectors(cached, "prod") == "62"
    assert connectors(cached, "other") == "1"

    # While a refresh runs the counts are read afresh (the page polls then); the others
    # stay cached. (Running 5 s: past the 3 s under which the cell does not announce it.)
    make.run(prod, RefreshRun.Status.RUNNING, ago=5)
    running = get(logged_in_client, "/", overview)
    assert 'data-run="running"' in running.split('data-cluster="prod"')[1]
    assert connectors(running, "prod") == "63"
    assert connectors(running, "other") == "1"

    finish_run(prod)
    make.run(other, RefreshRun.Status.FAILED, ago=1)
    after = get(logged_in_client, "/", overview)
    assert connectors(after, "prod") == "63"
    # A failed run may have saved results before it failed: it counts as a new run.
    assert connectors(after, "other") == "2"


def test_different_sorts_pages_and_searches_never_share_a_cached_table(logged_in_client, prod):
    by_name = names(get(logged_in_client, LIST, HTMX_TABLE))
    by_lag = names(get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE))
    page_two = names(get(logged_in_client, f"{LIST}?page=2", HTMX_TABLE))
    search = names(get(logged_in_client, f"{LIST}?q=sink-4", HTMX_TABLE))
    sinks = names(get(logged_in_client, f"{LIST}?type=source", HTMX_TABLE))
    assert by_name[:2] == ["jdbc", "s3"]
    assert by_lag[0] == "sink-59"
    assert page_two[0] == "sink-48"
    assert search == [f"sink-4{i}" for i in range(10)]
    assert sinks == ["jdbc"]
    # Asked again (from the cache now), each answers as before.
    assert names(get(logged_in_client, f"{LIST}?page=2", HTMX_TABLE)) == page_two
    assert names(get(logged_in_client, f"{LIST}?sort=-lag_records", HTMX_TABLE)) == by_lag

    first = get(logged_in_client, SOURCE, HTMX_PARTITIONS)
    second = get(logged_in_client, f"{SOURCE}?page=2", HTMX_PARTITIONS)
    found = get(logged_in_client, f"{SOURCE}?q=table_0006", HTMX_PARTITIONS)
    newest = get(logged_in_client, f"{SOURCE}?sort=-partition", HTMX_PARTITIONS)
    assert "table_00000" in first and "table_00050" not in first
    assert "table_00050" in second and "table_00000" not in second
    assert found.count("<tr data-partition") == 10
    assert "table_00069" in newest and "table_00000" not in newest


def test_users_with_different_rights_get_their_own_refresh_button(client, user, operator, prod):
    client.force_login(operator)
    operator_page = get(client, LIST)
    client.force_login(user)
    user_page = get(client, LIST)
    assert ">Refresh</button>" in operator_page
    assert ">Refresh</button>" not in user_page
    # The cached table is the same for both: the rights are not part of it.
    assert names(operator_page) == names(user_page)
